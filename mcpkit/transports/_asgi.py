"""ASGI plumbing shared by both HTTP eras.

Plain, JSON, empty and error responses; event streams framed by :mod:`mcpkit.protocol.sse`;
:class:`Exchange`, the answer to one POST (``application/json``, or an SSE stream of the
request's own once something must be sent before the answer); keep-alives; the disconnect
watcher; and :class:`OnSuspend`, which lets the stateless exchange arm its watchers only
when a handler actually waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import Any

from ..protocol import codec, errors, sse

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Header = tuple[bytes, bytes]

_JSON = (b"content-type", b"application/json")
_PLAIN = (b"content-type", b"text/plain")
_NO_BODY = (b"content-length", b"0")


# ---------------------------------------------------------------------- whole responses
async def respond_json(send: Send, status: int, body: bytes) -> None:
    """One ``application/json`` response (the hot path's answer: keep it lean)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def respond_json_with(send: Send, status: int, body: bytes, headers: Iterable[Header]) -> None:
    """:func:`respond_json` with more headers."""
    await send({"type": "http.response.start", "status": status,
                "headers": [_JSON, (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def respond_error(send: Send, status: int, error: errors.MCPError, request_id: codec.RequestId | None = None,
                        headers: Iterable[Header] = ()) -> None:
    """A JSON-RPC error as the whole response."""
    await respond_json_with(send, status, codec.encode_error(request_id, error), headers)


async def respond_empty(send: Send, status: int = 202) -> None:
    """A response without a body (202 Accepted by default)."""
    await send({"type": "http.response.start", "status": status, "headers": [_NO_BODY]})
    await send({"type": "http.response.body", "body": b""})


async def respond(send: Send, status: int, body: bytes, content_type: bytes | None = None,
                  headers: Iterable[Header] = ()) -> None:
    """Any whole response: its content type (if any), its length, then ``headers``."""
    start = [(b"content-type", content_type)] if content_type is not None else []
    await send({"type": "http.response.start", "status": status,
                "headers": [*start, (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def respond_plain(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [_PLAIN, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------------- event streams
async def read_body(receive: Receive, send: Send, declared: str | None, limit: int) -> bytes | None:
    """A request's whole body, or None when it is over ``limit`` bytes (answered with 413
    here) or the client left. ``declared``: its ``Content-Length``, if any."""
    if declared is not None:
        try:
            too_big = int(declared) > limit
        except ValueError:
            too_big = False
        if too_big:
            await _too_large(send, limit)
            return None
    msg = await receive()
    body: bytes = msg.get("body", b"")
    if not msg.get("more_body"):
        if len(body) > limit:
            await _too_large(send, limit)
            return None
        return body
    chunks = [body]
    size = len(body)
    while msg.get("more_body"):
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return None
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            await _too_large(send, limit)
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _too_large(send: Send, limit: int) -> None:
    # Connection: close: the rest of the body is not wanted; the server drains a bounded
    # amount of it before closing (a lingering close), instead of reading all of it.
    await respond_error(send, 413, errors.invalid_request(f"the request body is larger than {limit} bytes"),
                        headers=[(b"connection", b"close")])


async def start_stream(send: Send, headers: list[Header] = sse.HEADERS) -> None:
    """Start a ``text/event-stream`` response (status 200; ``headers``: :data:`sse.HEADERS`)."""
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def send_event(send: Send, data: bytes) -> None:
    """One JSON-RPC message on an open stream."""
    await send({"type": "http.response.body", "body": sse.frame(data), "more_body": True})


async def send_named_event(send: Send, event: bytes, data: bytes) -> None:
    """One ``event: <event>`` frame carrying ``data`` (single-line) on an open stream."""
    await send({"type": "http.response.body", "body": sse.frame(data, event=event), "more_body": True})


async def send_comment(send: Send, comment: bytes = sse.KEEPALIVE) -> None:
    """A comment frame on an open stream (a keep-alive by default)."""
    await send({"type": "http.response.body", "body": comment, "more_body": True})


async def end_stream(send: Send, last: bytes | None = None) -> None:
    """End an open stream, with one last JSON-RPC message (the answer) or none."""
    await send({"type": "http.response.body", "body": b"" if last is None else sse.frame(last), "more_body": False})


def _never() -> bool:
    return False


async def keep_alive(send: Send, interval: float, done: Callable[[], bool] = _never, *, wait_first: bool = False) -> None:
    """Send a keep-alive comment every ``interval`` seconds until ``done()`` or cancelled.

    Returns quietly when the connection fails: the disconnect watcher deals with that.
    """
    try:
        if wait_first:
            await asyncio.sleep(interval)
        while not done():
            await send_comment(send)
            await asyncio.sleep(interval)
    except Exception:
        return


async def watch_disconnect(receive: Receive, on_disconnect: Callable[[], object]) -> None:
    """Call ``on_disconnect`` when the client goes away (run as a task; cancel it when done)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    on_disconnect()


class Exchange:
    """The answer to one POSTed request: ``application/json``, unless a message has to go
    first (a notification, a server-to-client request); then an SSE stream that belongs to
    this request alone and ends with the answer."""

    __slots__ = ("send", "streaming")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.streaming = False

    async def start_stream(self) -> None:
        self.streaming = True  # before the await: a concurrent message must not start it twice
        await start_stream(self.send)

    async def message(self, data: bytes) -> None:
        """Send one encoded JSON-RPC message ahead of the answer (switches to SSE)."""
        if not self.streaming:
            await self.start_stream()
        await send_event(self.send, data)

    async def finish(self, body: bytes | None, status: int = 200) -> None:
        """Send the answer; None (e.g. cancelled) ends the stream bare, or answers 202."""
        if self.streaming:
            await end_stream(self.send, body)
        elif body is None:
            await respond_empty(self.send, 202)
        else:
            await respond_json(self.send, status, body)


class OnSuspend:
    """Await a coroutine in the current task, calling ``on_suspend`` the first time it
    actually waits. Exactly ``await coro`` otherwise: values and exceptions pass through."""

    __slots__ = ("coro", "on_suspend")

    def __init__(self, coro: Any, on_suspend: Callable[[], None]) -> None:
        self.coro = coro
        self.on_suspend = on_suspend

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        value: Any = None
        error: BaseException | None = None
        first = True
        while True:
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                return stop.value
            if first:
                first = False
                self.on_suspend()
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # thrown in by the task (cancellation)
                value, error = None, exc


async def lifespan(receive: Receive, send: Send, server: Any = None) -> None:
    """Answer the ASGI lifespan protocol: run ``server``'s own lifespan (``Server(lifespan=...)``)
    between startup and shutdown, when it has one (an app served by your own ASGI server)."""
    running = server.running() if server is not None and server.serving.lifespan else None
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            if running is not None:
                try:
                    await running.__aenter__()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            if running is not None:
                await running.__aexit__(None, None, None)
            await send({"type": "lifespan.shutdown.complete"})
            return
