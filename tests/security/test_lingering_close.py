"""Refusals reach the client (issue 18, "Also"): a request refused while the client is still
sending (431 for a 1 MiB header, 413 for a large body) is answered, the server shuts down
its writing side and reads and discards the rest for a bounded time and size (a lingering
close, as nginx does) before it closes, so the client reads the status instead of a
connection reset.

A real ``mcpkit serve --http`` (uvicorn) on 127.0.0.1, and a raw-socket client that keeps
sending from a thread while the main thread reads the answer.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.servers import ServerProcess, mcpkit_serve_argv

DEMO = ROOT / "examples" / "demo.py"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    srv = ServerProcess(mcpkit_serve_argv(DEMO))
    try:
        assert srv.wait_ready(30), srv.output()
        yield srv
    finally:
        srv.stop()


def exchange(port: int, head: bytes, rest: bytes, *, chunk: int = 64 * 1024, timeout: float = 10.0) -> tuple[bytes, str]:
    """Send ``head`` then ``rest`` in chunks from a thread (ignoring send errors: the server
    may stop reading), read everything the server sends; (bytes read, how it ended)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)

    def send() -> None:
        try:
            s.sendall(head)
            for i in range(0, len(rest), chunk):
                s.sendall(rest[i:i + chunk])
        except OSError:
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    buf = b""
    ended = "timeout"
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                ended = "reset"
                break
            except TimeoutError:
                break
            if not data:
                ended = "eof"
                break
            buf += data
    finally:
        sender.join(timeout)
        s.close()
    return buf, ended


def parse(buf: bytes) -> tuple[int | None, dict[str, str], bytes]:
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status: int | None = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = None
    hdrs = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        hdrs[name.strip().lower()] = value.strip()
    return status, hdrs, body


def assert_refusal(buf: bytes, ended: str, status: int) -> None:
    got, hdrs, body = parse(buf)
    assert got == status, (ended, buf[:300])
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    n = int(hdrs["content-length"])
    doc = json.loads(body[:n])
    assert doc["jsonrpc"] == "2.0" and isinstance(doc["error"], dict), doc
    assert ended == "eof", f"after the {status} the connection ended with {ended}, not a clean close"


def _post_head(port: int, extra: bytes = b"", length: int | None = None) -> bytes:
    lines = [b"POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}".encode(), b"Content-Type: application/json",
             b"Accept: application/json, text/event-stream"]
    if length is not None:
        lines.append(f"Content-Length: {length}".encode())
    return b"\r\n".join(lines) + b"\r\n" + extra


@pytest.mark.parametrize("round_", range(3))
def test_a_1_MiB_header_gets_its_431_while_the_client_keeps_sending(server: ServerProcess, round_: int) -> None:
    head = _post_head(server.port)
    rest = b"X-Big: " + b"a" * MiB + b"\r\nContent-Length: 2\r\n\r\n{}"
    buf, ended = exchange(server.port, head, rest)
    assert_refusal(buf, ended, 431)


@pytest.mark.parametrize("round_", range(3))
def test_a_large_body_gets_its_413_while_the_client_keeps_sending(server: ServerProcess, round_: int) -> None:
    size = 8 * MiB  # over the 4 MiB default max_body_bytes
    head = _post_head(server.port, length=size) + b"\r\n"
    buf, ended = exchange(server.port, head, b"x" * size)
    assert_refusal(buf, ended, 413)


def test_a_large_chunked_body_gets_its_413_while_the_client_keeps_sending(server: ServerProcess) -> None:
    head = _post_head(server.port, b"Transfer-Encoding: chunked\r\n") + b"\r\n"
    piece = b"%x\r\n" % (256 * 1024) + b"y" * (256 * 1024) + b"\r\n"
    buf, ended = exchange(server.port, head, piece * 24 + b"0\r\n\r\n")  # 6 MiB
    assert_refusal(buf, ended, 413)


def test_the_server_still_serves_after_the_refusals(server: ServerProcess) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode()
    head = _post_head(server.port, length=len(body)) + (
        b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nConnection: close\r\n\r\n")
    buf, ended = exchange(server.port, head, body)
    status, _, _ = parse(buf)
    assert status == 200 and ended == "eof", (ended, buf[:300])


def test_a_client_that_never_stops_sending_is_closed_within_the_linger_bounds(server: ServerProcess) -> None:
    """The drain is bounded: a client still sending after its 431 is cut off (about 2 s or
    16 MiB after the answer), and it read its 431 first."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10.0)
    cut_off: list[float] = []
    started = time.monotonic()

    def send() -> None:
        junk = b"X-More: " + b"b" * 60_000 + b"\r\n"
        try:
            s.sendall(_post_head(server.port))
            while time.monotonic() - started < 20:
                s.sendall(junk)
                time.sleep(0.001)
        except OSError:
            cut_off.append(time.monotonic() - started)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    buf = b""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            buf += data
    except OSError:
        pass
    sender.join(25)
    s.close()
    assert parse(buf)[0] == 431, buf[:200]
    assert cut_off and cut_off[0] < 8.0, cut_off


H11_SERVER = """
import sys, uvicorn
from mcpkit.server._loader import load_server
from mcpkit.transports.http import HttpApp
from mcpkit.transports._limits import Limits, uvicorn_options
app = HttpApp(load_server(sys.argv[1]))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", lifespan="off",
            **uvicorn_options(Limits(), parser="h11"))
"""


def test_h11_refusals_reach_the_client_too() -> None:
    import sys

    srv = ServerProcess(lambda port: [sys.executable, "-c", H11_SERVER, str(DEMO), str(port)])
    try:
        assert srv.wait_ready(30), srv.output()
        head = _post_head(srv.port)
        buf, ended = exchange(srv.port, head, b"X-Big: " + b"a" * MiB + b"\r\nContent-Length: 2\r\n\r\n{}")
        status, _, _ = parse(buf)
        assert status in (400, 431) and ended == "eof", (ended, buf[:300])  # h11 answers an oversized head 400
        size = 8 * MiB
        buf, ended = exchange(srv.port, _post_head(srv.port, length=size) + b"\r\n", b"x" * size)
        assert_refusal(buf, ended, 413)
    finally:
        srv.stop()
