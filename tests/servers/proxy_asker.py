"""A backend for the proxy's MRTR tests: tools that ask several questions at once, in either
era (``mcpkit serve tests/servers/proxy_asker.py``; the tests also use :func:`build` in process)."""

from __future__ import annotations

from typing import Annotated, Any

from mcpkit import Context, Header, Server

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build(*, legacy: bool = True, state_keys: Any = None) -> Server:
    server = Server("asker", "1.0", legacy=legacy, state_keys=state_keys)

    @server.tool()
    async def three(ctx: Context) -> str:
        """Ask for a name, a sampled greeting and the roots, all at once."""
        got = await ctx.ask({
            "user_name": {"method": "elicitation/create",
                          "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME}},
            "greeting": {"method": "sampling/createMessage",
                         "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
                                    "maxTokens": 5}},
            "client_roots": {"method": "roots/list"},
        })
        return f"{got['user_name'].content['name']}|{got['greeting'].content.text}|{len(got['client_roots'].roots)}"

    @server.tool()
    async def two_rounds(ctx: Context) -> str:
        """Ask a name, then (a second round) a nickname."""
        first = await ctx.elicit("Name?", NAME, key="first")
        second = await ctx.elicit("Nickname?", NAME, key="second")
        return f"{first.content['name']} aka {second.content['name']}"

    @server.tool()
    def where(region: Annotated[str, Header("Region")]) -> str:
        """Mirrors ``region`` into the Mcp-Param-Region header."""
        return region

    return server


server = build()
