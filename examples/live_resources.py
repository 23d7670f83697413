"""A server whose resources change: a clock resource updated every second, and notes that
tools add and remove (the resource list changes). Clients see the changes through
``subscriptions/listen`` (2026-07-28) or resource subscriptions (2025-11-25).

    mcpkit serve --http examples/live_resources.py
    python examples/live_resources.py --watch           # serves it in-process and listens

With ``--watch`` it runs a client against the server in this process (no transport at all)
and prints each change it is told about.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys

from mcpkit import Client, Server

server = Server("mcpkit-live-resources", "1.0.0")
NOTES: dict[str, str] = {"welcome": "Add notes with add_note; read them as notes://NAME."}
TICKS = {"count": 0}


@server.resource("clock://now", mime_type="text/plain")
def now() -> str:
    """The time of the latest tick (updated every second while someone listens)."""
    return f"tick {TICKS['count']} at {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}"


def _register(name: str) -> None:
    @server.resource(f"notes://{name}", name=name, mime_type="text/plain")
    def read_note() -> str:
        return NOTES[name]


for _name in NOTES:
    _register(_name)


@server.tool()
def add_note(name: str, text: str) -> str:
    """Add (or replace) a note; the resource list changes."""
    existed = name in NOTES
    NOTES[name] = text
    if existed:
        server.notify_resource_updated(f"notes://{name}")
    else:
        _register(name)  # registering at run time notifies listeners of the new list
    return f"notes://{name}"


@server.tool()
def remove_note(name: str) -> bool:
    """Remove a note; the resource list changes."""
    if NOTES.pop(name, None) is None:
        return False
    server.remove_resource(f"notes://{name}")
    return True


async def tick_forever() -> None:
    while True:
        await asyncio.sleep(1.0)
        TICKS["count"] += 1
        server.notify_resource_updated("clock://now")


async def watch() -> None:
    ticker = asyncio.ensure_future(tick_forever())
    async with Client(server) as client:
        async def edit() -> None:
            await asyncio.sleep(1.5)
            await client.call_tool("add_note", {"name": "groceries", "text": "eggs"})
            await asyncio.sleep(1.0)
            await client.call_tool("remove_note", {"name": "groceries"})

        editor = asyncio.ensure_future(edit())
        seen = 0
        async for note in client.listen(resources_list=True, resources=["clock://now"]):
            seen += 1
            if note.uri:
                text = (await client.read_resource(note.uri, cache="bypass")).contents[0]
                print(f"{note.method}: {getattr(text, 'text', '')}")
            else:
                names = [r.uri for r in await client.list_resources(cache="refresh")]
                print(f"{note.method}: now {names}")
            if seen >= 5:
                break
        await editor
    ticker.cancel()


if __name__ == "__main__":
    if "--watch" in sys.argv:
        asyncio.run(watch())
    else:
        server.run()
