"""Reliability over HTTP (issue 10, holes 2, 3, 4 and 7): header limits (431), slow clients
(408 and close, within the deadline, while others are served), the connection and in-flight
caps (503 + Retry-After), Content-Type (415) and Accept (406), and half-closed connections.

Server-level limits run against real uvicorn in a subprocess over real sockets; the app-level
checks run in-process too.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit.transports import _limits
from tests.helpers.messages import body, headers_for
from tests.helpers.paths import ROOT
from tests.helpers.servers import asgi_client, running_server
from tests.helpers.wire import post, raw_http, raw_post_bytes

SERVER = ROOT / "tests" / "servers" / "http_test_server.py"

_SCRIPT = """
import sys, json
from tests.helpers.paths import load_module
mod = load_module(__import__('pathlib').Path(sys.argv[1]))
from mcpkit.transports.http import run_http_server
run_http_server(mod.server, port=int(sys.argv[2]), **json.loads(sys.argv[3]))
"""


def _limited(**options: Any) -> Any:
    return lambda port: [sys.executable, "-c", _SCRIPT, str(SERVER), str(port), json.dumps(options)]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_server(_limited(request_timeout=2.0, max_header_bytes=16384, max_headers=50)) as u:
        yield u


def _ping() -> dict[str, Any]:
    return body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})


def _ok(url: str) -> None:
    msg = _ping()
    r = httpx.post(url, content=json.dumps(msg), headers=headers_for(msg), timeout=5, trust_env=False)
    assert r.status_code == 200, r.text


def _is_jsonrpc_error(data: bytes) -> dict[str, Any]:
    doc = json.loads(data)
    assert doc["jsonrpc"] == "2.0" and "error" in doc and isinstance(doc["error"]["code"], int), doc
    return doc


def _connect(url: str) -> socket.socket:
    u = httpx.URL(url)
    return socket.create_connection((u.host, u.port), timeout=10)


def _read_all(s: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Read until the server closes; returns the bytes and the seconds it took."""
    start = time.monotonic()
    s.settimeout(timeout)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


# ---------------------------------------------------------------- hole 2: header limits
def test_huge_header_is_refused_with_431_without_buffering(url: str) -> None:
    """A 64 MiB header: 431 with a JSON-RPC body, before the whole header is read."""
    msg = _ping()
    s = _connect(url)
    head = raw_post_bytes(url, json.dumps(msg).encode(), ["Content-Type: application/json"]).split(b"\r\n\r\n")[0]
    s.sendall(head + b"\r\nX-Big: ")
    sent = 0
    try:
        chunk = b"a" * 65536
        while sent < 64 * 1024 * 1024:
            s.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data, _ = _read_all(s, 5)
    s.close()
    assert sent < 64 * 1024 * 1024, "the server read the whole 64 MiB header"
    assert data.startswith(b"HTTP/1.1 431"), data[:200]
    _is_jsonrpc_error(data.split(b"\r\n\r\n", 1)[1])
    _ok(url)


def test_too_many_headers_is_431(url: str) -> None:
    msg = _ping()
    extra = [f"X-H{i}: v" for i in range(60)]
    status, _, data = raw_http(url, raw_post_bytes(url, json.dumps(msg).encode(),
                                                   ["Content-Type: application/json", *extra]))
    assert status == 431
    _is_jsonrpc_error(data)


def test_headers_within_limits_are_served(url: str) -> None:
    msg = _ping()
    extra = [f"X-H{i}: {'v' * 100}" for i in range(30)]
    hdrs = [f"{k}: {v}" for k, v in headers_for(msg).items()]
    status, _, data = raw_http(url, raw_post_bytes(url, json.dumps(msg).encode(), [*hdrs, *extra]))
    assert status == 200, data


def test_invalid_http_is_a_jsonrpc_400(url: str) -> None:
    status, hdrs, data = raw_http(url, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n")
    assert status == 400 and hdrs["content-type"] == "application/json"
    _is_jsonrpc_error(data)


# ---------------------------------------------------------------- hole 3: slow clients
@pytest.mark.parametrize("kind", ["silent", "trickled-headers", "short-body"])
def test_slow_client_gets_408_and_is_closed_while_others_are_served(url: str, kind: str) -> None:
    msg = _ping()
    payload = json.dumps(msg).encode()
    s = _connect(url)
    if kind == "trickled-headers":
        s.sendall(b"POST /mcp HTTP/1.1\r\n")
    elif kind == "short-body":
        hdrs = [f"{k}: {v}" for k, v in headers_for(msg).items()]
        req = raw_post_bytes(url, payload, hdrs)
        s.sendall(req[:-5])  # Content-Length promises 5 more bytes
    start = time.monotonic()
    closed = False
    data = b""
    while time.monotonic() - start < 30:
        _ok(url)  # others are served meanwhile
        if kind == "trickled-headers":
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass
        s.settimeout(0.3)
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            closed = True
            break
        data += chunk
        if not chunk:
            closed = True
            break
    s.close()
    assert closed, "the slow connection is still open after 30 s"
    assert time.monotonic() - start < 10
    assert data.startswith(b"HTTP/1.1 408"), data[:200]
    _is_jsonrpc_error(data.split(b"\r\n\r\n", 1)[1])


def test_inflight_cap_gives_503_with_retry_after(tmp_path: Any) -> None:
    with running_server(_limited(max_inflight=2)) as u:
        marker = tmp_path / "m"
        sleepers = []
        for i in range(2):
            msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker) + str(i), "seconds": 3}},
                       id=i + 10)
            s = _connect(u)
            hdrs = [f"{k}: {v}" for k, v in headers_for(msg).items()]
            s.sendall(raw_post_bytes(u, json.dumps(msg).encode(), hdrs))
            sleepers.append(s)
        time.sleep(0.5)
        msg = _ping()
        r = httpx.post(u, content=json.dumps(msg), headers=headers_for(msg), timeout=5, trust_env=False)
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == "1"
        _is_jsonrpc_error(r.content)
        for s in sleepers:
            data, _ = _read_all(s, 10)
            assert data.startswith(b"HTTP/1.1 200"), data[:200]
            s.close()
        _ok(u)


# ---------------------------------------------------------------- hole 7: half-close
def test_half_closed_client_gets_its_answer(url: str, tmp_path: Any) -> None:
    msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(tmp_path / "m"), "seconds": 1.5}})
    hdrs = [f"{k}: {v}" for k, v in headers_for(msg).items()]
    s = _connect(url)
    s.sendall(raw_post_bytes(url, json.dumps(msg).encode(), hdrs))
    s.shutdown(socket.SHUT_WR)
    data, _ = _read_all(s, 10)
    s.close()
    while data.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):  # the server's liveness probes (interim responses)
        data = data[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
    assert data.startswith(b"HTTP/1.1 200"), data[:300]
    assert b"woke up" in data


# ---------------------------------------------------------------- hole 4: Content-Type and Accept
@pytest.mark.parametrize(("changes", "status"), [
    ({"Content-Type": "text/plain"}, 415),
    ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ({"Content-Type": "application/jsonx"}, 415),
    ({"Accept": "text/html"}, 406),
    ({"Accept": "application/json;q=0, text/event-stream;q=0"}, 406),
    ({"Accept": "*/*, application/json;q=0, text/event-stream;q=0"}, 406),
    ({"Content-Type": "application/json; charset=utf-8"}, 200),
    ({"Content-Type": "Application/JSON"}, 200),
    ({"Accept": "*/*"}, 200),
    ({"Accept": "application/*"}, 200),
    ({"Accept": "application/json"}, 200),
    ({"Accept": "text/event-stream"}, 200),
    ({"Accept": None}, 200),  # peers differ: a missing Accept means anything
    ({"Content-Type": None}, 200),  # RFC 9110 lets the recipient sniff
])
def test_content_type_and_accept(changes: dict[str, str | None], status: int) -> None:
    from tests.servers.http_test_server import server

    msg = _ping()
    hdrs = {k: v for k, v in {**headers_for(msg), **changes}.items() if v is not None}
    with asgi_client(server.http_app()) as http:
        r = post(http, "/mcp", msg, headers=hdrs)
    assert r.status_code == status, r.text
    if status != 200:
        assert r.headers["content-type"] == "application/json"
        _is_jsonrpc_error(r.content)


def test_legacy_get_needs_event_stream_accept() -> None:
    from tests.servers.http_test_server import server

    with asgi_client(server.http_app()) as http:
        r = http.get("/mcp", headers={"Accept": "text/html", "Mcp-Session-Id": "x"})
    assert r.status_code == 406
    _is_jsonrpc_error(r.content)


def test_accepts() -> None:
    assert _limits.accepts("application/json, text/event-stream", "application/json")
    assert not _limits.accepts("text/*", "application/json")
    assert _limits.accepts("text/*", "text/event-stream")
    assert not _limits.accepts("text/event-stream;q=0", "text/event-stream")
    assert _limits.accepts("application/json;q=oops", "application/json")


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_64_mib_header_does_not_grow_rss() -> None:
    from tests.helpers.servers import ServerProcess

    srv = ServerProcess(_limited())
    try:
        assert srv.wait_ready(), srv.output()
        _ok(srv.url)
        before = _rss_kib(srv.proc.pid)
        s = _connect(srv.url)
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        try:
            for _ in range(1024):  # 64 MiB
                s.sendall(b"a" * 65536)
        except OSError:
            pass
        time.sleep(0.5)
        grown = _rss_kib(srv.proc.pid) - before  # measured while the connection is still open
        s.close()
        _ok(srv.url)
        assert grown < 8 * 1024, f"RSS grew by {grown} KiB"
    finally:
        srv.stop()
