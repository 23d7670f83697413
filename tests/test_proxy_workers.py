"""``mcpkit proxy --http --workers N --redis URL``: several workers (the ``mcpkit serve
--workers`` machinery, a real redis-server), each with its own backend connection.

- a modern backend (stdio, one process per worker): an MRTR retry may reach any worker,
  since the backend's ``requestState`` travels sealed inside the front's (keys shared by Redis);
- a 2025-11-25 backend (HTTP): its question waits in the worker that asked it, so a retry
  that reaches the other worker fails closed with one clear error, and one that reaches the
  right worker completes;
- bad combinations are refused before anything starts.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpkit import Client, MCPError
from tests.helpers.aio import run
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.redis import RedisServer
from tests.helpers.servers import running_server

MODERN = SERVERS / "proxy_backend.py"
LEGACY = SERVERS / "proxy_sessions.py"
OTHER_WORKER = "reached another proxy worker"


def proxy_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpkit", "proxy", *args]


def never(params: Any) -> dict[str, Any]:
    raise AssertionError("the test answers the questions itself")


async def ask_and_retry(url: str, tool: str, args: dict[str, Any], answer: dict[str, Any]) -> Any:
    """One MRTR round: the question from one connection, the retry from a fresh one
    (so from one worker or the other); the final result, or the retry's MCPError."""
    async with Client(url, elicitation=never) as first:
        asked = await first.request("tools/call", {"name": tool, "arguments": args}, answer_input=False)
    assert asked["resultType"] == "input_required", asked
    key = next(iter(asked["inputRequests"]))
    async with Client(url, elicitation=never) as second:
        try:
            return await second.request("tools/call", {"name": tool, "arguments": args,
                                                       "inputResponses": {key: answer},
                                                       "requestState": asked["requestState"]}, answer_input=False)
        except MCPError as exc:
            return exc


def test_modern_backend_retries_land_on_any_worker(redis: RedisServer) -> None:
    backend = [sys.executable, "-m", "mcpkit", "serve", str(MODERN)]
    argv = lambda port: proxy_argv("--http", "--port", str(port), "--workers", "2", "--redis", redis.url,
                                   "--", *backend)
    with running_server(argv, timeout=60) as url:
        async def go() -> list[Any]:
            return [await ask_and_retry(url, "confirm", {"what": "ship"}, {"action": "accept",
                                                                            "content": {"ok": True}})
                    for _ in range(8)]

        outcomes = run(go(), 120)
    assert all(not isinstance(o, MCPError) for o in outcomes), outcomes
    assert {o["content"][0]["text"] for o in outcomes} == {"accept:True"}


def test_legacy_backend_retry_on_another_worker_fails_closed(redis: RedisServer) -> None:
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                                      str(LEGACY)], timeout=30) as backend_url:
        argv = lambda port: proxy_argv("--http", "--port", str(port), "--workers", "2",
                                       "--redis", redis.url, backend_url)
        with running_server(argv, timeout=60) as url:
            async def go() -> list[Any]:
                return [await ask_and_retry(url, "ask", {}, {"action": "accept", "content": {"name": "Ada"}})
                        for _ in range(12)]

            outcomes = run(go(), 180)
    done = [o for o in outcomes if not isinstance(o, MCPError)]
    refused = [o for o in outcomes if isinstance(o, MCPError)]
    assert all(o["content"][0]["text"] == "accept:Ada" for o in done)
    assert all(e.code == -32602 and OTHER_WORKER in e.message for e in refused), refused
    # Twelve retries on fresh connections: both workers answered some (the kernel spreads them).
    assert done and refused, outcomes


@pytest.mark.parametrize(("args", "says"), [
    (["--http", "--workers", "2"], "needs Redis"),
    (["--workers", "2", "--redis", "redis://127.0.0.1:1/0"], "add --http"),
    (["--http", "--workers", "0", "--redis", "redis://127.0.0.1:1/0"], "at least 1"),
])
def test_bad_worker_options_are_refused(args: list[str], says: str) -> None:
    proc = subprocess.run(proxy_argv(*args, "--", sys.executable, "-c", "pass"), capture_output=True, text=True,
                          timeout=60, env=subprocess_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
