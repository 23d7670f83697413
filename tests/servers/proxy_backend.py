"""The backend of the proxy tests: an mcpkit server that speaks only 2026-07-28 (``legacy=False``).

``mcpkit serve [--http] tests/servers/proxy_backend.py``; ``calls`` counts the tool calls it got,
``touch`` publishes a resource update.
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, Server

server = Server("proxied", "3.1.4", legacy=False)
CALLS = {"n": 0}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS["n"] += 1
    return a + b


@server.tool()
def calls() -> int:
    """How many times add ran."""
    return CALLS["n"]


@server.tool()
async def confirm(ctx: Context, what: str) -> str:
    """Ask the user to confirm (elicitation)."""
    answer = await ctx.elicit(f"Really {what}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return f"{answer.action}:{(answer.content or {}).get('ok')}"


@server.tool()
async def slow(ctx: Context, seconds: float) -> str:
    """Sleep, reporting progress."""
    await ctx.report_progress(0, 1, "sleeping")
    await asyncio.sleep(seconds)
    return "slept"


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    return {"a": "alpha"}[name]


@server.tool()
def touch(uri: str) -> str:
    """Tell the streams subscribed to ``uri`` that it changed."""
    server.notify_resource_updated(uri)
    return "touched"
