"""mcpkit's client under test for the official MCP conformance harness (client legs).

Contract (harness @modelcontextprotocol/conformance, see the harness notes, section 6):
  * the mock server URL is the LAST command-line argument;
  * MCP_CONFORMANCE_SCENARIO       the scenario name (dispatch below);
  * MCP_CONFORMANCE_PROTOCOL_VERSION the revision the mock speaks (2026-07-28 here);
  * MCP_CONFORMANCE_CONTEXT        optional JSON with scenario inputs (e.g. http-custom-headers'
                                   `toolCalls`).
Exit status 0 when the scenario's client-side flow ran to the end, non-zero otherwise.

Only mcpkit's public client API is used (``from mcpkit import Client``). Scenarios not known
here get a sensible default: discover, list tools, call every listed tool with stub arguments.

The revision picks the lifecycle: 2026-07-28 pins the stateless wire, 2025-11-25 (and older)
pins the legacy ``initialize`` handshake with sessions.

auth/* scenarios run with ``mcpkit.auth.OAuth``: the mock authorization endpoint redirects
straight back, so the headless ``follow_redirects`` authorizer plays the user; credentials
for the pre-registered, client-credentials, enterprise and workload-identity scenarios come
from MCP_CONFORMANCE_CONTEXT.

Usage: python conformance/client.py [--scenario NAME] <server-url>
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

from mcpkit import Client, __version__

log = logging.getLogger("conformance.client")

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CLIENT_INFO = {"name": "mcpkit-conformance-client", "version": __version__}

#: Stub argument values by JSON Schema type, for tools we call without knowing their semantics.
_STUB_BY_TYPE: dict[str, Any] = {"string": "x", "integer": 0, "number": 0, "boolean": False,
                                 "object": {}, "array": [], "null": None}


class NotImplementedScenario(Exception):
    """A scenario this client deliberately does not handle yet."""


# ---------------------------------------------------------------- handlers for input requests
def elicit(params: Any) -> dict[str, Any]:
    """Accept every form elicitation: schema defaults where given, a stub value otherwise.

    A boolean without a default is answered ``True`` (the harness's MRTR mock asks for a
    ``confirmed`` flag); a URL-mode elicitation is simply accepted.
    """
    schema = params.requestedSchema if isinstance(getattr(params, "requestedSchema", None), dict) else {}
    content: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        if "default" in prop:
            content[name] = prop["default"]
        elif isinstance(prop.get("enum"), list) and prop["enum"]:
            content[name] = prop["enum"][0]
        elif prop.get("type") == "boolean":
            content[name] = True
        elif prop.get("type") in ("string", "integer", "number"):
            content[name] = _STUB_BY_TYPE[prop["type"]]
    if getattr(params, "mode", None) == "url":
        return {"action": "accept"}
    return {"action": "accept", "content": content}


def sample(params: Any) -> dict[str, Any]:
    """A stub sampling answer: declares the capability without calling any model."""
    return {"role": "assistant", "content": {"type": "text", "text": ""}, "model": "conformance-stub"}


#: The lifecycle this run must use, from MCP_CONFORMANCE_PROTOCOL_VERSION (set in main).
MODE = MODERN_VERSION


def make_client(url: str, **kw: Any) -> Client:
    """A Client pinned to this run's era, with every input handler declared."""
    kw.setdefault("elicitation", elicit)
    kw.setdefault("sampling", sample)
    kw.setdefault("roots", [])
    kw.setdefault("client_info", CLIENT_INFO)
    return Client(url, mode=MODE, **kw)


def stub_arguments(input_schema: dict[str, Any]) -> dict[str, Any]:
    """Minimal arguments satisfying a tool inputSchema's ``required`` list."""
    props = input_schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in input_schema.get("required") or []:
        prop = props.get(name) if isinstance(props, dict) else None
        typ = prop.get("type") if isinstance(prop, dict) else None
        out[name] = _STUB_BY_TYPE.get(typ, "x") if isinstance(typ, str) else "x"
    return out


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"MCP_CONFORMANCE_CONTEXT is not JSON: {exc}") from None
    return value if isinstance(value, dict) else {}


async def call_all(client: Client, tools: list[Any]) -> None:
    """Call every tool with stub arguments; one failing call does not stop the others."""
    for tool in tools:
        try:
            result = await client.call_tool(tool.name, stub_arguments(tool.inputSchema))
            log.info("called %s: isError=%s", tool.name, result.isError)
        except Exception as exc:
            log.warning("calling %s failed: %r", tool.name, exc)


# ---------------------------------------------------------------- scenarios
SCENARIOS: dict[str, Any] = {}


def scenario(name: str):
    def register(fn):
        SCENARIOS[name] = fn
        return fn

    return register


@scenario("tools_call")
async def tools_call(url: str) -> None:
    async with make_client(url) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", result.content)


@scenario("request-metadata")
async def request_metadata(url: str) -> None:
    # The mock rejects the very first request with -32022 (supported: [2026-07-28]); the
    # Client re-sends it with a version from `supported`. Every request carries _meta
    # (protocolVersion, clientCapabilities with roots/sampling/elicitation, clientInfo) and
    # the matching MCP-Protocol-Version header.
    async with make_client(url) as client:
        discovered = await client.discover()
        log.info("discovered: %s", discovered.supportedVersions)
        tools = await client.list_tools()
        await call_all(client, tools)


@scenario("sep-2322-client-request-state")
async def mrtr_request_state(url: str) -> None:
    # Client.call_tool drives MRTR: answers inputRequests with the handlers, retries with
    # inputResponses and the byte-exact requestState (none if none was sent), new ids.
    async with make_client(url) as client:
        await client.list_tools()
        for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state",
                     "test_mrtr_no_result_type"):
            result = await client.call_tool(name, {})
            log.info("%s: %s", name, result.content)


@scenario("http-standard-headers")
async def http_standard_headers(url: str) -> None:
    # Exercise every method the scenario watches: Mcp-Method on each POST, Mcp-Name on
    # tools/call, resources/read and prompts/get.
    async with make_client(url) as client:
        await client.discover()
        tools = await client.list_tools()
        await call_all(client, tools)
        for res in await client.list_resources():
            await client.read_resource(res.uri)
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt.name)


@scenario("http-custom-headers")
async def http_custom_headers(url: str) -> None:
    # Replay the harness's toolCalls; the Client mirrors x-mcp-header params into Mcp-Param-*.
    calls = context().get("toolCalls") or []
    async with make_client(url) as client:
        listed = {t.name for t in await client.list_tools()}
        for call in calls:
            name = call.get("name")
            if name not in listed:
                log.warning("skipping %r: not surfaced by list_tools", name)
                continue
            result = await client.call_tool(name, call.get("arguments") or {})
            log.info("%s: %s", name, result.content)


@scenario("http-invalid-tool-headers")
async def http_invalid_tool_headers(url: str) -> None:
    # list_tools leaves out tools with invalid x-mcp-header annotations; call what remains.
    async with make_client(url) as client:
        tools = await client.list_tools()
        log.info("usable tools: %s", [t.name for t in tools])
        await call_all(client, tools)


@scenario("json-schema-ref-no-deref")
async def json_schema_ref_no_deref(url: str) -> None:
    # Listing is the whole test: the client must never fetch a network $ref.
    async with make_client(url) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])


@scenario("json-schema-2020-12-preservation")
async def json_schema_2020_12_preservation(url: str) -> None:
    async with make_client(url) as client:
        tools = await client.list_tools()
        focal = next(t for t in tools if t.name == "json_schema_2020_12_tool")
        await client.call_tool("json_schema_echo", {"schema": focal.inputSchema})


# ---------------------------------------------------------------- skills (SEP-2640)
@scenario("sep-2640-client-no-prefetch")
async def skills_no_prefetch(url: str) -> None:
    # A host builds its registry from the listing alone: no skill file is read.
    async with make_client(url) as client:
        entries = await client.list_skills()
        log.info("skills: %s", [e.uri for e in entries])


async def _load_every_skill(url: str) -> None:
    """List, then load each skill and read its listed files; a skill that fails verification
    is refused (SkillVerificationError) and none of its other files is read."""
    from mcpkit.errors import SkillVerificationError

    async with make_client(url) as client:
        for entry in await client.list_skills():
            try:
                skill = await client.get_skill(entry.uri)
            except SkillVerificationError as exc:
                log.info("refused %s: %s", entry.uri, exc)
                continue
            for uri in skill.files:
                if uri != skill.uri:
                    await skill.read(uri)


for _name in ("sep-2640-client-verify-digest", "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter"):
    SCENARIOS[_name] = _load_every_skill


@scenario("initialize")
async def initialize(url: str) -> None:
    async with make_client(url) as client:
        tools = await client.list_tools()
        log.info("connected (%s %s); tools: %s", client.era, client.legacy_version, [t.name for t in tools])


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str) -> None:
    # The server asks with a schema full of defaults; elicit() accepts with exactly those.
    async with make_client(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("result: %s", result.content)


@scenario("sse-retry")
async def sse_retry(url: str) -> None:
    # The server closes the POST's event stream mid-call; the client resumes it with a GET
    # carrying Last-Event-ID after the advertised retry delay, and gets the result there.
    async with make_client(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        log.info("result: %s", result.content)


#: The Client ID Metadata Document URL the harness expects (auth/basic-cimd).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


async def harness_issuer(url: str) -> str | None:
    """The authorization server the harness registered its client credentials with.

    mcpkit sends a client secret or private key only to the issuer it is bound to
    (``OAuth(issuer=...)``). The pre-registration scenario gives that issuer in its context;
    the client-credentials and enterprise ones do not, so this test client (which trusts
    the harness's mock, as a user trusts their own configuration) reads it once from the
    mock's protected resource metadata, as a person would look it up when configuring.
    """
    import httpx

    from mcpkit.client.oauth._discovery import prm_urls

    async with httpx.AsyncClient(timeout=10.0) as http:
        for candidate in prm_urls(url, None):
            try:
                resp = await http.get(candidate)
                servers = resp.json().get("authorization_servers") if resp.status_code == 200 else None
            except (httpx.HTTPError, ValueError, AttributeError):
                continue
            if isinstance(servers, list) and servers and isinstance(servers[0], str):
                return servers[0]
    return None


async def make_oauth(url: str, name: str) -> Any:
    """The OAuth hook for an auth/* scenario, configured from MCP_CONFORMANCE_CONTEXT."""
    from dataclasses import replace

    from mcpkit.auth import (
        AuthorizationCode,
        ClientCredentials,
        EnterpriseManaged,
        Grant,
        JWTBearer,
        OAuth,
        Registration,
        follow_redirects,
    )

    ctx = context()
    issuer = ctx.get("issuer")
    if not issuer and (ctx.get("client_secret") or ctx.get("private_key_pem")):
        issuer = await harness_issuer(url)
    grant: Grant
    if ctx.get("idp_token_endpoint"):
        grant = EnterpriseManaged(ctx["idp_token_endpoint"], ctx["idp_id_token"], idp_client_id=ctx.get("idp_client_id"))
        registration = Registration(client_id=ctx["client_id"], client_secret=ctx.get("client_secret"), issuer=issuer)
    elif ctx.get("valid_jwt"):
        grant = JWTBearer(assertion=ctx["valid_jwt"])
        registration = Registration(client_id=ctx.get("client_id"), issuer=issuer)
    elif "client-credentials" in name and ctx.get("client_id"):
        grant = ClientCredentials()
        registration = Registration(client_id=ctx["client_id"], client_secret=ctx.get("client_secret"),
                                    private_key=ctx.get("private_key_pem"),
                                    signing_algorithm=ctx.get("signing_algorithm") or "ES256", issuer=issuer)
    else:
        grant = AuthorizationCode(follow_redirects(), redirect_uri=REDIRECT_URI)
        if ctx.get("client_id"):
            registration = Registration(client_id=ctx["client_id"], client_secret=ctx.get("client_secret"), issuer=issuer)
        else:
            registration = Registration(client_metadata_url=CIMD_URL)
    return OAuth(url, grant, registration=replace(registration, client_name="mcpkit-conformance-client"))


async def auth_flow(url: str, name: str) -> None:
    """auth/*: list tools and call each one, authorizing on the way; the first failure ends
    the run (a refused authorization is the expected outcome of several scenarios)."""
    async with make_client(url, auth=await make_oauth(url, name)) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [t.name for t in tools])
        for tool in tools:
            result = await client.call_tool(tool.name, stub_arguments(tool.inputSchema))
            log.info("called %s: isError=%s", tool.name, result.isError)


async def default_flow(url: str) -> None:
    """Unknown scenario: discover (if the server has it), list tools, call each one."""
    async with make_client(url) as client:
        try:
            await client.discover()
        except Exception as exc:
            log.warning("server/discover failed: %r", exc)
        tools = await client.list_tools()
        await call_all(client, tools)


# ---------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = argv[1:]
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(args) >= 3 and args[0] == "--scenario":
        name, args = args[1], args[2:]
    if not args:
        print("usage: client.py [--scenario NAME] <server-url>", file=sys.stderr)
        return 2
    url = args[-1]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or MODERN_VERSION

    global MODE
    if version in LEGACY_VERSIONS:
        MODE = "legacy"
    elif version == MODERN_VERSION:
        MODE = MODERN_VERSION
    else:
        print(f"client.py: unknown protocol version {version!r}", file=sys.stderr)
        return 2

    handler = SCENARIOS.get(name)
    if handler is None and name.startswith("auth/"):
        async def handler(url: str) -> None:
            await auth_flow(url, name)
    elif handler is None:
        log.info("scenario %r has no dedicated handler: running the default flow", name)
        handler = default_flow
    log.info("scenario %r at %s against %s", name, version, url)
    try:
        asyncio.run(handler(url))
    except Exception:
        log.exception("scenario %r failed", name)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
