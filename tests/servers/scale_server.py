"""The server of the scale-out tests (tests/test_scale*.py): run on several workers with Redis.

- ``whoami`` answers the worker's pid (which worker served a request);
- ``save_note`` changes a note and notifies ``resources/updated`` for ``notes://{name}``;
- ``ask_name`` elicits a name: MRTR on 2026-07-28, ``tasks/update`` in a task, a real
  ``elicitation/create`` request on a 2025-11-25 session;
- ``sleepy`` sleeps (a task that runs until cancelled, or killed with its worker).
"""

from __future__ import annotations

import asyncio
import os

from mcpkit import Context, Server
from mcpkit.extensions.tasks import Tasks

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

server = Server("scale-test-server", "1.0.0")
server.use(Tasks(poll_interval_ms=50))
AS_TASK = {Tasks.id: {"support": "optional"}}
NOTES: dict[str, str] = {"groceries": "eggs"}


@server.tool()
def whoami() -> int:
    """The pid of the worker that answers."""
    return os.getpid()


@server.tool()
def save_note(name: str, text: str) -> str:
    """Save a note; subscribers of notes://{name} are told."""
    NOTES[name] = text
    server.notify_resource_updated(f"notes://{name}")
    return f"saved {name}"


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    return NOTES[name]


@server.tool(extensions=AS_TASK)
async def ask_name(ctx: Context) -> str:
    """Asks for a name, then greets from the worker that finished."""
    r = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {r.content['name']}! (from {os.getpid()})" if r.action == "accept" else f"no name ({r.action})"


@server.tool(extensions=AS_TASK)
async def sleepy(seconds: float = 60.0) -> str:
    """Sleeps (a long task)."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g}s in {os.getpid()}"


@server.tool(blocking=True)
def save_note_blocking(name: str, text: str) -> str:
    """save_note, run in a worker thread (its notification is published from that thread)."""
    NOTES[name] = text
    server.notify_resource_updated(f"notes://{name}")
    return f"saved {name}"
