"""Legacy (2025-11-25) Streamable HTTP: ``Mcp-Session-Id`` sessions beside the stateless wire.

``initialize`` creates a session (validated first, by the router; capped in number; expired
when idle); session requests may be answered on an SSE stream that also carries the
server's own requests (sampling, elicitation, roots) and notifications; GET opens the
session's stream for list changes and resource updates; DELETE ends it. A disconnect is not
a cancellation on this wire: ``notifications/cancelled`` is, and the session handles it.

Which POST lands here is decided by :mod:`mcpkit.protocol.routing`; this module only
keeps sessions (:class:`SessionRegistry`) and serves them (:class:`LegacyEndpoint`).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from ..protocol import codec, errors, sse
from . import _asgi
from ._asgi import Receive, Send
from ._interface import Dispatcher, LegacyPeer

_STREAM_OPEN = sse.comment("stream open")


class _Entry:
    """One live session: its peer, when it was last used, and its GET stream (when open)."""

    __slots__ = ("peer", "last_used", "stream", "owner")

    peer: LegacyPeer

    def __init__(self, owner: str | None = None) -> None:
        #: The key of the principal that opened the session (None without OAuth): only it may use it.
        self.owner = owner
        self.last_used = time.monotonic()
        self.stream: asyncio.Queue[bytes | None] | None = None

    async def push(self, data: bytes) -> None:
        """The session-level channel: onto the GET stream, if one is open."""
        if self.stream is not None:
            self.stream.put_nowait(data)
        # No GET stream open: the spec lets a server drop session-level messages then.

    def open_stream(self) -> asyncio.Queue[bytes | None]:
        self.end_stream()  # one GET stream per session: the newest wins
        self.stream = asyncio.Queue()
        return self.stream

    def end_stream(self) -> None:
        if self.stream is not None:
            self.stream.put_nowait(None)

    def close(self) -> None:
        self.peer.close()
        self.end_stream()


class SessionRegistry:
    """The live sessions of one endpoint, by ``Mcp-Session-Id``.

    In process memory; the one place to change for a shared store. A session with an open
    GET stream is a client still listening, so it never counts as idle.
    """

    def __init__(self, *, idle_timeout: float = 1800.0, max_sessions: int = 1000) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def has_room(self) -> bool:
        """Whether one more session fits (idle ones are swept first when it is full)."""
        if len(self._sessions) >= self.max_sessions:
            now = time.monotonic()
            for sid in [sid for sid, e in self._sessions.items() if self._idle(e, now)]:
                self._sessions.pop(sid).close()
        return len(self._sessions) < self.max_sessions

    def add(self, entry: _Entry) -> str:
        """Register a session; returns its new id (visible ASCII only)."""
        sid = secrets.token_urlsafe(24)
        self._sessions[sid] = entry
        return sid

    def get(self, sid: str) -> _Entry | None:
        """The live session (marked as used now), or None when unknown or expired (then ended)."""
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = time.monotonic()
        if self._idle(entry, now):
            del self._sessions[sid]
            entry.close()
            return None
        entry.last_used = now
        return entry

    def remove(self, sid: str) -> bool:
        """End a session; False when there was none by that id."""
        entry = self._sessions.pop(sid, None)
        if entry is None:
            return False
        entry.close()
        return True

    def close_all(self) -> None:
        for entry in self._sessions.values():
            entry.close()
        self._sessions.clear()

    def _idle(self, entry: _Entry, now: float) -> bool:
        return entry.stream is None and now - entry.last_used > self.idle_timeout


class LegacyEndpoint:
    """Serves the session wire of one HTTP endpoint."""

    def __init__(self, server: Dispatcher, *, idle_timeout: float = 1800.0, max_sessions: int = 1000,
                 keepalive: float = 15.0) -> None:
        self.server = server
        self.keepalive = keepalive
        self.sessions = SessionRegistry(idle_timeout=idle_timeout, max_sessions=max_sessions)

    # ------------------------------------------------------------------ POST
    def _lookup(self, sid: str, principal: Any) -> _Entry | None:
        """The session ``sid``, if it exists and belongs to ``principal`` (another caller's
        session is reported as unknown: its existence is not revealed)."""
        entry = self.sessions.get(sid)
        if entry is None or entry.owner != (principal.key if principal is not None else None):
            return None
        return entry

    async def initialize(self, req: codec.Request, send: Send, principal: Any = None) -> None:
        """A valid ``initialize`` without a session: open one, if there is room."""
        if not self.sessions.has_room():
            await _asgi.respond_error(send, 503, errors.internal_error(
                "too many open sessions; try again later or use 2026-07-28 (stateless)"), req.id)
            return
        entry = _Entry(principal.key if principal is not None else None)
        entry.peer = self.server.open_legacy_session(send=entry.push)
        reply = await (entry.peer.handle(req) if principal is None else entry.peer.handle(req, auth=principal))
        if reply.error_code is not None:
            entry.peer.close()
            await _asgi.respond_json(send, 400, reply.body)
            return
        sid = self.sessions.add(entry)
        await _asgi.respond_json_with(send, 200, reply.body, [(b"mcp-session-id", sid.encode())])

    async def deliver(self, sid: str, msg: codec.Message, send: Send, principal: Any = None) -> None:
        """A message for session ``sid``."""
        entry = self._lookup(sid, principal)
        if entry is None:
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session: send initialize again"),
                                      getattr(msg, "id", None))
            return
        peer = entry.peer
        if type(msg) is codec.Request:
            await _serve(peer, msg, send, principal)
            return
        if type(msg) is codec.Notification:
            peer.handle_notification(msg)  # notifications/cancelled included: the session cancels by id
        else:
            assert type(msg) is codec.Response
            peer.handle_response(msg)
        await _asgi.respond_empty(send, 202)

    # ------------------------------------------------------------------ GET / DELETE
    async def open_stream(self, sid: str, receive: Receive, send: Send, principal: Any = None) -> None:
        """GET: the session's own stream, until the client leaves or the session ends."""
        entry = self._lookup(sid, principal)
        if entry is None:
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session"))
            return
        queue = entry.open_stream()
        await _asgi.start_stream(send)
        await _asgi.send_comment(send, _STREAM_OPEN)
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(_asgi.watch_disconnect(receive, lambda: queue.put_nowait(None)))
        pinger = loop.create_task(_asgi.keep_alive(send, self.keepalive, wait_first=True))
        try:
            while (item := await queue.get()) is not None:
                await _asgi.send_event(send, item)
                entry.last_used = time.monotonic()
        except OSError:
            pass
        finally:
            watcher.cancel()
            pinger.cancel()
            if entry.stream is queue:
                entry.stream = None
        try:
            await _asgi.end_stream(send)
        except Exception:
            pass

    async def end(self, sid: str, send: Send, principal: Any = None) -> None:
        """DELETE: end the session."""
        if self._lookup(sid, principal) is None or not self.sessions.remove(sid):
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session"))
            return
        await _asgi.respond_empty(send, 200)

    def close_all(self) -> None:
        self.sessions.close_all()


async def _serve(peer: LegacyPeer, req: codec.Request, send: Send, principal: Any = None) -> None:
    """One session request: JSON, or SSE once a notification or server request must go first."""
    exchange = _asgi.Exchange(send)
    task = asyncio.current_task()
    if task is not None:
        peer.inflight[req.id] = task  # so notifications/cancelled can find it
    body: bytes | None
    try:
        reply = await (peer.handle(req, exchange.message) if principal is None else
                       peer.handle(req, exchange.message, auth=principal))
        body = reply.body
    except asyncio.CancelledError:
        body = None  # cancelled by notifications/cancelled: no response is sent
        if not peer.closed and task is not None and task.cancelling():
            task.uncancel()
    finally:
        peer.inflight.pop(req.id, None)
    await exchange.finish(body)
