"""Shared helpers: the request ``_meta``, request builders, wire-type checks, and a
line-protocol peer that talks raw bytes to a real stdio server subprocess."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpkit.protocol import types as t

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
DEMO = ROOT / "examples" / "demo.py"
TEST_SERVER = SERVERS / "testserver.py"
MISBEHAVING = SERVERS / "misbehaving.py"

VERSION = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: A complete, valid request ``_meta``.
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
CACHEABLE = {
    "server/discover", "tools/list", "prompts/list", "resources/list",
    "resources/templates/list", "resources/read",
}


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python: the repo root importable, whatever else is set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def params(extra: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Request params carrying a valid ``_meta``."""
    return {"_meta": dict(META), **(extra or {}), **kw}


def request(id: Any, method: str, p: Any = ..., **kw: Any) -> dict[str, Any]:
    """A JSON-RPC request dict; ``p`` defaults to valid params (with ``kw`` merged in)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if p is ...:
        p = params(**kw)
    if p is not None:
        msg["params"] = p
    return msg


def line(msg: Any) -> bytes:
    return json.dumps(msg).encode()


# ---------------------------------------------------------------- wire-type checks
def check_result(method: str, result: dict[str, Any]) -> Any:
    """Decode a result into its 2026-07-28 type and check the fields every result must carry."""
    typed = msgspec.convert(result, t.RESULT_TYPES[method])
    assert result["resultType"] == "complete", result
    assert isinstance(result["_meta"][SERVER_INFO]["name"], str), result
    assert isinstance(result["_meta"][SERVER_INFO]["version"], str), result
    if method in CACHEABLE:
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, result
        assert result["cacheScope"] in ("public", "private"), result
    return typed


def check_wire(msg: Any, method: str | None = None) -> None:
    """Every server-written message must decode into a 2026-07-28 wire type."""
    assert isinstance(msg, dict), msg
    assert msg.get("jsonrpc") == "2.0", msg
    if "error" in msg:
        assert set(msg) <= {"jsonrpc", "id", "error"}, msg
        msgspec.convert(msg, t.JSONRPCErrorResponse)
        assert set(msg["error"]) <= {"code", "message", "data"}, msg
    elif "result" in msg:
        assert set(msg) == {"jsonrpc", "id", "result"}, msg
        msgspec.convert(msg, t.JSONRPCResultResponse)
        if method in t.RESULT_TYPES:
            check_result(method, msg["result"])
    else:
        assert "id" not in msg, f"the server sent a request: {msg}"
        msgspec.convert(msg, t.JSONRPCNotification)
        typ = t.NOTIFICATION_PARAMS.get(msg["method"])
        if typ is not None:
            msgspec.convert(msg.get("params", {}), typ)


# ---------------------------------------------------------------- stdio peer
class StdioPeer:
    """A server subprocess spoken to in raw lines.

    Every line the server writes is parsed and checked against the wire types as it is
    received; the method of each request we sent is remembered by id, so results are
    also decoded into their method's result type.
    """

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ROOT, env=env or subprocess_env(),
        )
        self.methods: dict[tuple[type, Any], str] = {}
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._pump_out, daemon=True).start()
        self._err_thread = threading.Thread(target=self._pump_err, daemon=True)
        self._err_thread.start()

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr.append(raw)

    # -------------------------------------------------------- sending
    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (add the newline yourself)."""
        assert self.proc.stdin is not None
        for chunk in data.split(b"\n"):
            try:
                m = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(m, dict) and "method" in m and isinstance(m.get("id"), (int, str)):
                self.methods[(type(m["id"]), m["id"])] = m["method"]
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, *msgs: Any) -> None:
        """Write each message (a dict, or bytes) as one line, all in a single write."""
        for m in msgs:
            if not isinstance(m, (bytes, bytearray)):
                m = line(m)
            self.send_raw(bytes(m) + b"\n")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -------------------------------------------------------- receiving
    def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next message the server writes (checked against the wire types)."""
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message within {timeout} s; stderr:\n{self.stderr}") from None
        if raw is None:
            raise AssertionError(f"the server closed stdout; stderr:\n{self.stderr}")
        assert raw.endswith(b"\n"), raw
        assert b"\n" not in raw[:-1], raw
        msg = json.loads(raw)
        rid = msg.get("id") if isinstance(msg, dict) else None
        check_wire(msg, self.methods.get((type(rid), rid)))
        return msg

    def recv_response(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next response, skipping (checked) notifications."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if "result" in msg or "error" in msg:
                return msg

    def ask(self, msg: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send one request and return its response (nothing else may be in flight)."""
        self.send(msg)
        reply = self.recv_response(timeout)
        assert "id" in reply and reply["id"] == msg["id"] and type(reply["id"]) is type(msg["id"]), reply
        return reply

    def assert_alive(self) -> None:
        """The next valid request is still answered."""
        reply = self.ask(request("alive-check", "server/discover"))
        assert VERSION in reply["result"]["supportedVersions"]

    def assert_silent(self, within: float = 0.2) -> None:
        try:
            raw = self.lines.get(timeout=within)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected output: {raw!r}")

    def rest(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Close stdin and collect every remaining message until stdout closes."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.close_stdin()
        out = []
        deadline = time.monotonic() + timeout
        while True:
            raw = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if raw is None:
                return out
            msg = json.loads(raw)
            rid = msg.get("id")
            check_wire(msg, self.methods.get((type(rid), rid)))
            out.append(msg)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def wait_stderr(self, text: str, timeout: float = 5.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.stderr and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.stderr

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin and not self.proc.stdin.closed:
                    self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def spawn():
    """``spawn(path_or_argv, **env)`` starts a stdio server and returns its :class:`StdioPeer`."""
    peers: list[StdioPeer] = []

    def _spawn(target: Any = DEMO, **env: str) -> StdioPeer:
        argv = [sys.executable, str(target)] if isinstance(target, (str, Path)) else list(target)
        peer = StdioPeer(argv, subprocess_env(**env))
        peers.append(peer)
        return peer

    yield _spawn
    for p in peers:
        p.close()


_shared: dict[str, StdioPeer] = {}


def _shared_peer(target: Path) -> Any:
    """One long-lived server per target, reused across tests while it stays healthy.

    Sharing keeps the suite fast and proves the same process keeps serving after every
    malformed input. A peer left with unread output (a failed test) is replaced.
    """
    key = str(target)
    peer = _shared.get(key)
    if peer is None or peer.proc.poll() is not None or peer.proc.stdin is None or peer.proc.stdin.closed:
        peer = _shared[key] = StdioPeer([sys.executable, key], subprocess_env())
    yield peer
    if not peer.lines.empty() or peer.proc.poll() is not None:
        peer.close()
        _shared.pop(key, None)


@pytest.fixture(scope="session", autouse=True)
def _close_shared_peers():
    yield
    for peer in _shared.values():
        peer.close()
    _shared.clear()


@pytest.fixture
def demo():
    """``examples/demo.py`` over stdio (a shared, long-lived process)."""
    yield from _shared_peer(DEMO)


@pytest.fixture
def testserver():
    """``tests/servers/testserver.py`` over stdio (a shared, long-lived process)."""
    yield from _shared_peer(TEST_SERVER)


@pytest.fixture
def fresh_demo(spawn) -> StdioPeer:
    """A new ``examples/demo.py`` process of this test's own."""
    return spawn(DEMO)


@pytest.fixture
def fresh_testserver(spawn) -> StdioPeer:
    """A new ``tests/servers/testserver.py`` process of this test's own."""
    return spawn(TEST_SERVER)


def run(coro: Any) -> Any:
    """Run a coroutine to completion (no pytest-asyncio here)."""
    import asyncio

    return asyncio.run(coro)
