"""``Server(lifespan=...)``: run once per process around serving, its value in ``ctx.lifespan``,
on the in-memory client, stdio (``mcpkit serve FILE.py`` and ``server.run()``), HTTP and
``--workers 2``; a failure at startup is one line and a nonzero exit; shutdown runs at
stdin EOF and on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Client, Context, Server
from mcpkit.errors import LifespanError
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, SERVERS, subprocess_env
from tests.helpers.redis import RedisServer
from tests.helpers.servers import free_port
from tests.helpers.wire import HttpWire

OPS = SERVERS / "ops_server.py"


def events(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(fn: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_in_memory_clients_share_one_lifespan() -> None:
    seen: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, int]]:
        seen.append("start")
        yield {"answer": 42}
        seen.append("stop")

    server = Server("mem", lifespan=lifespan)

    @server.tool()
    def answer(ctx: Context) -> int:
        return int(ctx.lifespan["answer"])

    async def go() -> None:
        assert server.lifespan_state is None
        async with Client(server) as one, Client(server) as two:
            assert (await one.call_tool("answer", {})).structuredContent == {"result": 42}
            assert (await two.call_tool("answer", {})).structuredContent == {"result": 42}
            assert seen == ["start"]
        assert seen == ["start", "stop"] and server.lifespan_state is None

    run(go())


def test_a_failing_lifespan_is_a_lifespan_error_and_shutdown_runs_after_an_error() -> None:
    @asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        raise OSError("no database")
        yield  # pragma: no cover

    async def go() -> None:
        with pytest.raises(LifespanError, match="lifespan of broken failed at startup: OSError: no database"):
            async with Server("broken", lifespan=broken).running():
                pass

    run(go())
    seen: list[str] = []

    @asynccontextmanager
    async def tidy(server: Server) -> AsyncIterator[None]:
        yield None
        seen.append("stopped")  # after the yield, without try/finally: it still runs

    async def fails() -> None:
        async with Server("tidy", lifespan=tidy).running():
            raise RuntimeError("serving failed")

    with pytest.raises(RuntimeError):
        run(fails())
    assert seen == ["stopped"]


def stdio_call(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(argv, env=env) as client:
            result = await client.call_tool("whoami", {})
            assert isinstance(result.structuredContent, dict)
            return result.structuredContent

    out: dict[str, Any] = run(go())
    return out


def ops_argv(tmp_path: Path, how: str) -> list[str]:
    """The ops server on stdio, through ``mcpkit serve`` or its own ``server.run()``."""
    if how == "serve":
        return [sys.executable, "-m", "mcpkit", "serve", str(OPS)]
    script = tmp_path / "run_ops.py"
    script.write_text(f"import runpy\nns = runpy.run_path({str(OPS)!r})\nns['server'].run()\n")
    return [sys.executable, str(script)]


@pytest.mark.parametrize("how", ["serve", "run"])
def test_stdio_runs_the_lifespan_around_serving_and_stops_it_at_eof(tmp_path: Path, how: str) -> None:
    log = tmp_path / "events"
    env = {"OPS_LIFESPAN": "1", "OPS_EVENTS": str(log), "PYTHONPATH": str(ROOT)}
    argv = ops_argv(tmp_path, how)
    got = stdio_call(argv, env)
    assert got["lifespan"]["pool"] == "db-pool"
    pid = str(got["lifespan"]["pid"])
    assert wait_for(lambda: events(log) == [["start", pid], ["stop", pid]]), events(log)


@pytest.mark.parametrize("how", ["serve", "run"])
def test_stdio_shutdown_runs_on_sigterm(tmp_path: Path, how: str) -> None:
    log = tmp_path / "events"
    env = subprocess_env(OPS_LIFESPAN="1", OPS_EVENTS=str(log))
    argv = ops_argv(tmp_path, how)
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: events(log)), "the lifespan never started"
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
        assert [e[0] for e in events(log)] == ["start", "stop"]
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_failing_lifespan_stops_mcpkit_serve_with_one_line(transport: str) -> None:
    http = ["--http", "--port", str(free_port())] if transport == "http" else []
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "serve", *http, str(OPS)], capture_output=True, text=True,
                          env=subprocess_env(OPS_LIFESPAN="1", OPS_FAIL_STARTUP="1"), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("serving ")]
    assert lines == ["mcpkit serve: the lifespan of ops failed at startup: RuntimeError: the database is unreachable"], \
        proc.stderr


def test_server_run_with_a_failing_lifespan_exits_with_one_line(tmp_path: Path) -> None:
    script = tmp_path / "run_ops.py"
    script.write_text(f"import runpy\nns = runpy.run_path({str(OPS)!r})\nns['server'].run()\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env=subprocess_env(OPS_LIFESPAN="1", OPS_FAIL_STARTUP="1"), stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "mcpkit: the lifespan of ops failed at startup: RuntimeError: the database is unreachable"]


def http_whoami(url: str) -> dict[str, Any]:
    with httpx.Client(timeout=10, trust_env=False) as http:
        status, reply = HttpWire(http, url, client="lifespan").call("tools/call", {"name": "whoami", "arguments": {}})
    assert status == 200, reply
    out: dict[str, Any] = reply["result"]["structuredContent"]["lifespan"]
    return out


def serve_http(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    log = tmp_path / "events"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), *extra, str(OPS)],
                            env=subprocess_env(OPS_LIFESPAN="1", OPS_EVENTS=str(log)), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            return httpx.get(url.replace("/mcp", "/healthz"), timeout=1, trust_env=False).status_code == 200
        except httpx.TransportError:
            return False

    assert wait_for(up, 30), "the server did not start"
    return proc, url, log


def test_http_runs_the_lifespan_once_and_stops_it_on_sigterm(tmp_path: Path) -> None:
    proc, url, log = serve_http(tmp_path)
    try:
        first, second = http_whoami(url), http_whoami(url)
        assert first == second and first["pool"] == "db-pool"
        assert events(log) == [["start", str(proc.pid)]]
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(15) == 0
        assert events(log) == [["start", str(proc.pid)], ["stop", str(proc.pid)]]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_two_workers_each_run_their_own_lifespan(tmp_path: Path) -> None:
    redis = RedisServer()
    redis.start()
    proc, url, log = serve_http(tmp_path, "--workers", "2", "--redis", redis.url, "--log-format", "json")
    try:
        assert wait_for(lambda: len(events(log)) == 2), events(log)
        starts = {pid for kind, pid in events(log) if kind == "start"}
        assert len(starts) == 2 and str(proc.pid) not in starts  # one per worker, none in the supervisor
        served = {str(http_whoami(url)["pid"]) for _ in range(20)}
        assert served <= starts
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
        stops = {pid for kind, pid in events(log) if kind == "stop"}
        assert stops == starts
        assert proc.stderr is not None
        logged = [json.loads(line) for line in proc.stderr.read().decode().splitlines() if line.startswith("{")]
        calls = [x for x in logged if x["method"] == "tools/call"]
        assert len(calls) == 20 and {x["transport"] for x in calls} == {"http"}  # the workers log too
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        redis.close()


def test_an_asgi_server_of_your_own_runs_the_lifespan_through_the_lifespan_protocol() -> None:
    seen: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[str]:
        seen.append("start")
        yield "state"
        seen.append("stop")

    app = Server("asgi", lifespan=lifespan).http_app()

    async def go() -> None:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        sent: list[dict[str, Any]] = []
        for msg in ({"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}):
            inbox.put_nowait(msg)

        async def send(msg: dict[str, Any]) -> None:
            sent.append(msg)

        await app({"type": "lifespan"}, inbox.get, send)
        assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]

    run(go())
    assert seen == ["start", "stop"]


def test_one_server_runs_its_lifespan_again_on_another_event_loop() -> None:
    runs: list[int] = []

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[int]:
        runs.append(len(runs) + 1)
        yield len(runs)

    server = Server("again", lifespan=lifespan)

    @server.tool()
    def which(ctx: Context) -> int:
        return int(ctx.lifespan)

    async def go() -> list[Any]:
        both = asyncio.Barrier(2)  # (an in-memory call need not yield to the loop: overlap them for sure)

        async def one() -> Any:
            async with Client(server) as client:
                await both.wait()
                return (await client.call_tool("which", {})).structuredContent

        return list(await asyncio.gather(one(), one()))  # two clients at once: one run

    assert run(go()) == [{"result": 1}, {"result": 1}]
    assert run(go()) == [{"result": 2}, {"result": 2}]  # a new loop, a new run
