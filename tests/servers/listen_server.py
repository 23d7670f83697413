"""A server for the subscriptions/listen and cancellation tests (tests/test_listen.py).

Serve it with ``python -m mcpkit serve [--http --port P] tests/servers/listen_server.py``.
It has tools, prompts and resources (so every filter field can be honoured), and tools
to introspect and drive the notification bus:

- ``bus_size``: how many listen streams are subscribed right now;
- ``fire``: publish ``count`` rounds of changes (see :data:`CYCLE`);
- ``close_listeners``: end every listen stream gracefully (``server.close_listeners()``);
- ``slow``: report progress every few ms until cancelled, recording what happened in ``marker``.

``tools_only()`` builds a server with nothing but tools (for acknowledgement subsets).
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, Server
from tests.helpers.markers import recorded

#: One round of ``fire``: (kind, uri prefix); ``resource_updated`` URIs get ``/<round>``.
CYCLE = [
    ("tools", None),
    ("prompts", None),
    ("resources", None),
    ("resource_updated", "res://a"),
    ("resource_updated", "res://b"),
]


def publish(server: Server, rounds: int) -> int:
    n = 0
    for i in range(rounds):
        for kind, prefix in CYCLE:
            if kind == "tools":
                server.notify_tools_changed()
            elif kind == "prompts":
                server.notify_prompts_changed()
            elif kind == "resources":
                server.notify_resources_changed()
            else:
                server.notify_resource_updated(f"{prefix}/{i}")
            n += 1
    return n


def _bus_tools(server: Server) -> None:
    @server.tool()
    def bus_size() -> int:
        """How many subscriptions the bus holds."""
        return len(server.bus)

    @server.tool()
    def fire(rounds: int = 1) -> int:
        """Publish ``rounds`` rounds of CYCLE; returns how many changes were published."""
        return publish(server, rounds)

    @server.tool()
    def close_listeners() -> str:
        """End every open listen stream gracefully."""
        server.close_listeners()
        return "closed"

    @server.tool()
    async def slow(ctx: Context, marker: str, ticks: int = 500) -> str:
        """Report progress every 10 ms; write started/cancelled/completed to ``marker``."""
        async def tick() -> str:
            for i in range(ticks):
                await ctx.report_progress(i, ticks, f"tick {i}")
                await asyncio.sleep(0.01)
            return "done"

        return await recorded(marker, tick())


def build() -> Server:
    server = Server("listen-test-server", "1.0.0")
    _bus_tools(server)

    @server.prompt()
    def hello(name: str) -> str:
        """A prompt."""
        return f"Hello {name}"

    @server.resource("res://a/0", mime_type="text/plain")
    def a0() -> str:
        return "a0"

    @server.resource("res://b/{n}", mime_type="text/plain")
    def b(n: int) -> str:
        return f"b{n}"

    return server


server = build()


def tools_only() -> Server:
    s = Server("listen-tools-only", "1.0.0")
    _bus_tools(s)
    return s
