#!/usr/bin/env python3
"""mcpkit "everything" server: the fixtures the official MCP conformance harness calls.

    python conformance/everything_server.py --port 3001     # http://127.0.0.1:3001/mcp

Every tool, resource, resource template, prompt and completion named by the server
scenarios of @modelcontextprotocol/conformance 0.2.0-alpha.12 is registered here (see
the shared harness notes, section 5). Names, texts and payloads follow the official
Python SDK's everything-server so results compare one to one.

Questions to the client (elicitation, sampling, roots) use ctx.elicit()/ctx.sample()/
ctx.list_roots()/ctx.ask(): on the 2026-07-28 wire they answer ``input_required`` (MRTR).
The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663; the unscored ``tasks-*``
scenarios) is installed (``server.use(Tasks())``), with its fixtures ``greet``, ``slow_compute``, ``failing_job``,
``protocol_error_job``, ``confirm_delete``, ``multi_input`` and ``test_tool_with_task``.
The skills extension (``io.modelcontextprotocol/skills``, SEP-2640; the ``sep-2640-skills-*``
scenarios) serves the skill ``pdf-processing`` (a SKILL.md, a reference and a template in
subdirectories) with ``directoryRead``.
Not included: SSE stream closing for ``test_reconnection`` (2025-11-25 server-sse-polling;
mcpkit has no API to close a response stream mid-call).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import sys
from typing import Annotated, Any

from mcpkit import Context, Header, MCPError, Server, ToolError, audio, embedded, image, text, types, user
from mcpkit.extensions.skills import Skills
from mcpkit.extensions.tasks import Tasks

log = logging.getLogger("everything_server")

# Same payloads as the official SDK's everything-server (1x1 PNG, minimal WAV).
TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
TEST_IMAGE = base64.b64decode(TEST_IMAGE_BASE64)
TEST_AUDIO = base64.b64decode(TEST_AUDIO_BASE64)

MISSING_REQUIRED_CLIENT_CAPABILITY = -32021

server = Server("mcp-conformance-test-server", "0.1.0")
server.use(Tasks())

PDF_SKILL = {
    "SKILL.md": (
        "---\n"
        "name: pdf-processing\n"
        "description: Extract, fill, and assemble PDF documents\n"
        "license: Apache-2.0\n"
        "metadata:\n"
        "  version: \"2.1.0\"\n"
        "---\n\n"
        "# PDF processing\n\n"
        "Fill the forms described in `references/FORMS.md`; pick a template from `templates/`.\n"
    ),
    "references/FORMS.md": "# Forms\n\nEvery form field, and how to fill it.\n",
    "templates/invoice.md": "# Invoice\n\nNumber: {number}\n",
}
server.use(Skills(PDF_SKILL, directory_read=True))


# =========================================================================== helpers
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
COLOR_SCHEMA = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
CONTEXT_SCHEMA = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}


def _elicit_request(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def _sample_request(prompt: str, max_tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens}}


def _field(answer: types.ElicitResult, name: str) -> Any:
    """``content[name]`` of an accepted elicitation, else None."""
    if answer.action == "accept" and isinstance(answer.content, dict):
        return answer.content.get(name)
    return None


def _sampled_text(answer: types.CreateMessageResult) -> str:
    blocks = answer.content if isinstance(answer.content, list) else [answer.content]
    return next((b.text for b in blocks if isinstance(b, types.TextContent)), "?")


# =========================================================================== tools: content
@server.tool()
def test_simple_text() -> str:
    """Tests simple text content response"""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> types.ImageContent:
    """Tests image content response"""
    return image(TEST_IMAGE, "image/png")


@server.tool()
def test_audio_content() -> types.AudioContent:
    """Tests audio content response"""
    return audio(TEST_AUDIO, "audio/wav")


@server.tool()
def test_embedded_resource() -> types.EmbeddedResource:
    """Tests embedded resource content response"""
    return embedded("test://embedded-resource", "This is an embedded resource content.", "text/plain")


@server.tool()
def test_multiple_content_types() -> list[types.TextContent | types.ImageContent | types.EmbeddedResource]:
    """Tests response with multiple content types (text, image, resource)"""
    return [
        text("Multiple content types test:"),
        image(TEST_IMAGE, "image/png"),
        embedded("test://mixed-content-resource", '{"test": "data", "value": 123}', "application/json"),
    ]


@server.tool()
def test_error_handling() -> str:
    """Tests error response handling"""
    raise ToolError("This tool intentionally returns an error for testing")


# =========================================================================== tools: notifications
@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications"""
    await ctx.report_progress(0, 100, "Completed step 0 of 100")
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100, "Completed step 50 of 100")
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100, "Completed step 100 of 100")
    return str(ctx.progress_token if ctx.progress_token is not None else 0)


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution"""
    # Emitted only when the request's _meta carries io.modelcontextprotocol/logLevel.
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs via notifications/message only if the request set a logLevel (server-stateless diagnostic)"""
    await ctx.info("test_logging_tool: info message")
    await ctx.warning("test_logging_tool: warning message")
    return "Logging tool executed"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user to confirm; on the stateless wire that is an input_required result, never a request on the response stream (server-stateless diagnostic)"""
    answer = await ctx.elicit("Please confirm to continue", CONFIRM_SCHEMA, key="confirm")
    return f"Streaming elicitation finished: action={answer.action}"


# =========================================================================== tools: capabilities, headers
@server.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Requires the client 'sampling' capability; answers -32021 MissingRequiredClientCapability without it"""
    if not ctx.has_capability("sampling"):
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "This tool requires the client 'sampling' capability",
            {"requiredCapabilities": {"sampling": {}}},
        )
    return "Client declared sampling capability; proceeding."


@server.tool()
def test_x_mcp_header(
    region: Annotated[str, "Mirrored into the Mcp-Param-Region header", Header("Region")] = "<none>",
) -> str:
    """Tests SEP-2243 Mcp-Param-* server-side validation (x-mcp-header annotated string parameter)"""
    return f"region={region}"


# =========================================================================== tools: list changes
def _dynamic_tool() -> str:
    """A tool registered and removed by test_trigger_tool_change."""
    return "dynamic"


def _dynamic_prompt() -> str:
    """A prompt registered and removed by test_trigger_prompt_change."""
    return "dynamic"


@server.tool()
async def test_trigger_tool_change() -> str:
    """Mutates the tool list and announces it to subscriptions/listen streams (SEP-2575)"""
    # Registering and removing publish notifications/tools/list_changed to listen streams.
    server.tool(name="test_dynamic_tool")(_dynamic_tool)
    server.remove_tool("test_dynamic_tool")
    return "tool list changed"


@server.tool()
async def test_trigger_prompt_change() -> str:
    """Mutates the prompt list and announces it to subscriptions/listen streams (SEP-2575)"""
    # Registering and removing publish notifications/prompts/list_changed to listen streams.
    server.prompt(name="test_dynamic_prompt", description="dynamic")(_dynamic_prompt)
    server.remove_prompt("test_dynamic_prompt")
    return "prompt list changed"


# =========================================================================== tools: JSON Schema 2020-12
JSON_SCHEMA_2020_12_INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
             input_schema=JSON_SCHEMA_2020_12_INPUT_SCHEMA)
def json_schema_2020_12_tool() -> str:
    """Tests JSON Schema 2020-12 keyword preservation in tools/list."""
    return "json_schema_2020_12_tool"


# =========================================================================== tools: asking the client
# The 2025-11-25 scenarios (tools-call-sampling/-elicitation, elicitation-sep1034-defaults,
# elicitation-sep1330-enums) expect these questions as server-to-client requests; on the
# 2026-07-28 wire the same ctx.sample()/ctx.elicit() calls answer input_required (MRTR).
SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Simple enum without titles",
                           "enum": ["active", "inactive", "pending"]},
        "titledSingle": {"type": "string", "description": "Enum with titled options (oneOf)", "oneOf": [
            {"const": "low", "title": "Low Priority"},
            {"const": "medium", "title": "Medium Priority"},
            {"const": "high", "title": "High Priority"},
        ]},
        "legacyEnum": {"type": "string", "description": "Legacy enum with enumNames",
                       "enum": ["small", "medium", "large"], "enumNames": ["Small Size", "Medium Size", "Large Size"]},
        "untitledMulti": {"type": "array", "description": "Multi-select without titles",
                          "items": {"type": "string", "enum": ["read", "write", "execute"]}},
        "titledMulti": {"type": "array", "description": "Multi-select with titled options", "items": {"anyOf": [
            {"const": "feature", "title": "New Feature"},
            {"const": "bug", "title": "Bug Fix"},
            {"const": "docs", "title": "Documentation"},
        ]}},
    },
    "required": ["untitledSingle", "titledSingle", "legacyEnum", "untitledMulti", "titledMulti"],
}
RESPONSE_SCHEMA = {"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}},
                   "required": ["response"]}


def _content_json(answer: types.ElicitResult) -> str:
    return json.dumps(answer.content) if answer.action == "accept" and isinstance(answer.content, dict) else "{}"


@server.tool()
async def test_sampling(ctx: Context, prompt: str) -> str:
    """Tests server-initiated sampling (LLM completion request)"""
    answer = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {_sampled_text(answer)}"


@server.tool()
async def test_elicitation(ctx: Context, message: str) -> str:
    """Tests server-initiated elicitation (user input request)"""
    answer = await ctx.elicit(message, RESPONSE_SCHEMA)
    return f"User response: action={answer.action}, content={_content_json(answer)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)"""
    answer = await ctx.elicit("Please provide user information", SEP1034_SCHEMA)
    return f"Elicitation result: action={answer.action}, content={_content_json(answer)}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema variations per SEP-1330"""
    answer = await ctx.elicit("Please select values using different enum schema types", SEP1330_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={_content_json(answer)}"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE polling by closing stream mid-call (SEP-1699)"""
    await ctx.info("Before disconnect")
    await asyncio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# =========================================================================== tools: MRTR (SEP-2322)
# ctx.elicit()/ctx.sample()/ctx.list_roots()/ctx.ask() unwind the handler with an
# input_required result; the client's retry (inputResponses + mcpkit's sealed requestState)
# re-runs it from the top and each question finds its answer. Keys match the official
# SDK's everything-server.


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Tests InputRequiredResult with a single elicitation request"""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {_field(answer, 'name') or 'stranger'}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Tests InputRequiredResult with a single sampling request"""
    answer = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"Model said: {_sampled_text(answer)}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Tests InputRequiredResult with a single roots/list request"""
    roots = await ctx.list_roots(key="client_roots")
    return f"Client exposed {len(roots)} root(s)."


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Tests requestState round-tripping in the InputRequiredResult flow"""
    # mcpkit seals every input_required round into a requestState the client must echo.
    await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    return "state-ok: confirmation received"


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Tests InputRequiredResult carrying elicitation, sampling and roots requests together"""
    await ctx.ask({
        "user_name": _elicit_request("What is your name?", NAME_SCHEMA),
        "greeting": _sample_request("Generate a greeting", 50),
        "client_roots": {"method": "roots/list"},
    })
    return "All inputs received."


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Tests a three-round InputRequiredResult flow with evolving requestState"""
    step1 = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    step2 = await ctx.elicit("Step 2: What is your favorite color?", COLOR_SCHEMA, key="step2")
    return f"{_field(step1, 'name')} likes {_field(step2, 'color')}."


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Tests that the server rejects a tampered requestState echo"""
    # A tampered requestState never reaches this handler: mcpkit's sealed state fails
    # verification and the request gets -32602 "Invalid or expired requestState".
    await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    return "state-ok: confirmation received"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Tests that inputRequests only include methods the client declared support for"""
    requests: dict[str, dict[str, Any]] = {}
    if ctx.has_capability("sampling"):
        requests["sample"] = _sample_request("Say hello", 50)
    if ctx.has_capability("elicitation"):
        requests["ask"] = _elicit_request("What is your name?", NAME_SCHEMA)
    if requests:
        await ctx.ask(requests)
    return "Asked only for what the client declared."


# =========================================================================== tools: tasks extension
# The fixtures of the tasks-* scenarios (SEP-2663). "optional" tools run as tasks for clients
# that declare io.modelcontextprotocol/tasks and synchronously for the others; "required"
# ones refuse the others with -32021.
AS_TASK = {Tasks.id: {"support": "optional"}}
TASK_REQUIRED = {Tasks.id: {"support": "required"}}
CONFIRM_DELETE_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@server.tool()
def greet(name: str) -> str:
    """Greets someone by name (synchronous only)"""
    return f"Hello, {name}!"


@server.tool(extensions=AS_TASK)
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleeps for `seconds` seconds, then reports the computation done (runs as a task when the client supports tasks)"""
    await asyncio.sleep(max(0.0, seconds))
    return f"Computed {label or 'result'} in {seconds:g}s"


@server.tool(extensions=TASK_REQUIRED)
async def failing_job() -> str:
    """A job that always fails with a tool execution error after about a second (task required)"""
    await asyncio.sleep(1.0)
    raise ToolError("failing_job failed: simulated tool execution error")


@server.tool(extensions=AS_TASK)
async def protocol_error_job() -> str:
    """A job that fails with a JSON-RPC (protocol-level) error"""
    await asyncio.sleep(0.2)
    raise MCPError(-32603, "protocol_error_job: simulated internal error")


@server.tool(extensions=AS_TASK)
async def confirm_delete(ctx: Context, filename: str) -> str:
    """Asks the user to confirm deleting `filename` (elicitation), then reports the outcome"""
    answer = await ctx.elicit(f"Really delete {filename}?", CONFIRM_DELETE_SCHEMA, key="confirm_delete")
    if _field(answer, "confirm") is True:
        return f"Deleted {filename}"
    return f"Kept {filename} ({answer.action})"


@server.tool(extensions=AS_TASK)
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once (a name and a confirmation), then reports both answers"""
    answers = await ctx.ask({
        "name": _elicit_request("What is your name?", NAME_SCHEMA),
        "confirm": _elicit_request("Confirm?", CONFIRM_DELETE_SCHEMA),
    })
    return f"name={_field(answers['name'], 'name')} confirm={_field(answers['confirm'], 'confirm')}"


@server.tool(extensions={Tasks.id: {"support": "required", "start": "explicit"}})
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for the user's name synchronously (MRTR), then continues as a task and greets them"""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.extension(Tasks).start()
    await asyncio.sleep(0.2)
    return f"Hello, {_field(answer, 'name') or 'stranger'}!"


# =========================================================================== resources
@server.resource("test://static-text", name="static_text_resource", mime_type="text/plain")
def static_text_resource() -> str:
    """A static text resource for testing"""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static_binary_resource", mime_type="image/png")
def static_binary_resource() -> bytes:
    """A static binary resource (image) for testing"""
    return TEST_IMAGE


@server.resource("test://watched-resource", name="watched_resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to for updates"""
    return "Watched resource content"


@server.resource("test://template/{id}/data", name="template_resource", mime_type="application/json")
def template_resource(id: str) -> str:
    """A resource template with parameter substitution"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# =========================================================================== prompts
@server.prompt()
def test_simple_prompt() -> types.PromptMessage:
    """A simple prompt without arguments"""
    return user("This is a simple prompt for testing.")


@server.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, "First test argument"],
    arg2: Annotated[str, "Second test argument"],
) -> types.PromptMessage:
    """A prompt with required arguments"""
    return user(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: Annotated[str, "URI of the resource to embed"]) -> list:
    """A prompt that includes an embedded resource"""
    return [
        user(embedded(resourceUri, "Embedded resource content for testing.", "text/plain")),
        user("Please process the embedded resource above."),
    ]


@server.prompt()
def test_prompt_with_image() -> list:
    """A prompt that includes image content"""
    return [user(image(TEST_IMAGE, "image/png")), user("Please analyze the image above.")]


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> types.PromptMessage:
    """Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"""
    answer = await ctx.elicit("What context should the prompt use?", CONTEXT_SCHEMA, key="user_context")
    return user(f"Use the following context: {_field(answer, 'context') or '?'}")


# =========================================================================== completions
@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_arguments(argument: str, value: str, context: dict[str, str]) -> list[str]:
    """Basic completion support: no suggestions (an empty list is valid)."""
    return []


# =========================================================================== main
def only(era: str) -> None:
    """Serve one era only: ``modern`` turns the initialize handshake off; ``legacy`` refuses
    every 2026-07-28 request (server/discover included) the way a 2025-11-25 server does."""
    if era == "modern":
        server.legacy = False
    elif era == "legacy":
        async def legacy_only(ctx: Context, params: Any, call_next: Any) -> Any:
            if ctx.protocol_version.startswith("2026"):
                raise MCPError(-32600, "Bad Request: this server speaks only 2025-11-25 (send initialize)")
            return await call_next(ctx, params)

        server.add_middleware(legacy_only)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="mcpkit everything-server for the MCP conformance harness")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=3001)
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument("--era", choices=("both", "modern", "legacy"), default="both",
                    help="serve both eras (default), only 2026-07-28 (legacy=False), or only 2025-11-25 "
                         "(a proxy's backend in either era)")
    args = ap.parse_args(argv)
    only(args.era)
    logging.basicConfig(level=getattr(logging, args.log_level.upper(), logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log.info("serving http://%s:%d/mcp", args.host, args.port)
    server.run("http", host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
