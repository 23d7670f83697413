"""The lean request path of the client's HTTP transport (mcpkit.client._lean): a POST written
straight on a pooled lean-transport connection, against real uvicorn and raw socket servers on
127.0.0.1: the headers it sends, keep-alive reuse, chunked, SSE, compressed and cookie answers,
redirects, and bad answers (a truncated body, a bad status line, a connection closed mid-answer
or before it), each a clear error, with the next request working."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit.client import Client, _lean, _wire
from mcpkit.client._http import HttpTransport
from mcpkit.errors import TransportError
from tests.helpers.paths import ROOT
from tests.helpers.servers import running_server

pytestmark = pytest.mark.skipif(not _wire.available(), reason="httptools (the fast extra) is not installed")

OK = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'


def run(coro: Any, limit: float = 20) -> Any:
    return asyncio.run(asyncio.wait_for(coro, limit))


def reply(body: bytes = OK, status: str = "200 OK", headers: bytes = b"content-type: application/json\r\n") -> bytes:
    return b"HTTP/1.1 %b\r\n%bcontent-length: %d\r\n\r\n%b" % (status.encode(), headers, len(body), body)


class Close(bytes):
    """A reply after which the server closes the connection."""


async def _server(replies: list[bytes | None]) -> tuple[asyncio.Server, str, list[bytes]]:
    """A keep-alive socket server: each request (head and Content-Length body) gets the next of
    ``replies`` written as is (None: the connection is closed unanswered); a reply containing
    ``Connection: close`` (or a :class:`Close`) closes the connection after it. The requests it read are recorded."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                seen.append(head + await reader.readexactly(length))
                answer = replies.pop(0)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if isinstance(answer, Close) or b"connection: close" in answer.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp", seen


def _no_httpx_send(t: HttpTransport) -> None:
    """Make the usual path fail loudly: what passes went the lean way."""
    async def refuse(*a: Any, **kw: Any) -> Any:
        raise AssertionError("the request went through httpx's client layer")
    assert t._client is not None
    t._client.send = refuse  # type: ignore[method-assign]


def test_a_json_answer_is_read_on_the_lean_path_with_the_headers_httpx_would_send() -> None:
    async def go() -> tuple[list[Any], list[bytes], int]:
        server, url, seen = await _server([reply(), reply(), reply(b'{"jsonrpc":"2.0","id":3,"result":{}}')])
        async with server:
            t = HttpTransport(url, headers={"X-Static": "s"})
            await t.start()
            _no_httpx_send(t)
            try:
                meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
                got = [await t.request(i, "tools/call", {"name": "echo", "arguments": {}, "_meta": meta}, None)
                       for i in (1, 2, 3)]
                pool = next(iter(t._wire._pools.values()))
                return [(a.status, a.message.result if a.message else None, a.credentials is not None,
                         a.headers.get("Content-Type")) for a in got], seen, pool.open
            finally:
                await t.close()
    answers, seen, open_ = run(go())
    assert answers == [(200, {"ok": True}, True, "application/json")] * 2 + [(200, {}, True, "application/json")]
    assert open_ == 1  # one keep-alive connection for all three
    head = seen[0].split(b"\r\n\r\n")[0].decode().lower().split("\r\n")
    assert head[0] == "post /mcp http/1.1"
    for line in ("host: 127.0.0.1:", "accept: application/json, text/event-stream", "content-type: application/json",
                 "mcp-method: tools/call", "mcp-name: echo", "mcp-protocol-version: 2026-07-28", "x-static: s",
                 "user-agent: python-httpx/", "accept-encoding: ", "connection: keep-alive", "content-length: "):
        assert any(h.startswith(line) for h in head), line
    assert json.loads(seen[0].split(b"\r\n\r\n", 1)[1])["method"] == "tools/call"


@pytest.mark.parametrize(("bad", "error"), [
    (Close(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\""),
     "before the end of the body"),
    (b"HELLO WORLD\r\n\r\n", "malformed HTTP response"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "malformed HTTP response"),
    (None, "disconnected without sending a response"),
    (Close(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{\"jso"),
     "before the end of the body"),
])
def test_a_bad_answer_is_a_clear_error_and_the_next_request_works(bad: bytes | None, error: str) -> None:
    async def go() -> Any:
        server, url, _ = await _server([bad, reply()])
        async with server:
            t = HttpTransport(url)
            await t.start()
            try:
                with pytest.raises(TransportError, match=error):
                    await t.request(1, "tools/list", {}, None)
                answer = await t.request(1, "tools/list", {}, None)
                return answer.message.result if answer.message else answer.problem
            finally:
                await t.close()
    assert run(go()) == {"ok": True}


def test_chunked_sse_and_gzip_answers_and_a_server_closing_keep_alive() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
               b"10\r\n" + OK[:16] + b"\r\n%x\r\n" % (len(OK) - 16) + OK[16:] + b"\r\n0\r\n\r\n")
    sse = b"event: message\ndata: " + OK + b"\n\n"
    packed = gzip.compress(OK)

    async def go() -> list[Any]:
        server, url, _ = await _server([
            chunked,
            reply(sse, headers=b"content-type: text/event-stream\r\n"),
            reply(packed, headers=b"content-type: application/json\r\ncontent-encoding: gzip\r\n"),
            reply(headers=b"content-type: application/json\r\nconnection: close\r\n"),
            reply(),
        ])
        async with server:
            t = HttpTransport(url)
            await t.start()
            _no_httpx_send(t)
            try:
                return [(await t.request(1, "tools/list", {}, None)).message.result for _ in range(5)]  # type: ignore[union-attr]
            finally:
                await t.close()
    assert run(go()) == [{"ok": True}] * 5


def test_cookies_are_kept_and_then_sent_the_usual_way() -> None:
    async def go() -> list[bytes]:
        server, url, seen = await _server([
            reply(headers=b"content-type: application/json\r\nset-cookie: lb=node7; Path=/\r\n"), reply()])
        async with server:
            t = HttpTransport(url)
            try:
                for _ in range(2):
                    await t.request(1, "tools/list", {}, None)
            finally:
                await t.close()
        return seen
    seen = run(go())
    assert b"cookie: lb=node7" in seen[1].lower()


def test_a_same_origin_307_on_the_lean_path_is_followed_once() -> None:
    async def go() -> tuple[Any, list[bytes], str]:
        server, url, seen = await _server([
            reply(b"", "307 Temporary Redirect", b"location: /moved\r\n"), reply()])
        async with server:
            t = HttpTransport(url)
            try:
                answer = await t.request(1, "tools/list", {}, None)
                return answer.message.result if answer.message else answer.problem, seen, t.url  # type: ignore[union-attr]
            finally:
                await t.close()
    result, seen, now = run(go())
    assert result == {"ok": True}
    assert [s.split(b" ")[1] for s in seen] == [b"/mcp", b"/moved"]
    assert now.endswith("/moved")


def test_a_cross_origin_redirect_on_the_lean_path_is_not_followed() -> None:
    async def go() -> str:
        server, url, seen = await _server([reply(b"", "302 Found", b"location: http://example.invalid/x\r\n")])
        async with server:
            t = HttpTransport(url)
            try:
                return (await t.request(1, "tools/list", {}, None)).problem
            finally:
                await t.close()
    assert "another origin" in run(go())


def test_a_cancelled_request_closes_its_connection_and_the_next_works() -> None:
    async def go() -> tuple[Any, int]:
        server, url, _ = await _server([reply()])  # answers only the second connection's request
        slow_replies: list[bytes | None] = []

        async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()
        slow = await asyncio.start_server(never, "127.0.0.1", 0)
        async with server, slow:
            t = HttpTransport(f"http://127.0.0.1:{slow.sockets[0].getsockname()[1]}/mcp")
            try:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(t.request(1, "tools/list", {}, None), 0.3)
                pool = next(iter(t._wire._pools.values()))
                assert pool.open == 0 and not pool.idle
            finally:
                await t.close()
            t = HttpTransport(url)
            try:
                answer = await t.request(1, "tools/list", {}, None)
                return answer.message.result if answer.message else None, len(slow_replies)
            finally:
                await t.close()
    assert run(go()) == ({"ok": True}, 0)


def test_headers_that_are_not_plain_ascii_go_the_usual_way() -> None:
    lp = _lean.LeanPost("http://127.0.0.1:9/mcp", httpx.AsyncClient(), _wire.WireTransport())
    assert lp.head({"X-A": "ok"}, 2) is not None
    for bad in ({"X-A": "a\r\nX-Injected: 1"}, {"X-A": "caf\u00e9"}, {"Bad Name": "v"}, {"Host": "elsewhere"},
                {"Content-Length": "1"}):
        assert lp.head(bad, 2) is None, bad


def test_wire_headers_read_like_httpx_headers() -> None:
    h = _lean.WireHeaders([(b"WWW-Authenticate", b'Bearer realm="a"'), (b"www-authenticate", b"DPoP"),
                           (b"Content-Type", b"application/json")])
    assert h["content-type"] == h.get("CONTENT-TYPE") == "application/json"
    assert "Www-Authenticate" in h and "x" not in h
    assert h.get_list("WWW-AUTHENTICATE") == ['Bearer realm="a"', "DPoP"]
    assert h["www-authenticate"] == 'Bearer realm="a", DPoP'
    assert h.get("missing") is None and len(h) == 2


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    argv = [sys.executable, str(ROOT / "bench" / "servers" / "echo_mcpkit.py"), "http"]
    with running_server(lambda port: [*argv, str(port)], path="/mcp") as url:
        yield url


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_a_client_on_real_uvicorn_calls_over_the_lean_path_in_both_eras(echo_url: str, mode: str) -> None:
    async def go() -> list[Any]:
        async with Client(echo_url, mode=mode) as c:
            out = []
            for i in range(3):
                r = await c.call_tool("echo", {"text": f"t{i}"})
                out.append(r.content[0].text if r.content else None)  # type: ignore[union-attr]
            return out
    assert run(go(), 60) == ["t0", "t1", "t2"]


def test_a_request_head_is_kept_per_set_of_headers_and_a_bad_set_is_never_sent() -> None:
    lp = _lean.LeanPost("http://127.0.0.1:9/mcp", httpx.AsyncClient(), _wire.WireTransport())
    first = lp.prepared({"Authorization": "Bearer one", "X-A": "1"})
    again = lp.prepared({"Authorization": "Bearer one", "X-A": "1"})
    other = lp.prepared({"Authorization": "Bearer two", "X-A": "1"})
    assert first is not None and other is not None and again is first
    assert b"Authorization: Bearer one\r\n" in first[0] and b"Authorization: Bearer two\r\n" in other[0]
    assert first[1] != other[1]  # the credentials' partition follows the header, never a stale one
    assert not first[0].endswith(b"\r\n\r\n")  # the Content-Length and the body come per request
    for bad in ({"X-A": "a\r\nX-Injected: 1"}, {"Content-Length": "1"}):
        assert lp.prepared(bad) is None and lp.prepared(bad) is None, bad  # refused, also when asked again
    for i in range(_lean._HEADS * 2):  # a header that changes every time (a DPoP proof) keeps it bounded
        assert lp.prepared({"DPoP": f"proof-{i}"}) is not None
    assert len(lp._heads) <= _lean._HEADS
