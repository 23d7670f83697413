"""A server for the operating tests (probes, lifespan, request logs, budgets, peers).

Environment: ``OPS_LIFESPAN=1`` gives it a lifespan that writes ``start PID`` / ``stop PID``
lines to the file ``OPS_EVENTS``; ``OPS_FAIL_STARTUP=1`` makes that lifespan fail at startup;
its readiness check ``flag`` fails while the file ``OPS_NOT_READY`` exists.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcpkit import Context, Server

EVENTS = os.environ.get("OPS_EVENTS")


def note(what: str) -> None:
    if EVENTS:
        with open(EVENTS, "a") as f:
            f.write(f"{what} {os.getpid()}\n")


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
    if os.environ.get("OPS_FAIL_STARTUP"):
        raise RuntimeError("the database is unreachable")
    note("start")
    await asyncio.sleep(0)
    yield {"pid": os.getpid(), "pool": "db-pool"}
    await asyncio.sleep(0)
    note("stop")


server = Server("ops", lifespan=lifespan if os.environ.get("OPS_LIFESPAN") else None)


@server.tool()
def whoami(ctx: Context) -> dict[str, Any]:
    """The lifespan's value and the caller's address."""
    return {"lifespan": ctx.lifespan, "peer": ctx.peer}


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        note("slow cancelled")
        raise
    return "done"


@server.tool()
def echo(text: str) -> str:
    return text


@server.tool()
def fail() -> str:
    raise ValueError("boom")


@server.resource("ops://status")
def status() -> str:
    """A resource to subscribe to."""
    return "up"


@server.readiness_check(name="flag")
def flag() -> bool:
    return not os.path.exists(os.environ.get("OPS_NOT_READY", "/nonexistent/flag"))
