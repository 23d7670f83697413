"""Through a real load balancer: nginx round-robin (per request, no affinity) in front of two
workers sharing one Redis (each its own process on its own port, as two machines would be).

- listen streams opened across the workers receive every change made through any worker;
- a task created through one request is polled, answered (``tasks/update``) and cancelled
  through others;
- MRTR ``requestState`` minted by one worker is accepted by the other;
- legacy clients (the official Python SDK in legacy mode, the TypeScript SDK v1) run a
  session with elicitation, sampling, roots and resource subscriptions through the balancer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client
from tests.helpers.aio import run, until
from tests.helpers.nginx import Nginx
from tests.helpers.paths import INTEROP, LEGACY_SERVER, ROOT, SERVERS
from tests.helpers.peers import install_peers, run_peer_json
from tests.helpers.redis import RedisServer, workers_argv
from tests.helpers.servers import ServerProcess
from tests.helpers.wire import HttpWire

SCALE_SERVER = SERVERS / "scale_server.py"
EXT = "io.modelcontextprotocol/tasks"
DECLARING = {"extensions": {EXT: {}}, "elicitation": {}}
TERMINAL = {"completed", "failed", "cancelled"}
NOTE = "notes://groceries"


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


class Balanced:
    """Two workers of ``spec`` on one Redis, behind nginx."""

    def __init__(self, spec: Any, redis_url: str) -> None:
        self.workers = [ServerProcess(workers_argv(spec, workers=1, redis_url=redis_url)) for _ in range(2)]
        for w in self.workers:
            assert w.wait_ready(), w.output()
        self.nginx = Nginx([f"127.0.0.1:{w.port}" for w in self.workers])
        self.url = self.nginx.url

    def close(self) -> None:
        self.nginx.close()
        for w in self.workers:
            w.stop()



@pytest.fixture(scope="module")
def balanced(redis: RedisServer) -> Iterator[Balanced]:
    b = Balanced(SCALE_SERVER, redis.url)
    yield b
    b.close()


@pytest.fixture
def wire(balanced: Balanced) -> Iterator[HttpWire]:
    with httpx.Client(timeout=10.0, trust_env=False) as http:
        yield HttpWire(http, balanced.url, client="test_scale_nginx", caps=DECLARING)


def whoami(wire: HttpWire) -> int:
    return int(wire.result("tools/call", {"name": "whoami", "arguments": {}})["structuredContent"]["result"])


def test_the_balancer_alternates_between_the_workers(wire: HttpWire) -> None:
    pids = [whoami(wire) for _ in range(4)]
    assert len(set(pids)) == 2 and pids[0] != pids[1] and pids[0] == pids[2], pids


def test_listen_streams_across_workers_get_every_change(balanced: Balanced, wire: HttpWire) -> None:
    saves = 4

    async def main() -> list[list[str]]:
        got: list[list[str]] = [[] for _ in range(6)]
        clients = [Client(balanced.url) for _ in range(6)]

        async def listener(i: int) -> None:
            async with clients[i] as client:
                async for note in client.listen(resources=[NOTE]):
                    got[i].append(note.uri or "")
                    if len(got[i]) == saves:
                        return

        tasks = [asyncio.create_task(listener(i)) for i in range(6)]
        await until(lambda: all(c.acknowledged for c in clients), "6 acknowledged listens", 15)
        for k in range(saves):
            async with Client(balanced.url) as fresh:  # each save through the next worker
                await fresh.call_tool("save_note", {"name": "groceries", "text": f"v{k}"})
        await asyncio.wait_for(asyncio.gather(*tasks), 15)
        return got

    assert run(main(), 60) == [[NOTE] * saves] * 6


def test_task_polled_answered_and_cancelled_through_other_requests(wire: HttpWire) -> None:
    created = wire.result("tools/call", {"name": "ask_name", "arguments": {}})
    task_id = created["taskId"]
    deadline = time.monotonic() + 10
    while (task := wire.result("tasks/get", {"taskId": task_id}))["status"] != "input_required":
        assert time.monotonic() < deadline, task
        time.sleep(0.05)
    wire.result("tasks/update", {"taskId": task_id, "inputResponses": {"user_name": accept(name="Ada")}})
    while (task := wire.result("tasks/get", {"taskId": task_id}))["status"] not in TERMINAL:
        assert time.monotonic() < deadline, task
        time.sleep(0.05)
    assert task["status"] == "completed" and task["result"]["content"][0]["text"].startswith("Hello, Ada!"), task

    sleepy = wire.result("tools/call", {"name": "sleepy", "arguments": {"seconds": 30}})["taskId"]
    assert wire.result("tasks/get", {"taskId": sleepy})["status"] == "working"
    wire.result("tasks/cancel", {"taskId": sleepy})
    for _ in range(2):  # both workers see it cancelled
        assert wire.result("tasks/get", {"taskId": sleepy})["status"] == "cancelled"


def test_mrtr_state_from_one_worker_is_accepted_by_the_other(wire: HttpWire) -> None:
    for _ in range(2):  # whichever worker mints, the next request goes to the other
        first = wire.result("tools/call", {"name": "ask_name", "arguments": {}}, caps={"elicitation": {}})
        assert first["resultType"] == "input_required", first
        done = wire.result("tools/call", {"name": "ask_name", "arguments": {}, "requestState": first["requestState"],
                                          "inputResponses": {"user_name": accept(name="Bea")}}, caps={"elicitation": {}})
        assert done["content"][0]["text"].startswith("Hello, Bea!"), done


# ------------------------------------------------------------------ real legacy clients
@pytest.fixture(scope="module")
def legacy_peers() -> dict[str, str]:
    return install_peers(["python", "ts-v1"], ("PEER_PYTHON", "PEER_TS_V1_NODE", "PEER_TS_V1_PREFIX"),
                         "the legacy peer clients (PyPI mcp==2.3.0 / npm @modelcontextprotocol/sdk@1.32.2)",
                         timeout=900)


@pytest.fixture(scope="module")
def legacy_balanced(redis: RedisServer) -> Iterator[Balanced]:
    b = Balanced(LEGACY_SERVER, redis.url)
    yield b
    b.close()


@pytest.fixture(scope="module")
def run_legacy(legacy_peers: dict[str, str], legacy_balanced: Balanced) -> Callable[[str], dict[str, Any]]:
    cache: dict[str, dict[str, Any]] = {}

    def go(peer: str) -> dict[str, Any]:
        if peer not in cache:
            if peer == "python":
                argv = [legacy_peers["PEER_PYTHON"], "-W", "ignore", str(INTEROP / "legacy_py_peer.py"),
                        "extras", "http", legacy_balanced.url]
            else:
                argv = [legacy_peers["PEER_TS_V1_NODE"], str(INTEROP / "legacy_ts_v1_peer.cjs"),
                        legacy_peers["PEER_TS_V1_PREFIX"], "extras", "http", legacy_balanced.url]
            cache[peer] = run_peer_json(argv, cwd=INTEROP, timeout=120,
                                        extra_env={"LEGACY_PEER_SERVER_PYTHONPATH": str(ROOT)})
        return cache[peer]

    return go


EXPECTED = {"python": ("Linus", "py-sampled", "file:///peer/root"), "ts-v1": ("Brendan", "ts-sampled", "file:///ts/root")}


@pytest.mark.parametrize("peer", ["python", "ts-v1"])
def test_legacy_client_session_through_the_balancer(run_legacy: Callable[[str], dict[str, Any]], peer: str) -> None:
    out = run_legacy(peer)
    # A tool added at run time exists only in the worker that ran add_tool (application state,
    # not the session's): the peer's tools/list after it may go to the other worker.
    error = out.get("error")
    assert error is None or "toolsAfter" in json.dumps(error), out
    assert out["setLevel"] == {}
    assert out["logs"] == [{"level": "info", "data": "step 1 of 2"}, {"level": "info", "data": "step 2 of 2"}]
    assert out["asked"] == ["elicitation/create", "sampling/createMessage", "roots/list"]
    name, sample, root = EXPECTED[peer]
    assert out["askAll"]["structuredContent"] == {"name": name, "sample": sample, "roots": [root]}, out["askAll"]
    assert out["subscribe"] == {}
    updated = [n for n in out["notifications"] if n.get("method") == "notifications/resources/updated"]
    assert updated and updated[0]["params"]["uri"] == "mem://counter", out["notifications"]
    assert "notifications/tools/list_changed" in [n.get("method") for n in out["notifications"]]
