"""A test server for the Streamable HTTP tests (tests/test_http*.py).

Served with ``python -m mcpkit serve --http --port PORT tests/servers/http_test_server.py``.
It has a header-annotated tool, a progress tool, a tool that records its own cancellation,
and one tool whose published inputSchema carries an invalid ``x-mcp-header`` annotation.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcpkit import Context, Header, Server, ToolError
from mcpkit.protocol import errors
from tests.helpers.markers import recorded

server = Server("http-test-server", "1.2.3", title="HTTP test server", instructions="For tests only.")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def weather(region: Annotated[str, Header("Region")], count: Annotated[int, Header("Count")] = 1) -> str:
    """A tool whose arguments are mirrored into Mcp-Param-Region / Mcp-Param-Count."""
    return f"{region}:{count}"


@server.tool()
def fail() -> str:
    """Always fails with a tool error (isError result)."""
    raise ToolError("this tool always fails")


@server.tool()
def needs_sampling() -> str:
    """Raises -32021 from inside the handler."""
    raise errors.missing_capability({"sampling": {}})


@server.tool()
async def progress_steps(ctx: Context, steps: int = 3) -> str:
    """Report `steps` progress notifications, then answer."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
        await asyncio.sleep(0.01)
    return f"finished {steps}"


@server.tool()
async def sleepy(ctx: Context, marker: str, seconds: float = 30.0) -> str:
    """Write 'started' to `marker` (and report progress if asked), sleep; on cancellation
    write 'cancelled'."""
    async def sleep() -> str:
        await ctx.report_progress(0, None, "sleeping")
        await asyncio.sleep(seconds)
        return "woke up"

    return await recorded(marker, sleep())


@server.tool()
def bad_header_tool(x: str) -> str:
    """Published with an invalid x-mcp-header annotation (see below)."""
    return x


# Bypass registration validation: publish an annotation that is not an HTTP token.
_schema = dict(server._tools["bad_header_tool"].wire.inputSchema)
_props = {k: dict(v) for k, v in _schema["properties"].items()}
_props["x"]["x-mcp-header"] = "Bad Name"
_schema["properties"] = _props
server._tools["bad_header_tool"].wire.inputSchema = _schema


@server.resource("test://hello", mime_type="text/plain")
def hello() -> str:
    """A static resource."""
    return "hello world"


@server.resource("test://caf\u00e9 menu", mime_type="text/plain")
def cafe() -> str:
    """A resource whose URI needs the Base64 sentinel in Mcp-Name."""
    return "espresso"


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return {"alpha": "first note", "beta": "second note"}[name]


@server.completion(resource="notes://{name}")
def complete_note(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return sorted(n for n in ("alpha", "beta") if n.startswith(value))


@server.prompt(title="Greeting")
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@server.completion(prompt="greet", argument="name")
def complete_greet(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return sorted(n for n in ("alice", "albert", "bob") if n.startswith(value))
