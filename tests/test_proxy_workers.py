"""``mcpkit proxy --http --workers N --redis URL``: several workers (the ``mcpkit serve
--workers`` machinery, a real redis-server), each with its own backend connection.

- a modern backend (stdio, one process per worker): an MRTR retry may reach any worker,
  since the backend's ``requestState`` travels sealed inside the front's (keys shared by Redis);
- a 2025-11-25 backend (HTTP): its question waits in the worker that asked it; a retry that
  reaches the other worker is relayed to it through Redis (without Redis it fails closed with
  one clear error);
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


def test_legacy_backend_retry_on_another_worker_is_relayed_through_redis(redis: RedisServer) -> None:
    # The question waits in the worker whose backend session asked it; a retry that reaches the
    # other worker is relayed to it through Redis, and every retry completes.
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                                      str(LEGACY)], timeout=30) as backend_url:
        argv = lambda port: proxy_argv("--http", "--port", str(port), "--workers", "2",
                                       "--redis", redis.url, backend_url)
        with running_server(argv, timeout=60) as url:
            async def go() -> tuple[list[Any], Any, Any]:
                outcomes = [await ask_and_retry(url, "ask", {}, {"action": "accept", "content": {"name": "Ada"}})
                            for _ in range(12)]
                bad = await ask_and_retry(url, "ask", {}, {"action": "accept", "content": "not an object"})
                stale = await ask_and_retry(url, "ask", {}, {"action": "decline"})
                return outcomes, bad, stale

            outcomes, bad, stale = run(go(), 180)
    refused = [o for o in outcomes if isinstance(o, MCPError)]
    assert not refused, refused
    assert all(o["content"][0]["text"] == "accept:Ada" for o in outcomes)
    assert isinstance(bad, MCPError) and bad.code == -32602 and "Invalid input response" in bad.message
    assert not isinstance(stale, MCPError) and stale["content"][0]["text"].startswith("decline")


def test_legacy_backend_retry_on_another_worker_fails_closed_without_redis() -> None:
    # Two proxies sharing state keys but no Redis: a retry that reaches the one that does not
    # hold the question is refused with one clear error, and the backend is never asked again.
    import secrets

    from mcpkit.proxy import proxy
    from tests.helpers.paths import serve_argv

    keys = [secrets.token_urlsafe(32)]
    fronts = [proxy(serve_argv(LEGACY), mode="legacy", state_keys=keys, stderr=subprocess.DEVNULL) for _ in range(2)]
    fronts[1].forwarder.worker_id = "another-process"  # (the id is per process; two in one here)
    try:
        async def go() -> MCPError:
            async with Client(fronts[0], elicitation=never) as first:
                asked = await first.request("tools/call", {"name": "ask", "arguments": {}}, answer_input=False)
            key = next(iter(asked["inputRequests"]))
            async with Client(fronts[1], elicitation=never) as second:
                with pytest.raises(MCPError) as info:
                    await second.request("tools/call", {"name": "ask", "arguments": {}, "requestState": asked[
                        "requestState"], "inputResponses": {key: {"action": "decline"}}}, answer_input=False)
            return info.value

        err = run(go(), 60)
        assert err.code == -32602 and OTHER_WORKER in err.message
    finally:
        for front in fronts:
            front.close()


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
