"""Scale-out: one server on several worker processes sharing a port, backed by a real Redis.

What ``mcpkit serve --http --workers 2 --redis URL examples/demo.py`` runs
(``mcpkit._workers.serve_workers``), against a ``redis-server`` started here on a loopback
port. No fake Redis. Which worker holds a connection is read from the kernel (``ss``).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpkit import Client
from mcpkit._workers import serve_workers
from tests.helpers.aio import run, until
from tests.helpers.paths import DEMO, subprocess_env
from tests.helpers.redis import RedisServer, serving_pids, workers_argv
from tests.helpers.servers import running_server
from tests.helpers.wire import HttpWire
from tests.test_layers import _files, _imports

NOTE = "notes://groceries"



@pytest.fixture(scope="module")
def demo_workers(redis: RedisServer) -> Iterator[str]:
    """The demo on 2 workers sharing one port, with Redis: the acceptance command itself,
    ``mcpkit serve --http --port P --workers 2 --redis URL examples/demo.py``."""
    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), "--workers", "2",
                "--redis", redis.url, str(DEMO)]

    with running_server(argv) as url:
        yield url


def port_of(url: str) -> int:
    return httpx.URL(url).port or 80


def test_more_than_one_worker_needs_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPKIT_REDIS_URL", raising=False)
    with pytest.raises(ValueError, match=r"--workers 2 needs Redis.*--redis redis://HOST:PORT"):
        serve_workers(str(DEMO), workers=2, redis_url=None, port=1)


def test_listen_streams_on_both_workers_get_every_update(demo_workers: str) -> None:
    """The acceptance check: 20 listen streams for notes://groceries, spread over both worker
    processes, each receive every resources/updated that save_note calls cause, the calls
    made through fresh connections."""
    saves = 5

    async def main() -> tuple[list[list[str]], set[int]]:
        got: list[list[str]] = [[] for _ in range(20)]
        clients = [Client(demo_workers) for _ in range(20)]

        async def listener(i: int) -> None:
            async with clients[i] as client:
                async for note in client.listen(resources=[NOTE]):
                    got[i].append(note.uri or "")
                    if len(got[i]) == saves:
                        return

        tasks = [asyncio.create_task(listener(i)) for i in range(20)]
        await until(lambda: all(getattr(c, "acknowledged", None) for c in clients), "20 acknowledged listens", 20)
        pids = serving_pids(port_of(demo_workers))
        for k in range(saves):
            async with Client(demo_workers) as fresh:  # a fresh connection per change
                result = await fresh.call_tool("save_note", {"name": "groceries", "text": f"version {k}"})
                assert not result.isError, result
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        return got, pids

    got, pids = run(main(), 60)
    assert len(pids) == 2, f"the listen streams should be spread over both workers, got pids {pids}"
    assert all(g == [NOTE] * saves for g in got), got


def test_python_form_on_two_uvicorn_processes(redis: RedisServer) -> None:
    """``Server(bus=redis.bus, session_store=...)`` + ``use(Tasks(store=...))`` on plain uvicorn,
    two processes (two machines): a listen on one hears a change made on the other, and a
    task created on one is seen and cancelled through the other."""
    def uvicorn(port: int) -> list[str]:
        return [sys.executable, "-m", "uvicorn", "tests.servers.scale_app:app", "--port", str(port),
                "--log-level", "warning", "--no-access-log"]

    env = subprocess_env(SCALE_REDIS_URL=redis.url)
    with running_server(uvicorn, env=env) as a, running_server(uvicorn, env=env) as b:
        async def main() -> list[str]:
            got: list[str] = []
            async with Client(a) as listener, Client(b) as writer:
                async def listen() -> None:
                    async for note in listener.listen(resources=["notes://x"]):
                        got.append(note.uri or "")
                        return

                task = asyncio.create_task(listen())
                await until(lambda: listener.acknowledged is not None, "acknowledged")
                await writer.call_tool("save_note", {"name": "x", "text": "1"})
                await asyncio.wait_for(task, 10)
            return got

        assert run(main(), 30) == ["notes://x"]
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        with httpx.Client(timeout=10, trust_env=False) as http:
            wa = HttpWire(http, a, caps=caps)
            wb = HttpWire(http, b, caps=caps)
            task_id = wa.result("tools/call", {"name": "sleepy", "arguments": {}})["taskId"]
            assert wb.result("tasks/get", {"taskId": task_id})["status"] == "working"
            wb.result("tasks/cancel", {"taskId": task_id})
            assert wa.result("tasks/get", {"taskId": task_id})["status"] == "cancelled"


def test_a_worker_that_dies_is_replaced_and_the_port_keeps_serving(redis: RedisServer) -> None:
    with running_server(workers_argv(DEMO, workers=2, redis_url=redis.url)) as url:
        parent = next(p for p in _listeners_of(port_of(url)) if _children(p))
        before = _children(parent)
        assert len(before) == 2, before
        os.kill(before[0], signal.SIGKILL)
        deadline = time.monotonic() + 15
        while True:
            now = _children(parent)
            if len(now) == 2 and before[0] not in now:
                break
            assert time.monotonic() < deadline, now
            time.sleep(0.1)
        for _ in range(6):  # fresh connections, spread over both workers by the kernel
            r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "add", "arguments": {"a": 2, "b": 3},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}},
                headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                         "Mcp-Method": "tools/call", "Mcp-Name": "add"}, timeout=10, trust_env=False)
            assert r.status_code == 200 and r.json()["result"]["structuredContent"] == {"result": 5}, r.text


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def _listeners_of(port: int) -> set[int]:
    """The processes holding a listening socket on ``port`` (the supervisor and its workers)."""
    out = subprocess.run(["ss", "-tlnpH", f"( sport = :{port} )"], capture_output=True, text=True, check=False).stdout
    return {int(m) for m in re.findall(r"pid=(\d+)", out)}


def test_backends_load_only_when_used_and_nothing_below_imports_them() -> None:
    code = ("import sys, mcpkit, mcpkit.server, mcpkit.transports.http, mcpkit._workers; "
            "from mcpkit import Server; from mcpkit.extensions.tasks import Tasks; Server('x').use(Tasks()); "
            "bad = [m for m in sys.modules if m == 'redis' or m.startswith(('redis.', 'mcpkit.backends'))]; "
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    bad = [f"{path.name}:{line} imports {mod}" for sub in ("protocol", "server", "transports", "client")
           for path in _files(sub) for mod, _typing, line in _imports(path) if mod.startswith("mcpkit.backends")]
    assert not bad, bad


def test_workers_that_cannot_start_are_not_restarted_forever(redis: RedisServer, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('this server file is broken')\n")
    code = (f"from mcpkit._workers import serve_workers; "
            f"serve_workers({str(broken)!r}, workers=2, redis_url={redis.url!r}, port=0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=subprocess_env(), check=False)
    assert proc.returncode != 0
    assert "this server file is broken" in proc.stderr
    assert "exit as soon as they start" in proc.stderr, proc.stderr[-2000:]
