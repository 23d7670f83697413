"""A stdio test server: slow, noisy, failing and paginated primitives.

Environment knobs: ``MCPKIT_TEST_MAX_LINE`` lowers the stdio line limit.
"""

from __future__ import annotations

import asyncio
import os
import sys

import mcpkit.transports._stdio_main as _stdio_main
from mcpkit import Context, Server, ToolError

if os.environ.get("MCPKIT_TEST_MAX_LINE"):
    _stdio_main.MAX_LINE = int(os.environ["MCPKIT_TEST_MAX_LINE"])

server = Server("mcpkit-testserver", "9.9.9", instructions="A server for tests.", page_size=2)


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def noisy(text: str) -> str:
    """Print to stdout (the Python way and the raw fd way), then answer."""
    print("STRAY-PRINT", text)
    sys.stdout.flush()
    os.write(1, b"STRAY-FD1\n")
    return text.upper()


@server.tool()
def boom() -> str:
    """Raise inside the tool."""
    raise RuntimeError("tool exploded")


@server.tool()
def refuse() -> str:
    """Raise ToolError."""
    raise ToolError("refused on purpose")


@server.tool()
async def whoami(ctx: Context) -> dict:
    """Report what the context says about the request."""
    return {
        "protocolVersion": ctx.protocol_version,
        "clientInfo": ctx.client_info,
        "capabilities": ctx.client_capabilities,
        "progressToken": ctx.progress_token,
    }


@server.tool()
def multiline() -> str:
    """First line of a long description.

    Second paragraph that a one-line listing must not show.
    """
    return "ok"


@server.resource("test://broken")
def broken() -> str:
    """A resource whose handler fails."""
    raise RuntimeError("secret-token-123 leaked?")


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run()
