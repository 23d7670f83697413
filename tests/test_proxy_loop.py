"""The proxy's front runs on its backend client's loop when served (``ProxyServer.run``,
``mcpkit proxy``): :meth:`LoopThread.run_here` hands the backend loop to the serving thread
and takes it back afterwards, whatever the serving coroutine raised."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from mcpkit import Server
from mcpkit.protocol import codec
from mcpkit.proxy import proxy
from mcpkit.proxy._bridge import LoopThread


def test_run_here_runs_on_the_backend_loop_in_the_calling_thread() -> None:
    bridge = LoopThread()
    try:
        async def where() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
            return asyncio.get_running_loop(), threading.current_thread()

        loop, thread = bridge.run_here(where())
        assert loop is bridge.loop and thread is threading.current_thread()
        # Given back: the daemon thread runs it again.
        loop, thread = bridge.run_sync(where(), 5)
        assert loop is bridge.loop and thread is not threading.current_thread()
    finally:
        bridge.stop()


def test_run_here_gives_the_loop_back_after_an_interrupt() -> None:
    bridge = LoopThread()
    try:
        async def interrupted() -> None:
            await asyncio.sleep(0)
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            bridge.run_here(interrupted())

        async def alive() -> str:
            return "alive"

        assert bridge.run_sync(alive(), 5) == "alive"
    finally:
        bridge.stop()


def test_proxy_runner_serves_the_front_on_the_backend_loop() -> None:
    backend = Server("inner")
    seen: list[asyncio.AbstractEventLoop] = []

    @backend.tool()
    def add(a: int, b: int) -> int:
        seen.append(asyncio.get_running_loop())
        return a + b

    front = proxy(backend)
    try:
        runner = front.runner()
        assert runner is not None

        async def serve_one() -> dict[str, object]:
            req = codec.decode(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "add", "arguments": {"a": 2, "b": 3},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}).encode())
            assert isinstance(req, codec.Request)
            seen.append(asyncio.get_running_loop())
            return dict(json.loads((await front.handle(req)).body))

        out = runner(serve_one())
        assert out["result"]["structuredContent"] == {"result": 5}  # type: ignore[index]
        # The front request and the in-process backend's handler ran on one loop: no hop.
        assert seen[0] is seen[1] is front.backend.bridge.loop  # type: ignore[union-attr]
    finally:
        front.close()
    assert front.runner() is None  # closed


def test_mounts_share_one_loop_and_the_host_is_served_on_it() -> None:
    # Every mount's backend runs on the host's one mounts loop (Mounts.runner serves the host
    # there, as `mcpkit proxy --config` does): a forwarded call makes no thread hop.
    import sys

    host = Server("host")
    seen: list[asyncio.AbstractEventLoop] = []
    inner = [Server("a"), Server("b")]
    for server in inner:
        @server.tool()
        def add(a: int, b: int) -> int:
            seen.append(asyncio.get_running_loop())
            return a + b

    first = host.mount("a", inner[0])
    second = host.mount("b", inner[1])
    down = host.mount("gone", [sys.executable, "-c", "import sys; sys.exit(3)"], connect_timeout=3)
    every = first.mounts
    try:
        assert down.error is not None
        assert first.backend.bridge is second.backend.bridge is every.bridge
        runner = every.runner()
        assert runner is not None

        def call(name: str) -> dict[str, object]:
            return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": name, "arguments": {"a": 2, "b": 3},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}}

        async def serve() -> list[dict[str, object]]:
            seen.append(asyncio.get_running_loop())
            out = []
            for name in ("a_add", "b_add", "gone_add"):
                req = codec.decode(json.dumps(call(name)).encode())
                assert isinstance(req, codec.Request)
                out.append(dict(json.loads((await host.handle(req)).body)))
            return out

        a, b, gone = runner(serve())
        assert a["result"]["structuredContent"] == b["result"]["structuredContent"] == {"result": 5}  # type: ignore[index]
        assert "mounted server 'gone' is unavailable" in gone["error"]["message"]  # type: ignore[index]
        assert seen[0] is seen[1] is seen[2] is every.bridge.loop  # type: ignore[union-attr]
        first.close()  # one mount closed: the others keep their loop
        assert every.bridge is not None and every.runner() is not None
    finally:
        every.close()
    assert every.bridge is None


# ---------------------------------------------------------------- `mcpkit proxy` on stdio stops on a signal
def _stdio_proxy() -> subprocess.Popen[bytes]:
    from tests.helpers.paths import DEMO, ROOT, subprocess_env

    return subprocess.Popen([sys.executable, "-m", "mcpkit", "proxy", "--", sys.executable, str(DEMO)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=subprocess_env())


def _stops(proc: subprocess.Popen[bytes], sig: int, *, thread: int | None = None) -> str:
    import ctypes

    t0 = time.monotonic()
    if thread is None:
        proc.send_signal(sig)
    else:
        assert ctypes.CDLL(None, use_errno=True).tgkill(proc.pid, thread, sig) == 0
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"still serving 10 s after {signal.Signals(sig).name}")
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.returncode == 0, err
    assert time.monotonic() - t0 < 5
    assert f"stopped ({signal.Signals(sig).name})" in err and err.count("stopped") == 1, err
    assert "Traceback" not in err and "Exception in callback" not in err, err
    return err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_stdio_proxy_after_a_call(sig: int) -> None:
    """The front runs on the backend's loop (uvloop's where installed), which runs a signal
    handler as one of its callbacks: a stop that was not a KeyboardInterrupt was logged there
    and the proxy went on serving."""
    from tests.helpers.messages import line, request

    proc = _stdio_proxy()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line(request(1, "tools/call", name="add", arguments={"a": 2, "b": 3})) + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and "result" in answer, answer
        _stops(proc, sig)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tgkill and /proc are Linux's")
def test_a_signal_on_another_thread_stops_the_idle_stdio_proxy() -> None:
    """Nothing read yet, the signal delivered to a thread that is not the main one: the main
    thread waits on stdin, and the signal still wakes it."""
    proc = _stdio_proxy()
    try:
        assert proc.stderr is not None
        assert b"serving" in proc.stderr.readline()  # the startup line: the front is up
        time.sleep(0.3)
        others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        _stops(proc, signal.SIGTERM, thread=others[0] if others else proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
