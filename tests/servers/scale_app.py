"""The README's Python form of a Redis-backed server, as an ASGI app for any ASGI server:
``uvicorn tests.servers.scale_app:app`` with ``SCALE_REDIS_URL`` set (tests/test_scale.py)."""

from __future__ import annotations

import asyncio
import os

from mcpkit import Server
from mcpkit.backends.redis import RedisBackend
from mcpkit.extensions.tasks import Tasks

redis = RedisBackend(os.environ["SCALE_REDIS_URL"])  # one per process
server = Server("scale-app", "1.0.0", bus=redis.bus, session_store=redis.sessions,
                state_keys=["xlAJXvn1T_S5ghXAp37G1ENCYd4T06SIBrKl3Y4uer0="])
server.use(Tasks(store=redis.task_store))


@server.tool()
def whoami() -> int:
    return os.getpid()


@server.tool()
def save_note(name: str, text: str) -> str:
    server.notify_resource_updated(f"notes://{name}")
    return f"saved {name}"


@server.resource("notes://{name}")
def note(name: str) -> str:
    return name


@server.tool(extensions={Tasks.id: {"support": "optional"}})
async def sleepy(seconds: float = 30.0) -> str:
    await asyncio.sleep(seconds)
    return "slept"


app = server.http_app()
