"""The proxy's floors (bench/proxy.py's ``floor`` and ``floor-raw`` sides), and nothing of MCP.

    python bench/servers/floor_proxy.py PORT URL          # floor: a bare ASGI app on uvicorn
    python bench/servers/floor_proxy.py --raw PORT URL    # floor-raw: no HTTP server at all

``floor`` is a bare ASGI app on the same uvicorn stack as ``mcpkit proxy --http`` (httptools,
uvloop) that relays each request to the HTTP backend ``URL``: the body parsed with the standard
library's json (a proxy must read what it lets through), its bytes forwarded with the request's
own headers on a pooled keep-alive connection (an asyncio protocol, the request written in one
call, the answer read to its Content-Length: no client library), the answer's body parsed the
same way and sent back with its status and headers, head and body in one write (as mcpkit's
front writes them; uvicorn alone writes them apart). It is what any proxy on this stack pays
before it does anything of its own.

``floor-raw`` drops the HTTP server too: asyncio protocols on uvloop, each front connection
with its own backend connection, every message framed by its Content-Length, its body parsed
with json, and its bytes written on as they came, from the read callbacks (no task, no future,
no header handling). It is what a proxy written in Python on an event loop pays at the least.
Neither knows sessions, eras or errors beyond refusing what it cannot relay.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import uvicorn

#: Request headers not relayed (the relay writes its own Host and Content-Length).
_HOP = {b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding"}
#: Answer headers not relayed (uvicorn writes its own framing and date).
_ANSWER_HOP = {b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server"}


class Backend(asyncio.Protocol):
    """One keep-alive connection to the backend, one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, list[tuple[bytes, bytes]], bytes]] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("the backend closed the connection"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buf[:end]).split(b"\r\n")
        status = int(head[0].split(b" ", 2)[1])
        headers = []
        length = None
        for line in head[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            if name == b"content-length":
                length = int(value)
            headers.append((name, value))
        if length is None:
            self.fail(ConnectionError("the backend answered without Content-Length"))
            return
        if len(self.buf) < end + 4 + length:
            return
        body = bytes(self.buf[end + 4:end + 4 + length])
        del self.buf[:end + 4 + length]
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((status, headers, body))

    def fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()


class Relay:
    def __init__(self, url: str) -> None:
        where = urlsplit(url)
        self.host, self.port, self.path = where.hostname or "127.0.0.1", where.port or 80, where.path or "/"
        self.authority = f"{self.host}:{self.port}".encode()
        self.idle: list[Backend] = []

    async def connection(self) -> Backend:
        while self.idle:
            conn = self.idle.pop()
            if not conn.lost:
                return conn
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(Backend, self.host, self.port)
        return conn

    async def relay(self, method: bytes, headers: list[tuple[bytes, bytes]], body: bytes
                    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        conn = await self.connection()
        head = [method + b" " + self.path.encode() + b" HTTP/1.1", b"host: " + self.authority,
                b"content-length: " + str(len(body)).encode()]
        head.extend(name + b": " + value for name, value in headers if name not in _HOP)
        conn.waiter = asyncio.get_running_loop().create_future()
        assert conn.transport is not None
        conn.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        answer = await conn.waiter
        conn.waiter = None
        self.idle.append(conn)
        return answer


class _Coalescing:
    """A connection's transport that hands an answer's head and body to the kernel in one
    ``writelines`` (uvicorn writes them apart), as mcpkit's front does: a write is held until
    the next one or the end of the loop step it was made in."""

    def __init__(self, raw: asyncio.Transport) -> None:
        self.raw = raw
        self.held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.held is None:
            self.held = bytes(data)
            asyncio.get_running_loop().call_soon(self.flush)
        else:
            held, self.held = self.held, None
            self.raw.writelines((held, data))

    def flush(self) -> None:
        if self.held is not None:
            held, self.held = self.held, None
            self.raw.write(held)

    def close(self) -> None:
        self.flush()
        self.raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _coalescing_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class CoalescingHttpTools(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(_Coalescing(transport))  # type: ignore[arg-type]

    return CoalescingHttpTools


def app_for(relay: Relay):  # type: ignore[no-untyped-def]
    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body:
            try:
                json.loads(body)
            except ValueError:
                await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"not JSON"})
                return
        try:
            status, headers, answer = await relay.relay(scope["method"].encode(), scope["headers"], body)
        except (OSError, ConnectionError) as exc:
            await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": str(exc).encode()})
            return
        if answer and headers and any(n == b"content-type" and v.startswith(b"application/json") for n, v in headers):
            json.loads(answer)
        await send({"type": "http.response.start", "status": status,
                    "headers": [*((n, v) for n, v in headers if n not in _ANSWER_HOP),
                                (b"content-length", str(len(answer)).encode())]})
        await send({"type": "http.response.body", "body": answer})

    return app


def _framed(buf: bytearray) -> tuple[int, int] | None:
    """(end of the message, start of its body) when ``buf`` holds a whole message framed by its
    Content-Length (none: an empty body), else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).lower()
    at = head.find(b"\r\ncontent-length:")
    length = 0
    if at >= 0:
        stop = head.find(b"\r\n", at + 2)
        length = int(head[at + 17:stop if stop >= 0 else None])
    return (end + 4 + length, end + 4) if len(buf) >= end + 4 + length else None


def _messages(buf: bytearray) -> Iterator[tuple[bytes, bytes]]:
    """Each whole message at the start of ``buf`` (taken out of it), with its body."""
    while (framed := _framed(buf)) is not None:
        end, start = framed
        message = bytes(buf[:end])
        del buf[:end]
        yield message, message[start:]


class _RawBack(asyncio.Protocol):
    def __init__(self, front: _RawFront) -> None:
        self.front = front
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        for message, body in _messages(self.buf):
            if body:
                json.loads(body)
            if self.front.transport is not None and not self.front.transport.is_closing():
                self.front.transport.write(message)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.front.transport is not None:
            self.front.transport.close()


class _RawFront(asyncio.Protocol):
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.back: _RawBack | None = None
        self.queued: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            _, back = await asyncio.get_running_loop().create_connection(lambda: _RawBack(self), self.host, self.port)
        except OSError:
            if self.transport is not None:
                self.transport.close()
            return
        self.back = back
        assert back.transport is not None
        for message in self.queued:
            back.transport.write(message)
        self.queued.clear()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        for message, body in _messages(self.buf):
            if body:
                try:
                    json.loads(body)
                except ValueError:
                    assert self.transport is not None
                    self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 8\r\n\r\nnot JSON")
                    continue
            if self.back is None or self.back.transport is None:
                self.queued.append(message)
            else:
                self.back.transport.write(message)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.back is not None and self.back.transport is not None:
            self.back.transport.close()


async def _serve_raw(port: int, url: str) -> None:
    where = urlsplit(url)
    host, back_port = where.hostname or "127.0.0.1", where.port or 80
    server = await asyncio.get_running_loop().create_server(lambda: _RawFront(host, back_port), "127.0.0.1", port)
    await server.serve_forever()


def main() -> None:
    argv = sys.argv[1:]
    raw = argv[:1] == ["--raw"]
    if raw:
        argv = argv[1:]
    if len(argv) != 2:
        raise SystemExit("usage: floor_proxy.py [--raw] PORT URL")
    port, url = int(argv[0]), argv[1]
    if raw:
        import uvloop

        uvloop.run(_serve_raw(port, url))
        return
    uvicorn.run(app_for(Relay(url)), host="127.0.0.1", port=port, log_level="warning", access_log=False,
                http=_coalescing_protocol(), loop="uvloop", lifespan="off")


if __name__ == "__main__":
    main()
