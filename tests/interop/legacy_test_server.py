"""A server for the legacy (2025-11-25 ``initialize`` session) tests: tools that log, ask the
client for input (elicitation, sampling, roots), change the tool list at run time and touch
a subscribable resource.

    python tests/interop/legacy_test_server.py                   # stdio
    python tests/interop/legacy_test_server.py --http PORT [--max-sessions N] [--idle SECONDS]

Over HTTP it serves ``server.http_app(max_sessions=..., session_idle_timeout=...)`` on
127.0.0.1 with uvicorn; the ``session_count`` tool reports how many legacy sessions the
endpoint holds (so tests can see that rejected handshakes leave nothing behind).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from mcpkit import Context, Server

server = Server("mcpkit-legacy-test", "2.5.0", instructions="Legacy session tests.")

#: The ASGI app when serving HTTP (None on stdio).
APP: Any = None
COUNTER = {"value": 0}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def log_steps(ctx: Context, steps: int = 3) -> str:
    """Send one info log message per step (when the session's log level allows), then answer."""
    for i in range(1, steps + 1):
        await ctx.debug(f"debug {i}")
        await ctx.info(f"step {i} of {steps}")
    return f"logged {steps}"


@server.tool()
async def ask_name(ctx: Context) -> dict:
    """Elicit a name from the user (a real elicitation/create request on legacy sessions)."""
    answer = await ctx.elicit("What is your name?", {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    return {"action": answer.action, "content": answer.content if isinstance(answer.content, dict) else None}


@server.tool()
async def ask_model(ctx: Context, prompt: str) -> str:
    """Sample the client's model (a real sampling/createMessage request on legacy sessions)."""
    result = await ctx.sample(prompt, max_tokens=50)
    content = result.content
    text = getattr(content, "text", None)
    if text is None and isinstance(content, list) and content:
        text = getattr(content[0], "text", None)
    return f"model said: {text}"


@server.tool()
async def list_client_roots(ctx: Context) -> dict:
    """The client's roots (a real roots/list request on legacy sessions)."""
    return {"roots": [r.uri for r in await ctx.list_roots()]}


@server.tool()
async def ask_all(ctx: Context) -> dict:
    """Elicit, sample and list roots one after the other."""
    name = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    sample = await ctx.sample("Say hi", max_tokens=10)
    roots = await ctx.list_roots()
    return {"name": name.content.get("name") if isinstance(name.content, dict) else None, "sample": getattr(sample.content, "text", None),
            "roots": [r.uri for r in roots]}


@server.tool()
def add_tool(name: str) -> str:
    """Register a new tool at run time (servers announce it with notifications/tools/list_changed)."""

    def dynamic() -> str:
        return f"I am {name}"

    dynamic.__name__ = name
    server.tool(name=name, description=f"added at run time: {name}")(dynamic)
    return f"added {name}"


@server.tool()
def touch(uri: str = "mem://counter") -> int:
    """Bump the counter resource and announce that ``uri`` was updated."""
    COUNTER["value"] += 1
    server.notify_resource_updated(uri)
    return COUNTER["value"]


@server.tool()
def session_count() -> int:
    """How many legacy sessions the HTTP endpoint holds (-1 on stdio)."""
    if APP is None or getattr(APP, "sessions", None) is None:
        return -1
    return len(APP.sessions)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def slow(seconds: float = 0.5) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.resource("mem://counter", mime_type="text/plain")
def counter() -> str:
    """A counter that `touch` bumps."""
    return str(COUNTER["value"])


@server.resource("mem://items/{key}", mime_type="text/plain")
def item(key: str) -> str:
    """Items a, b; anything else does not exist."""
    return {"a": "apple", "b": "banana"}[key]


def main() -> None:
    global APP
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--max-sessions", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=1800.0)
    parser.add_argument("--keepalive", type=float, default=15.0)
    args = parser.parse_args()
    if args.http is None:
        server.run()
        return
    import uvicorn

    APP = server.http_app(max_sessions=args.max_sessions, session_idle_timeout=args.idle,
                          keepalive_interval=args.keepalive)
    uvicorn.run(APP, host="127.0.0.1", port=args.http, log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
