"""A 2025-11-25-only backend for the proxy's session-pool tests (``mcpkit serve
tests/servers/proxy_sessions.py``): ``whoami`` names the backend session that served the call
(over stdio, one process per session) and the client capabilities it declared at initialize."""

from __future__ import annotations

import os
from typing import Any

from mcpkit import Context, MCPError, Server

server = Server("sessions", "1.0")
CALLS = {"n": 0}


async def legacy_only(ctx: Context, params: Any, call_next: Any) -> Any:
    if ctx.protocol_version.startswith("2026"):
        raise MCPError(-32600, "Bad Request: this server speaks only 2025-11-25 (send initialize)")
    return await call_next(ctx, params)


server.add_middleware(legacy_only)


@server.tool()
def whoami(ctx: Context) -> dict[str, Any]:
    """This session: its process, how many calls it served, the capabilities it declared."""
    CALLS["n"] += 1
    return {"session": os.getpid(), "calls": CALLS["n"], "capabilities": sorted(ctx.client_capabilities or {})}


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the client a question (elicitation)."""
    answer = await ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"{answer.action}:{(answer.content or {}).get('name')}"
