"""``mcpkit proxy --http --workers N --redis URL``: several workers (the ``mcpkit serve
--workers`` machinery, a real redis-server), each with its own backend connection.

- a modern backend (stdio, one process per worker): an MRTR retry may reach any worker,
  since the backend's ``requestState`` travels sealed inside the front's (keys shared by Redis);
- a 2025-11-25 backend (HTTP): its question waits in the worker that asked it; a retry that
  reaches the other worker is relayed to it through Redis (without Redis it fails closed with
  one clear error);
- a 2025-11-25 backend's task (npm server-everything over stdio, one process per worker) lives
  in the worker that created it: its ``tasks/get``, ``tasks/update`` and ``tasks/result`` that
  (and ``tasks/cancel``) reach the other worker are relayed to it through Redis, for both eras
  of front client;
- bad combinations are refused before anything starts.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpkit import Client, EraCache, MCPError
from mcpkit.client._tasks import declaring
from tests.helpers.aio import run
from tests.helpers.cli import everything_argv
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


HISTORICAL = {"action": "accept", "content": {"interpretation": "historical"}}


async def fresh(url: str, mode: str, method: str, params: dict[str, Any]) -> Any:
    """One request from a fresh connection (so from one worker or the other); its MCPError
    is returned. Every client declares the same capabilities (so the same backend session)."""
    async def elicit(params: Any) -> dict[str, Any]:
        return HISTORICAL

    async with Client(url, mode=mode, era_cache=EraCache(), elicitation=elicit) as client:
        try:
            return await client.request(method, declaring(client, params) if mode == "modern" else params,
                                        timeout=60)
        except MCPError as exc:
            return exc


async def research_task(url: str, mode: str, topic: str) -> tuple[list[Any], str]:
    """An ambiguous research task created from one connection, then driven to its end with
    requests each from a fresh connection: what went wrong, and the report's text."""
    import asyncio

    async with Client(url, mode=mode, era_cache=EraCache(), elicitation=lambda p: HISTORICAL) as first:
        handle = await first.call_tool("simulate-research-query", {"topic": topic, "ambiguous": True}, task=True)
    tid = handle.task_id
    assert isinstance(tid, str)
    wrong: list[Any] = []
    if mode == "legacy":  # tasks/get from everywhere, then tasks/result (the question comes there)
        for _ in range(3):
            got = await fresh(url, mode, "tasks/get", {"taskId": tid})
            if isinstance(got, MCPError) or got.get("taskId") != tid:
                wrong.append(got)
        done = await fresh(url, mode, "tasks/result", {"taskId": tid})
        if isinstance(done, MCPError):
            return [*wrong, done], ""
        return wrong, "".join(c.get("text", "") for c in done.get("content", []))
    answered = False
    for _ in range(200):
        got = await fresh(url, mode, "tasks/get", {"taskId": tid})
        if isinstance(got, MCPError):
            wrong.append(got)
            if len(wrong) > 3:
                break
        elif got.get("status") == "completed":
            return wrong, "".join(c.get("text", "") for c in got["result"]["content"])
        elif got.get("status") == "input_required" and got.get("inputRequests") and not answered:
            key = next(iter(got["inputRequests"]))
            updated = await fresh(url, mode, "tasks/update", {"taskId": tid, "inputResponses": {key: HISTORICAL}})
            if isinstance(updated, MCPError):
                wrong.append(updated)
            else:
                answered = True
        elif got.get("status") in ("failed", "cancelled"):
            return [*wrong, got], ""
        await asyncio.sleep(0.1)
    return [*wrong, "not finished"], ""


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_legacy_backend_task_requests_on_another_worker_are_relayed_through_redis(redis: RedisServer,
                                                                                   mode: str) -> None:
    # Each worker runs its own server-everything, so a task exists only in the worker that
    # created it; every later request for it, from whichever worker, reaches it there.
    argv = lambda port: proxy_argv("--http", "--port", str(port), "--workers", "2", "--redis", redis.url,
                                   "--", *everything_argv())
    with running_server(argv, timeout=90) as url:
        async def go() -> tuple[list[tuple[list[Any], str]], list[Any]]:
            outcomes = [await research_task(url, mode, f"tides{i}") for i in range(3)]
            cancelled = []
            for i in range(3):  # tasks/cancel, then tasks/get, each from a fresh connection
                async with Client(url, mode=mode, era_cache=EraCache(), elicitation=lambda p: HISTORICAL) as first:
                    handle = await first.call_tool("simulate-research-query", {"topic": f"moon{i}"}, task=True)
                cancelled.append(await fresh(url, mode, "tasks/cancel", {"taskId": handle.task_id}))
                cancelled.append(await fresh(url, mode, "tasks/get", {"taskId": handle.task_id}))
            return outcomes, cancelled

        outcomes, cancelled = run(go(), 240)
    assert all(not wrong for wrong, _ in outcomes), outcomes
    assert all("# Research Report: tides" in text and "(historical)" in text for _, text in outcomes), outcomes
    assert not [c for c in cancelled if isinstance(c, MCPError)], cancelled
    assert all(got.get("status") == "cancelled" for got in cancelled[1::2]), cancelled


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
