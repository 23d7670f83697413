"""Raw wire peers: a server subprocess spoken to in stdio lines, and JSON-RPC "wires" that send
one request over stdio or Streamable HTTP and return (HTTP status or None, the response).

Every message a server writes is checked on receipt: against the 2026-07-28 wire types
(:class:`StdioPeer`), or against what a 2025-11-25 session may receive (:class:`LegacyStdioPeer`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.messages import (
    LEGACY,
    META_CAPS,
    META_CLIENT,
    META_VERSION,
    MODERN,
    VERSION,
    call,
    check_legacy_message,
    check_wire,
    headers_for,
    init_msg,
    line,
    override,
    req,
    request,
    single_reply,
    structured,
)
from tests.helpers.paths import ROOT, serve_argv, subprocess_env
from tests.helpers.servers import mcpkit_serve_argv, running_server


# ---------------------------------------------------------------- stdio
class StdioPeer:
    """A server subprocess spoken to in raw lines.

    Every line the server writes is parsed and checked against the wire types as it is
    received; the method of each request we sent is remembered by id, so results are
    also decoded into their method's result type.
    """

    #: seconds to wait for a message when no timeout is given
    timeout = 5.0

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

    @classmethod
    def python(cls, script: str | Path, **env: str) -> StdioPeer:
        """``python SCRIPT`` with the repo root importable (and ``env`` set)."""
        return cls([sys.executable, str(script)], subprocess_env(**env))

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._stderr.append(raw)

    def check(self, msg: Any) -> None:
        """The check every received message passes (subclasses check another era)."""
        rid = msg.get("id") if isinstance(msg, dict) else None
        check_wire(msg, self.methods.get((type(rid), rid)))

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
        """Write each message (a dict, or bytes) as one line."""
        for m in msgs:
            if not isinstance(m, (bytes, bytearray)):
                m = line(m)
            self.send_raw(bytes(m) + b"\n")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -------------------------------------------------------- receiving
    def recv(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message the server writes (checked)."""
        timeout = self.timeout if timeout is None else timeout
        try:
            raw = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message within {timeout} s; stderr:\n{self.stderr}") from None
        if raw is None:
            raise AssertionError(f"the server closed stdout; stderr:\n{self.stderr}")
        assert raw.endswith(b"\n"), raw
        assert b"\n" not in raw[:-1], raw
        msg = json.loads(raw)
        self.check(msg)
        return msg

    def until(self, pred: Callable[[dict], bool], timeout: float | None = None) -> tuple[dict, list[dict]]:
        """The first message matching ``pred``, and everything (checked) received before it."""
        before: list[dict] = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if pred(msg):
                return msg, before
            before.append(msg)

    def recv_response(self, timeout: float | None = None) -> dict[str, Any]:
        """The next response, skipping (checked) notifications and requests."""
        return self.until(lambda m: "result" in m or "error" in m, timeout)[0]

    def ask(self, msg: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
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
            self.check(msg)
            out.append(msg)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def wait_stderr(self, text: str, timeout: float = 5.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.stderr and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.stderr

    def close(self, timeout: float = 3.0) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin and not self.proc.stdin.closed:
                    self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class LegacyStdioPeer(StdioPeer):
    """A stdio server subprocess spoken to the way a 2025-11-25 client does: every message is
    checked with :func:`check_legacy_message` (answers to the 2026-07-28 requests we sent may
    carry the modern result fields)."""

    timeout = 10.0

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.modern_ids: set[Any] = set()  # ids of the 2026-07-28 requests we sent
        super().__init__(argv, env)

    def check(self, msg: Any) -> None:
        check_legacy_message(msg, modern=isinstance(msg, dict) and msg.get("id") in self.modern_ids)

    def send(self, *msgs: Any) -> None:
        for m in msgs:
            if isinstance(m, dict) and "method" in m and isinstance(m.get("params"), dict) \
                    and META_VERSION in (m["params"].get("_meta") or {}):
                self.modern_ids.add(m.get("id"))
        super().send(*msgs)

    def both(self, rid: Any, method: str, timeout: float | None = None) -> tuple[dict, dict]:
        """The response to ``rid`` and a notification ``method``, in whichever order they come."""
        resp = notification = None
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while resp is None or notification is None:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if msg.get("id") == rid and ("result" in msg or "error" in msg):
                resp = msg
            elif msg.get("method") == method and notification is None:
                notification = msg
        return resp, notification

    def ask(self, msg: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a request; its response (messages before it are checked and dropped)."""
        self.send(msg)
        resp, _ = self.until(lambda m: m.get("id") == msg["id"] and ("result" in m or "error" in m), timeout)
        return resp

    def handshake(self, version: str = LEGACY, caps: dict | None = None) -> dict:
        resp = self.ask(init_msg(version, id="init", caps=caps))
        assert "result" in resp, resp
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return resp["result"]

    def assert_alive(self) -> None:
        """A legacy process still answers: ping -> {} and a tool call (``add``)."""
        assert self.ask(req("alive-ping", "ping")) == {"jsonrpc": "2.0", "id": "alive-ping", "result": {}}
        resp = self.ask(call("alive-add", "add", a=40, b=2))
        assert structured(resp["result"]) == 42, resp

    def assert_alive_modern(self) -> None:
        resp = self.ask({"jsonrpc": "2.0", "id": "alive-discover", "method": "server/discover",
                         "params": {"_meta": {META_VERSION: MODERN, META_CAPS: {}}}})
        assert MODERN in resp["result"]["supportedVersions"], resp

    def close(self, timeout: float = 5.0) -> None:
        super().close(timeout)


# ---------------------------------------------------------------- JSON-RPC wires
class Wire:
    """One server, spoken to in raw JSON-RPC: :meth:`call` sends a request with a full 2026-07-28
    ``_meta`` and returns (HTTP status, or None on stdio; the response message).

    ``caps`` are the client capabilities a call declares unless it names its own; ``check``
    (method, result) vets every result; ``notes`` are the notifications that came with the
    latest response (on its own event stream, over HTTP).
    """

    kind = ""
    _ids = itertools.count(1)

    def __init__(self, *, client: str = "tests", caps: dict[str, Any] | None = None,
                 check: Callable[[str, dict[str, Any]], Any] | None = None) -> None:
        self.client_info = {"name": client, "version": "0"}
        self.caps = caps if caps is not None else {}
        self.check = check
        self.notes: list[dict[str, Any]] = []

    def message(self, method: str, p: dict[str, Any] | None = None, caps: dict[str, Any] | None = None,
                id: Any = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        m = {META_VERSION: VERSION, META_CAPS: self.caps if caps is None else caps, META_CLIENT: self.client_info,
             **(meta or {})}
        return {"jsonrpc": "2.0", "id": id if id is not None else next(self._ids), "method": method,
                "params": {"_meta": m, **(p or {})}}

    def call(self, method: str, p: dict[str, Any] | None = None, *, caps: dict[str, Any] | None = None,
             id: Any = None, meta: dict[str, Any] | None = None,
             headers: dict[str, str | None] | None = None) -> tuple[int | None, dict[str, Any]]:
        msg = self.message(method, p, caps, id, meta)
        status, reply = self.exchange(msg, headers)
        assert reply.get("id") == msg["id"] and type(reply.get("id")) is type(msg["id"]), reply
        if "result" in reply and self.check is not None:
            self.check(method, reply["result"])
        return status, reply

    def result(self, method: str, p: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """The result of a call that must succeed."""
        status, reply = self.call(method, p, **kw)
        assert status in (None, 200) and "result" in reply, (status, reply)
        return reply["result"]

    def error(self, method: str, p: dict[str, Any] | None = None, **kw: Any) -> tuple[int | None, dict[str, Any]]:
        """(status, the error) of a call that must fail."""
        status, reply = self.call(method, p, **kw)
        assert "error" in reply, reply
        return status, reply["error"]

    def exchange(self, msg: dict[str, Any], headers: dict[str, str | None] | None = None
                 ) -> tuple[int | None, dict[str, Any]]:
        raise NotImplementedError

    def client_target(self) -> Any:
        """What ``mcpkit.Client`` takes to reach the same server."""
        raise NotImplementedError

    def close(self) -> None: ...


class StdioWire(Wire):
    kind = "stdio"

    def __init__(self, argv: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.argv = argv
        self.peer = StdioPeer(argv, subprocess_env())

    def exchange(self, msg: dict[str, Any], headers: dict[str, str | None] | None = None
                 ) -> tuple[int | None, dict[str, Any]]:
        self.peer.send(msg)
        # The peer's checker knows complete results only; results are vetted by ``check``.
        self.peer.methods.pop((type(msg["id"]), msg["id"]), None)
        self.notes = []
        while True:
            reply = self.peer.recv(10.0)
            if "result" in reply or "error" in reply:
                return None, reply
            self.notes.append(reply)

    def client_target(self) -> Any:
        return self.argv

    def close(self) -> None:
        self.peer.close()


class HttpWire(Wire):
    kind = "http"

    def __init__(self, http: httpx.Client, url: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.http = http
        self.url = url

    def exchange(self, msg: dict[str, Any], headers: dict[str, str | None] | None = None
                 ) -> tuple[int | None, dict[str, Any]]:
        h = headers_for(msg)
        p = msg.get("params") or {}
        if msg["method"].startswith("tasks/") and "taskId" in p:
            h["Mcp-Name"] = p["taskId"]  # the tasks extension's routing header
        r = self.http.post(self.url, content=json.dumps(msg).encode(), headers=override(h, headers or {}))
        reply, self.notes = single_reply(r.headers.get("content-type", ""), r.text)
        return r.status_code, reply

    def client_target(self) -> Any:
        return self.url


@contextlib.contextmanager
def open_wire(kind: str, spec: str | Path, **kw: Any) -> Iterator[Wire]:
    """``python -m mcpkit serve SPEC`` over stdio, or ``... serve --http`` (uvicorn) over HTTP."""
    if kind == "stdio":
        w = StdioWire(serve_argv(spec), **kw)
        try:
            yield w
        finally:
            w.close()
    else:
        with running_server(mcpkit_serve_argv(spec)) as url, httpx.Client(timeout=10.0) as http:
            yield HttpWire(http, url, **kw)


# ---------------------------------------------------------------- HTTP requests
def post(client: httpx.Client, url: str, msg: Any, headers: Any = None, content: bytes | None = None) -> httpx.Response:
    """POST ``msg`` as JSON (or ``content`` as given) with the headers a correct client sends for it
    (or ``headers`` as given)."""
    if content is None:
        content = json.dumps(msg).encode()
    if headers is None:
        headers = headers_for(msg)
    return client.post(url, content=content, headers=headers)


# ---------------------------------------------------------------- raw HTTP bytes
def raw_http(url: str, request_bytes: bytes, *, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """Send bytes on a fresh socket and read one (Content-Length-framed) response."""
    u = httpx.URL(url)
    with socket.create_connection((u.host, u.port), timeout=timeout) as s:
        s.sendall(request_bytes)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        length = int(hdrs.get("content-length", "0"))
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, hdrs, rest


def raw_post_bytes(url: str, payload: bytes, header_lines: Sequence[str]) -> bytes:
    """An HTTP/1.1 POST of ``payload`` to ``url``, byte for byte (headers httpx would refuse)."""
    u = httpx.URL(url)
    lines = [f"POST {u.raw_path.decode()} HTTP/1.1", f"Host: {u.host}:{u.port}",
             f"Content-Length: {len(payload)}", "Connection: close", *header_lines]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
