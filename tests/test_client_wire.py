"""The client's lean HTTP/1.1 transport (mcpkit.client._wire) against real uvicorn on 127.0.0.1
and raw socket servers: keep-alive reuse, idle connections the server closed, bodies streamed
as they arrive, a server dying mid-body, timeouts, size limits and garbage."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit.client import _wire
from mcpkit.client._http import HttpTransport, credentials_visible
from mcpkit.errors import ResponseTooLarge
from tests.helpers.paths import ROOT
from tests.helpers.servers import ServerProcess, running_server

pytestmark = pytest.mark.skipif(not _wire.available(), reason="httptools (the fast extra) is not installed")

APP = ROOT / "tests" / "servers" / "wire_app.py"
_LOOP: list[str] = ["asyncio"]


@pytest.fixture(autouse=True, params=["asyncio", "uvloop"])
def loop_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test on asyncio's own loop and on uvloop (the proxy's backend runs on it)."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop")
    _LOOP[0] = request.param
    yield request.param
    _LOOP[0] = "asyncio"


def run(coro: Any, limit: float) -> Any:
    factory = None
    if _LOOP[0] == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(asyncio.wait_for(coro, limit))


def _argv(keep_alive: int = 5):
    return lambda port: [sys.executable, str(APP), str(port), str(keep_alive)]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running_server(_argv(), path="/peer") as url:
        yield url.rsplit("/", 1)[0]


def lean(**kw: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=_wire.WireTransport(), timeout=httpx.Timeout(None, connect=5.0), **kw)  # type: ignore[arg-type]


def test_keep_alive_reuses_one_connection(base: str) -> None:
    async def go() -> set[str]:
        async with lean() as c:
            return {(await c.get(base + "/peer")).text for _ in range(5)}
    assert len(run(go(), 20)) == 1


def test_request_bodies_bytes_and_streamed(base: str) -> None:
    async def parts():
        for i in range(3):
            yield b"part%d," % i
            await asyncio.sleep(0)

    async def go() -> tuple[str, str, str]:
        async with lean() as c:
            a = (await c.post(base + "/echo", content=b"hello")).text
            b = (await c.post(base + "/echo", content=parts())).text  # chunked on the wire
            e = (await c.post(base + "/echo")).text
            return a, b, e
    assert run(go(), 20) == ("5:hello", "18:part0,part1,part2,", "0:")


def test_a_connection_the_server_closed_while_idle_is_dropped_and_the_next_request_works() -> None:
    with running_server(_argv(keep_alive=1), path="/peer") as url:
        async def go() -> tuple[str, str, bool]:
            async with lean() as c:
                first = (await c.get(url)).text
                pool = next(iter(c._transport._pools.values()))  # type: ignore[attr-defined]
                idle = pool.idle[0]
                deadline = time.monotonic() + 5
                while not idle.closed and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)  # noticed by the protocol's callbacks, nothing polls
                noticed = idle.closed and not pool.idle
                return first, (await c.get(url)).text, noticed
        first, second, noticed = run(go(), 20)
    assert noticed
    assert first != second  # a new connection


def test_chunked_and_sse_bodies_arrive_as_sent(base: str) -> None:
    async def go(path: str) -> list[tuple[float, str]]:
        got: list[tuple[float, str]] = []
        async with lean() as c, c.stream("GET", base + path) as resp:
            t0 = time.monotonic()
            it = resp.aiter_lines() if "sse" in path else resp.aiter_bytes()
            async for piece in it:
                if piece:
                    got.append((time.monotonic() - t0, piece if isinstance(piece, str) else piece.decode()))
        return got

    pieces = run(go("/chunks?n=3&gap=0.4"), 20)
    assert "".join(p for _, p in pieces) == "piece 0;piece 1;piece 2;"
    assert pieces[0][0] < 0.3 and pieces[-1][0] > 0.6  # the first before the rest were sent
    events = run(go("/sse?n=3&gap=0.4"), 20)
    assert [p for _, p in events] == ["data: event 0", "data: event 1", "data: event 2"]
    assert events[0][0] < 0.3 and events[-1][0] > 0.6


def test_a_server_dying_mid_body_is_a_remote_protocol_error() -> None:
    with running_server(_argv(), path="/peer") as url:
        async def go() -> None:
            async with lean() as c:
                await c.get(url.replace("/peer", "/die"))
        with pytest.raises(httpx.RemoteProtocolError, match="before the end of the body"):
            run(go(), 20)


def test_read_and_connect_failures_are_httpx_errors(base: str) -> None:
    async def slow() -> None:
        async with lean() as c:
            await c.get(base + "/slow?s=3", timeout=httpx.Timeout(5.0, read=0.3))
    with pytest.raises(httpx.ReadTimeout):
        run(slow(), 20)

    srv = ServerProcess(_argv())  # a free port nothing listens on
    srv.proc.kill()
    srv.proc.wait()
    srv.stop()

    async def refused() -> None:
        async with lean() as c:
            await c.get(srv.url)
    with pytest.raises(httpx.ConnectError, match="refused"):
        run(refused(), 20)


def test_a_timed_out_connection_is_not_reused(base: str) -> None:
    async def go() -> tuple[str, str]:
        async with lean() as c:
            before = (await c.get(base + "/peer")).text
            with pytest.raises(httpx.ReadTimeout):
                await c.get(base + "/slow?s=1", timeout=httpx.Timeout(5.0, read=0.2))
            return before, (await c.get(base + "/peer")).text
    before, after = run(go(), 20)
    assert before != after


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_answer_is_refused_and_the_client_goes_on(base: str, chunked: bool) -> None:
    async def go() -> str:
        t = HttpTransport(base + f"/big?n=50000{'&chunked=1' if chunked else ''}", max_response_bytes=10000)
        await t.start()
        try:
            assert isinstance(t._client._transport, _wire.WireTransport)  # type: ignore[union-attr]
            with pytest.raises(ResponseTooLarge, match="longer than 10000 bytes"):
                await t.request(1, "tools/list", {}, None)
            t.url = base + "/peer"
            answer = await t.request(2, "tools/list", {}, None)  # the next request is answered
            assert answer.status == 200 and "without a JSON-RPC body" in answer.problem
            pool = next(iter(t._client._transport._pools.values()))  # type: ignore[union-attr]
            return f"{pool.open} open"
        finally:
            await t.close()
    assert run(go(), 20) == "1 open"


async def _raw_server(replies: list[bytes]) -> tuple[asyncio.Server, str]:
    """A socket server answering each connection's request with the next of ``replies``."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(replies.pop(0))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/x"


@pytest.mark.parametrize("garbage", [b"HELLO WORLD\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n",
                                     b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                                     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b""])
def test_garbage_is_a_remote_protocol_error_and_the_client_keeps_working(garbage: bytes) -> None:
    good = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    async def go() -> str:
        server, url = await _raw_server([garbage, good])
        async with server, lean() as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.get(url)
            return (await c.get(url)).text
    assert run(go(), 20) == "ok"


def test_a_body_until_close_and_extra_bytes_after_an_answer() -> None:
    async def go() -> tuple[str, str, str]:
        server, url = await _raw_server([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end",
                                         b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nyHTTP/1.1 200 OK\r\n",
                                         b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"])
        async with server, lean() as c:
            return (await c.get(url)).text, (await c.get(url)).text, (await c.get(url)).text
    assert run(go(), 20) == ("to the end", "y", "z")


def test_mcpkit_uses_it_unless_opted_out_or_a_proxy_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    url = "http://127.0.0.1:9/mcp"
    c = _wire.client(url)
    assert isinstance(c._transport, _wire.WireTransport)
    assert credentials_visible(c)  # it sends the headers httpx built, as built
    assert not isinstance(_wire.client("https://example.test/mcp")._transport, _wire.WireTransport)
    monkeypatch.setenv("MCPKIT_HTTP_TRANSPORT", "httpx")
    assert not isinstance(_wire.client(url)._transport, _wire.WireTransport)
    monkeypatch.delenv("MCPKIT_HTTP_TRANSPORT")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    proxied = _wire.client(url)
    assert not isinstance(proxied._transport, _wire.WireTransport) and proxied._mounts  # httpx applies it
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:3128")
    assert not isinstance(_wire.client(url)._transport, _wire.WireTransport)
    monkeypatch.delenv("ALL_PROXY")
    monkeypatch.setattr(_wire, "httptools", None)  # the fast extra is not installed
    assert not isinstance(_wire.client(url)._transport, _wire.WireTransport)


def test_a_client_over_the_lean_transport_calls_tools() -> None:
    from mcpkit import Client
    from tests.helpers.servers import mcpkit_serve_argv

    with running_server(mcpkit_serve_argv(ROOT / "bench" / "servers" / "echo_mcpkit.py")) as url:
        async def go() -> list[str]:
            async with Client(url) as c:
                return [(await c.call_tool("echo", {"text": f"hi {i}"})).content[0].text for i in range(3)]  # type: ignore[union-attr]
        assert run(go(), 30) == ["hi 0", "hi 1", "hi 2"]


def test_the_pool_is_bounded_and_idle_connections_expire(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_wire, "MAX_CONNECTIONS", 1)
    monkeypatch.setattr(_wire, "IDLE_EXPIRY", 0.3)

    async def go() -> tuple[list[str], int]:
        async with lean() as c:
            slow = asyncio.ensure_future(c.get(base + "/slow?s=0.5"))
            await asyncio.sleep(0.1)
            with pytest.raises(httpx.PoolTimeout):  # the one connection is busy
                await c.get(base + "/peer", timeout=httpx.Timeout(5.0, pool=0.1))
            waiting = asyncio.ensure_future(c.get(base + "/peer"))  # waits for it, then reuses it
            texts = [(await slow).text, (await waiting).text]
            pool = next(iter(c._transport._pools.values()))  # type: ignore[attr-defined]
            await asyncio.sleep(0.6)
            return texts, len(pool.idle) + pool.open
    texts, left = run(go(), 20)
    assert texts[0] == "late" and ":" in texts[1]
    assert left == 0  # the idle one expired and closed


def test_concurrent_requests_keep_at_most_max_idle(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_wire, "MAX_IDLE", 3)

    async def go() -> tuple[int, int, int]:
        async with lean() as c:
            answers = await asyncio.gather(*(c.get(base + "/slow?s=0.2") for _ in range(8)))
            pool = next(iter(c._transport._pools.values()))  # type: ignore[attr-defined]
            return sum(a.text == "late" for a in answers), len(pool.idle), pool.open
    assert run(go(), 20) == (8, 3, 3)


def test_large_bodies_both_ways_with_flow_control(base: str) -> None:
    piece = bytes(range(256)) * 400  # 100 KiB

    async def parts():
        for _ in range(40):
            yield piece

    async def go() -> tuple[int, bool, str]:
        async with lean() as c:
            resp = await c.post(base + "/echo", content=parts())  # 4 MiB up, chunked; 4 MiB back
            head, _, body = resp.content.partition(b":")
            return int(head), body == piece * 40, (await c.get(base + "/peer")).text
    size, same, _ = run(go(), 60)
    assert size == 40 * len(piece) and same
