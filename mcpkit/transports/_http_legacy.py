"""Legacy (2025-11-25) Streamable HTTP: ``Mcp-Session-Id`` sessions beside the stateless wire.

``initialize`` creates a session (validated first, capped in number, expired when idle);
session requests may be answered on an SSE stream that also carries the server's own
requests (sampling, elicitation, roots) and notifications; GET opens the session's stream
for list changes and resource updates; DELETE ends it. A disconnect is not a cancellation
on this wire.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..protocol import codec, errors, versions

if TYPE_CHECKING:
    from ..server import Server
    from ..server._legacy import LegacySession

log = logging.getLogger("mcpkit.http")

Send = Callable[[dict], Awaitable[None]]
Receive = Callable[[], Awaitable[dict]]

_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]


class _Entry:
    __slots__ = ("session", "last_used", "stream")

    def __init__(self, session: "LegacySession") -> None:
        self.session = session
        self.last_used = time.monotonic()
        self.stream: asyncio.Queue[bytes | None] | None = None


class LegacySessions:
    """The live legacy sessions of one HTTP endpoint."""

    def __init__(self, server: "Server", *, idle_timeout: float = 1800.0, max_sessions: int = 1000,
                 keepalive: float = 15.0) -> None:
        self.server = server
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.keepalive = keepalive
        self._sessions: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def _idle(self, entry: _Entry, now: float) -> bool:
        # An open GET stream is a client still listening: that session is not idle.
        return entry.stream is None and now - entry.last_used > self.idle_timeout

    def _expire(self, sid: str, entry: _Entry) -> None:
        self._sessions.pop(sid, None)
        entry.session.close()
        if entry.stream is not None:
            entry.stream.put_nowait(None)

    def _sweep(self) -> None:
        now = time.monotonic()
        for sid, entry in [(sid, e) for sid, e in self._sessions.items() if self._idle(e, now)]:
            self._expire(sid, entry)

    def get(self, sid: str) -> _Entry | None:
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = time.monotonic()
        if self._idle(entry, now):
            self._expire(sid, entry)
            return None
        entry.last_used = now
        return entry

    def close_all(self) -> None:
        for e in self._sessions.values():
            e.session.close()
            if e.stream is not None:
                e.stream.put_nowait(None)
        self._sessions.clear()

    # ------------------------------------------------------------------ POST
    async def post(self, msg: Any, hdrs: dict, send: Send) -> None:
        sid = hdrs.get("mcp-session-id")
        version = hdrs.get("mcp-protocol-version")
        if version is not None and version.strip() not in versions.LEGACY_VERSIONS:
            await _json(send, 400, codec.encode_error(getattr(msg, "id", None), errors.invalid_request(
                f"unsupported MCP-Protocol-Version {version.strip()!r} for a session request")))
            return
        if type(msg) is codec.Request and msg.method == "initialize" and sid is None:
            await self._initialize(msg, send)
            return
        if sid is None:
            if type(msg) is codec.Notification:
                await _accepted(send)  # nothing to attach it to; harmless
                return
            await _json(send, 400, codec.encode_error(getattr(msg, "id", None), errors.invalid_request(
                "missing Mcp-Session-Id header: send initialize first (or use 2026-07-28 with params._meta)")))
            return
        entry = self.get(sid.strip())
        if entry is None:
            await _json(send, 404, codec.encode_error(getattr(msg, "id", None), errors.invalid_request(
                "unknown or expired session: send initialize again")))
            return
        session = entry.session
        if type(msg) is codec.Notification:
            session.handle_notification(msg)
            await _accepted(send)
        elif type(msg) is codec.Response:
            session.handle_response(msg)
            await _accepted(send)
        else:
            await _LegacyExchange(session, msg, send).run()

    async def _initialize(self, req: codec.Request, send: Send) -> None:
        from ..server._legacy import LegacySession

        # Validate before creating anything: a flood of bad initializes must cost nothing.
        bad = LegacySession.validate_initialize(codec.params_dict(req.params))
        if bad is not None:
            await _json(send, 400, codec.encode_error(req.id, bad))
            return
        if len(self._sessions) >= self.max_sessions:
            self._sweep()
            if len(self._sessions) >= self.max_sessions:
                await _json(send, 503, codec.encode_error(req.id, errors.internal_error(
                    "too many open sessions; try again later or use 2026-07-28 (stateless)")))
                return
        sid = secrets.token_urlsafe(24)  # visible ASCII only
        entry = _Entry(LegacySession(self.server))
        entry.session.send = self._stream_sender(entry)
        reply = await entry.session.handle(req)
        if reply.error_code is not None:
            entry.session.close()
            await _json(send, 400, reply.body)
            return
        self._sessions[sid] = entry
        await _json(send, 200, reply.body, [(b"mcp-session-id", sid.encode())])

    def _stream_sender(self, entry: _Entry) -> Callable[[bytes], Awaitable[None]]:
        async def send_on_stream(data: bytes) -> None:
            if entry.stream is not None:
                entry.stream.put_nowait(data)
            # No GET stream open: the spec lets a server drop session-level messages then.

        return send_on_stream

    # ------------------------------------------------------------------ GET / DELETE
    async def get_stream(self, hdrs: dict, receive: Receive, send: Send) -> None:
        entry = self.get(hdrs["mcp-session-id"].strip())
        if entry is None:
            await _json(send, 404, codec.encode_error(None, errors.invalid_request("unknown or expired session")))
            return
        if entry.stream is not None:
            entry.stream.put_nowait(None)  # one GET stream per session: the newest wins
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        entry.stream = queue
        await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            queue.put_nowait(None)

        watcher = asyncio.ensure_future(watch())
        try:
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), self.keepalive)
                except asyncio.TimeoutError:
                    await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
                    continue
                if item is None:
                    break
                await send({"type": "http.response.body", "body": b"event: message\ndata: " + item + b"\n\n", "more_body": True})
                entry.last_used = time.monotonic()
        except OSError:
            pass
        finally:
            watcher.cancel()
            if entry.stream is queue:
                entry.stream = None
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:
            pass

    async def delete(self, hdrs: dict, send: Send) -> None:
        sid = hdrs["mcp-session-id"].strip()
        entry = self._sessions.pop(sid, None)
        if entry is None:
            await _json(send, 404, codec.encode_error(None, errors.invalid_request("unknown or expired session")))
            return
        entry.session.close()
        if entry.stream is not None:
            entry.stream.put_nowait(None)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


class _LegacyExchange:
    """One session request: JSON, or SSE once a notification or server request must go first."""

    __slots__ = ("session", "req", "send", "streaming")

    def __init__(self, session: "LegacySession", req: codec.Request, send: Send) -> None:
        self.session = session
        self.req = req
        self.send = send
        self.streaming = False

    async def _emit(self, data: bytes) -> None:
        if not self.streaming:
            self.streaming = True
            await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        await self.send({"type": "http.response.body", "body": b"event: message\ndata: " + data + b"\n\n", "more_body": True})

    async def run(self) -> None:
        session, req = self.session, self.req
        task = asyncio.current_task()
        session.inflight[req.id] = task  # type: ignore[assignment]
        try:
            reply = await session.handle(req, self._emit)
        except asyncio.CancelledError:
            reply = None  # cancelled by notifications/cancelled: no response is sent
            if not session.closed and task is not None and task.cancelling():
                task.uncancel()
        finally:
            session.inflight.pop(req.id, None)
        if self.streaming:
            body = b"" if reply is None else b"event: message\ndata: " + reply.body + b"\n\n"
            await self.send({"type": "http.response.body", "body": body, "more_body": False})
        elif reply is None:
            await _accepted(send=self.send)
        else:
            await _json(self.send, 200, reply.body)


async def _json(send: Send, status: int, body: bytes, extra: list | None = None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _accepted(send: Send) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
