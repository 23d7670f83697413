"""Legacy (2025-11-25) Streamable HTTP: ``Mcp-Session-Id`` sessions beside the stateless wire.

``initialize`` creates a session (validated first, by the router; capped in number, in all
and per client; expired when idle, soon when it never served a request); session requests
may be answered on an SSE stream that also carries the server's own requests (sampling,
elicitation, roots) and notifications; GET opens the session's stream for list changes and
resource updates; DELETE ends it. A disconnect is not a cancellation on this wire:
``notifications/cancelled`` is, and the session handles it.

Which POST lands here is decided by :mod:`mcpkit.protocol.routing`; this module only
keeps sessions (:class:`SessionRegistry`) and serves them (:class:`LegacyEndpoint`).

With a :class:`SessionStore` (e.g. ``mcpkit.backends.redis``) a session is usable from every
worker: its record lives in the store, each worker keeps a replica of the session it
refreshes from the record on every request, changes are saved (and announced) before the
answer goes out, server-to-client requests carry ids that name the asking worker (the
client's answer is forwarded there), and the worker holding the GET stream produces that
stream's notifications itself (they all come from the bus, which reaches every worker).
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..protocol import codec, errors, sse
from . import _asgi
from ._asgi import Receive, Send
from ._interface import Dispatcher, LegacyPeer

log = logging.getLogger("mcpkit.http")

_STREAM_OPEN = sse.comment("stream open")


class SessionEvents(Protocol):
    """What a shared :class:`SessionStore` tells this worker about sessions changed elsewhere."""

    def session_changed(self, sid: str, diff: dict[str, Any]) -> None:
        """Another worker changed the session: ``diff`` holds ``fields`` (new values) and the
        subscriptions ``added`` and ``removed``."""

    def session_ended(self, sid: str) -> None: ...

    def stream_claimed(self, sid: str) -> None:
        """Another worker now holds the session's GET stream (the newest wins)."""

    def session_notification(self, sid: str, body: bytes) -> None:
        """A client notification that another worker received (``notifications/cancelled``)."""

    def session_response(self, sid: str, body: bytes) -> None:
        """A client's answer to a request this worker sent, received by another worker."""


class SessionStore(Protocol):
    """Session records shared by the workers of one server (see ``mcpkit.backends.redis``).

    Methods raise :class:`~mcpkit.protocol.errors.MCPError` when the store is unreachable.
    """

    @property
    def worker_id(self) -> str: ...

    def bind(self, events: SessionEvents) -> None: ...

    async def create(self, sid: str, state: dict[str, Any], idle_timeout: float) -> None: ...

    async def load(self, sid: str, idle_timeout: float) -> dict[str, Any] | None:
        """The record (its idle expiry restarted), or None when unknown or expired."""
        ...

    async def save(self, sid: str, before: dict[str, Any] | None, after: dict[str, Any], idle_timeout: float) -> None:
        """Store what changed from ``before`` to ``after`` (only that: concurrent changes to
        other parts of the record survive) and tell the other workers, before returning."""
        ...

    async def touch(self, sid: str, idle_timeout: float) -> None: ...

    async def delete(self, sid: str) -> bool: ...

    async def claim_stream(self, sid: str) -> None: ...

    async def broadcast_cancel(self, sid: str, body: bytes) -> None: ...

    async def forward_response(self, worker: str, sid: str, body: bytes) -> bool: ...


class _Entry:
    """One live session: its peer, when it was last used, and its GET stream (when open)."""

    __slots__ = ("peer", "last_used", "stream", "owner", "client", "used")

    peer: LegacyPeer

    def __init__(self, owner: str | None = None, client: str | None = None) -> None:
        #: The key of the principal that opened the session (None without OAuth): only it may
        #: use it. Kept in the shared record beside the session's state.
        self.owner = owner
        #: Whose quota the session counts against (:func:`quota_key`); None: no one's (a
        #: replica of a session opened on another worker).
        self.client = client
        #: Whether the session has served a request since ``initialize`` (notifications do
        #: not count): until then it expires after the short ``unused_timeout``.
        self.used = False
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


def quota_key(principal: Any, client: Any) -> str:
    """Whose session quota a new session counts against: the authenticated principal's key,
    else the peer's host (ASGI ``scope["client"]``); peers whose address is unknown share one."""
    if principal is not None:
        return f"principal:{principal.key}"
    if isinstance(client, (tuple, list)) and client and isinstance(client[0], str):
        return f"peer:{client[0]}"
    return "peer:?"


class SessionRegistry:
    """The live sessions of one endpoint, by ``Mcp-Session-Id``.

    In process memory; the one place to change for a shared store. A session with an open
    GET stream is a client still listening, so it never counts as idle. ``max_sessions``
    caps them all, ``max_per_client`` those of one :func:`quota_key` (None: no such cap);
    a session that has served no request since ``initialize`` expires after
    ``unused_timeout`` without traffic (``idle_timeout`` once it has; None: ``idle_timeout`` always).
    """

    def __init__(self, *, idle_timeout: float = 1800.0, max_sessions: int = 1000,
                 max_per_client: int | None = 16, unused_timeout: float | None = 30.0) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_per_client = max_per_client
        self.unused_timeout = idle_timeout if unused_timeout is None else min(unused_timeout, idle_timeout)
        self._sessions: dict[str, _Entry] = {}
        self._per_client: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def has_room(self) -> bool:
        """Whether one more session fits (idle ones are swept first when it is full)."""
        if len(self._sessions) >= self.max_sessions:
            self.sweep()
        return len(self._sessions) < self.max_sessions

    def client_has_room(self, client: str) -> bool:
        """Whether ``client`` may open one more session (its idle ones are swept first)."""
        cap = self.max_per_client
        if cap is None or self._per_client.get(client, 0) < cap:
            return True
        now = time.monotonic()
        for sid in [sid for sid, e in self._sessions.items() if e.client == client and self._idle(e, now)]:
            self._drop(sid).close()
        return self._per_client.get(client, 0) < cap

    def add(self, entry: _Entry) -> str:
        """Register a session; returns its new id (visible ASCII only)."""
        sid = secrets.token_urlsafe(24)
        self._sessions[sid] = entry
        if entry.client is not None:
            self._per_client[entry.client] = self._per_client.get(entry.client, 0) + 1
        return sid

    def put(self, sid: str, entry: _Entry) -> None:
        """Keep a replica of a session opened on another worker."""
        old = self._sessions.get(sid)
        if old is not None and old is not entry:
            self._drop(sid).close()
        self._sessions[sid] = entry
        if entry.client is not None:
            self._per_client[entry.client] = self._per_client.get(entry.client, 0) + 1

    def _drop(self, sid: str) -> _Entry:
        entry = self._sessions.pop(sid)
        client = entry.client
        if client is not None:
            left = self._per_client.get(client, 0) - 1
            if left > 0:
                self._per_client[client] = left
            else:
                self._per_client.pop(client, None)
        return entry

    def peek(self, sid: str) -> _Entry | None:
        """The local session or replica, without touching it."""
        return self._sessions.get(sid)

    def sweep(self) -> None:
        """Close idle sessions (and replicas: they are caches of the shared records)."""
        now = time.monotonic()
        for sid in [sid for sid, e in self._sessions.items() if self._idle(e, now)]:
            self._drop(sid).close()

    def get(self, sid: str) -> _Entry | None:
        """The live session (marked as used now), or None when unknown or expired (then ended)."""
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = time.monotonic()
        if self._idle(entry, now):
            self._drop(sid).close()
            return None
        entry.last_used = now
        return entry

    def remove(self, sid: str) -> bool:
        """End a session; False when there was none by that id."""
        if sid not in self._sessions:
            return False
        self._drop(sid).close()
        return True

    def close_all(self) -> None:
        for entry in self._sessions.values():
            entry.close()
        self._sessions.clear()
        self._per_client.clear()

    def _idle(self, entry: _Entry, now: float) -> bool:
        limit = self.idle_timeout if entry.used else self.unused_timeout
        return entry.stream is None and now - entry.last_used > limit


class LegacyEndpoint:
    """Serves the session wire of one HTTP endpoint (sessions shared by workers when a
    :class:`SessionStore` is given)."""

    def __init__(self, server: Dispatcher, *, idle_timeout: float = 1800.0, max_sessions: int = 1000,
                 keepalive: float = 15.0, store: SessionStore | None = None, max_per_client: int | None = 16,
                 unused_timeout: float | None = 30.0) -> None:
        self.server = server
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self.sessions = SessionRegistry(idle_timeout=idle_timeout, max_sessions=max_sessions,
                                        max_per_client=max_per_client, unused_timeout=unused_timeout)
        #: When to try again after a refusal at a cap: when an unused session may have expired.
        self._retry_after = [(b"retry-after", str(max(1, math.ceil(self.sessions.unused_timeout))).encode())]
        self.store = store
        self._next_sweep = 0.0
        if store is not None:
            store.bind(self)

    # ------------------------------------------------------------------ POST
    async def initialize(self, req: codec.Request, send: Send, principal: Any = None, client: Any = None) -> None:
        """A valid ``initialize`` without a session: open one, if there is room for it and for
        its caller (the principal, else the peer address ``client``, ASGI ``scope["client"]``)."""
        store = self.store
        owner = principal.key if principal is not None else None
        if principal is not None and owner is None:
            # Bound to None, the session would be shared with every caller whose token names no one.
            await _asgi.respond_error(send, 403, errors.invalid_request(
                "the access token names neither a subject (sub) nor a client (client_id), so a session cannot be "
                "bound to its caller; use a token that identifies the caller"), req.id)
            return
        quota = quota_key(principal, client)
        if not self.sessions.client_has_room(quota):
            await _asgi.respond_error(send, 429, errors.invalid_request(
                f"too many open sessions for this client (at most {self.sessions.max_per_client}); end one (DELETE), "
                "try again later or use 2026-07-28 (stateless)"), req.id, self._retry_after)
            return
        if not self.sessions.has_room():
            await _asgi.respond_error(send, 503, errors.internal_error(
                "too many open sessions; try again later or use 2026-07-28 (stateless)"), req.id, self._retry_after)
            return
        entry = _Entry(owner, quota)
        entry.peer = self.server.open_legacy_session(send=entry.push,
                                                     id_prefix=store.worker_id if store is not None else None)
        if isinstance(client, (tuple, list)) and client and isinstance(client[0], str):
            entry.peer.address = client[0]
        reply = await (entry.peer.handle(req) if principal is None else entry.peer.handle(req, auth=principal))
        if reply.error_code is not None:
            entry.peer.close()
            await _asgi.respond_json(send, 400, reply.body)
            return
        sid = self.sessions.add(entry)
        if store is not None:
            try:
                await store.create(sid, _record(entry), self.sessions.unused_timeout)
            except errors.MCPError as exc:
                self.sessions.remove(sid)
                await _asgi.respond_error(send, 503, exc, req.id)
                return
        await _asgi.respond_json_with(send, 200, reply.body, [(b"mcp-session-id", sid.encode())])

    async def _owned(self, sid: str, principal: Any, request: bool = False) -> _Entry | None:
        """The session ``sid``, if it exists and belongs to ``principal`` (another caller's
        session is reported as unknown: its existence is not revealed). ``request``: for a
        request (which makes the session used), not a notification, answer, GET or DELETE."""
        owner = principal.key if principal is not None else None
        if principal is not None and owner is None:
            return None  # a caller without a key owns no session
        entry = await self._entry(sid, request)
        if entry is None or entry.owner != owner:
            return None
        return entry

    async def _entry(self, sid: str, request: bool = False) -> _Entry | None:
        """The session ``sid`` (a replica, refreshed from the shared record, with a store)."""
        store = self.store
        if store is None:
            return self.sessions.get(sid)
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + min(60.0, self.sessions.unused_timeout)
            self.sessions.sweep()
        local = self.sessions.peek(sid)
        # Until its first request a session's record lives only as long as an unused one.
        known_used = request or (local is not None and local.used)
        state = await store.load(sid, self.idle_timeout if known_used else self.sessions.unused_timeout)
        if state is None:
            if local is not None:
                self.sessions.remove(sid)
            return None
        if not known_used and state.get("used"):
            await store.touch(sid, self.idle_timeout)  # used on another worker
        entry = local
        if entry is None or entry.peer.closed:
            entry = _Entry(state.get("owner"))
            entry.peer = self.server.open_legacy_session(send=entry.push, state=state, id_prefix=store.worker_id)
            self.sessions.put(sid, entry)
        else:
            entry.peer.apply_state(state)
            entry.last_used = now
        entry.used = entry.used or bool(state.get("used"))
        return entry

    async def deliver(self, sid: str, msg: codec.Message, send: Send, principal: Any = None) -> None:
        """A message for session ``sid``."""
        store = self.store
        rid = None if isinstance(msg, codec.Notification) else msg.id
        try:
            entry = await self._owned(sid, principal, type(msg) is codec.Request)
        except errors.MCPError as exc:
            await _asgi.respond_error(send, 503, exc, rid)
            return
        if entry is None:
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session: send initialize again"),
                                      rid)
            return
        if store is not None and type(msg) is codec.Response and isinstance(rid, str):
            worker = rid.rpartition(".")[0]
            if worker and worker != store.worker_id:
                # The answer to a request another worker sent: it is waiting there.
                try:
                    if not await store.forward_response(worker, sid, _encode_response(msg)):
                        log.debug("dropped an answer for worker %s: it is gone", worker)
                except errors.MCPError as exc:
                    await _asgi.respond_error(send, 503, exc)
                    return
                await _asgi.respond_empty(send, 202)
                return
        peer = entry.peer
        if type(msg) is codec.Request:
            before = _record(entry) if store is not None else None
            entry.used = True  # from now on the session keeps the full idle timeout
            await _serve(peer, msg, send, principal, self._saver(sid, entry, before) if store is not None else None)
            return
        if type(msg) is codec.Notification:
            before = _record(entry) if store is not None else None
            peer.handle_notification(msg)  # notifications/cancelled included: the session cancels by id
            if store is not None:
                try:
                    if msg.method == "notifications/cancelled":
                        # The request may be running on another worker.
                        await store.broadcast_cancel(sid, codec.encode_notification(msg.method, msg.params))
                    else:
                        await self._save_if_changed(sid, entry, before)
                except errors.MCPError as exc:
                    await _asgi.respond_error(send, 503, exc)
                    return
        else:
            assert type(msg) is codec.Response
            peer.handle_response(msg)
        await _asgi.respond_empty(send, 202)

    def _saver(self, sid: str, entry: _Entry, before: dict[str, Any] | None) -> _Hook:
        async def save() -> None:
            await self._save_if_changed(sid, entry, before)
        return save

    async def _save_if_changed(self, sid: str, entry: _Entry, before: dict[str, Any] | None) -> None:
        assert self.store is not None
        state = _record(entry)
        if state != before:
            await self.store.save(sid, before, state, self.idle_timeout)

    # ------------------------------------------------------------------ GET / DELETE
    async def open_stream(self, sid: str, receive: Receive, send: Send, principal: Any = None) -> None:
        """GET: the session's own stream, until the client leaves or the session ends."""
        store = self.store
        try:
            entry = await self._owned(sid, principal)
            if entry is not None and store is not None:
                await store.claim_stream(sid)
        except errors.MCPError as exc:
            await _asgi.respond_error(send, 503, exc)
            return
        if entry is None:
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session"))
            return
        queue = entry.open_stream()
        await _asgi.start_stream(send)
        await _asgi.send_comment(send, _STREAM_OPEN)
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(_asgi.watch_disconnect(receive, lambda: queue.put_nowait(None)))
        pinger = loop.create_task(_asgi.keep_alive(send, self.keepalive, wait_first=True))
        # While the stream is open the session is not idle: keep the shared record alive.
        toucher = loop.create_task(self._keep_record(sid)) if store is not None else None
        try:
            while (item := await queue.get()) is not None:
                await _asgi.send_event(send, item)
                entry.last_used = time.monotonic()
        except OSError:
            pass
        finally:
            watcher.cancel()
            pinger.cancel()
            if toucher is not None:
                toucher.cancel()
            if entry.stream is queue:
                entry.stream = None
        try:
            await _asgi.end_stream(send)
        except Exception:
            pass

    async def _keep_record(self, sid: str) -> None:
        assert self.store is not None
        every = max(0.5, min(self.idle_timeout / 3, 60.0))
        while True:
            await asyncio.sleep(every)
            await self.store.touch(sid, self.idle_timeout)

    async def end(self, sid: str, send: Send, principal: Any = None) -> None:
        """DELETE: end the session."""
        try:
            owned = await self._owned(sid, principal)
        except errors.MCPError as exc:
            await _asgi.respond_error(send, 503, exc)
            return
        if owned is None:
            found = False
        elif self.store is not None:
            try:
                found = await self.store.delete(sid)
            except errors.MCPError as exc:
                await _asgi.respond_error(send, 503, exc)
                return
            found = self.sessions.remove(sid) or found
        else:
            found = self.sessions.remove(sid)
        if not found:
            await _asgi.respond_error(send, 404, errors.invalid_request("unknown or expired session"))
            return
        await _asgi.respond_empty(send, 200)

    def close_all(self) -> None:
        self.sessions.close_all()

    # ------------------------------------------------------------------ SessionEvents (from other workers)
    def session_changed(self, sid: str, diff: dict[str, Any]) -> None:
        entry = self.sessions.peek(sid)
        if entry is not None:
            state = entry.peer.export_state()
            state.update(diff.get("fields") or {})
            subs = set(state.get("subscriptions") or ()) | set(diff.get("added") or ())
            state["subscriptions"] = sorted(subs - set(diff.get("removed") or ()))
            entry.peer.apply_state(state)
            if "owner" in (diff.get("fields") or {}):
                entry.owner = diff["fields"]["owner"]
            if (diff.get("fields") or {}).get("used"):
                entry.used = True

    def session_ended(self, sid: str) -> None:
        if self.sessions.peek(sid) is not None:
            self.sessions.remove(sid)

    def stream_claimed(self, sid: str) -> None:
        entry = self.sessions.peek(sid)
        if entry is not None:
            entry.end_stream()

    def session_notification(self, sid: str, body: bytes) -> None:
        entry = self.sessions.peek(sid)
        if entry is not None:
            msg = codec.decode(body)
            if type(msg) is codec.Notification:
                entry.peer.handle_notification(msg)

    def session_response(self, sid: str, body: bytes) -> None:
        entry = self.sessions.peek(sid)
        if entry is not None:
            msg = codec.decode(body)
            if type(msg) is codec.Response:
                entry.peer.handle_response(msg)


_Hook = Callable[[], Awaitable[None]]


def _record(entry: _Entry) -> dict[str, Any]:
    """A session's shared record: the session's own state and the transport's (its owner,
    whether it has served a request)."""
    state = entry.peer.export_state()
    state["owner"] = entry.owner
    state["used"] = entry.used
    return state


def _encode_response(msg: codec.Response) -> bytes:
    import msgspec

    out: dict[str, Any] = {"jsonrpc": "2.0", "id": msg.id}
    if msg.error is not None:
        out["error"] = msg.error
    else:
        out["result"] = msg.result if msg.result is not None else {}
    return msgspec.json.encode(out)


async def _serve(peer: LegacyPeer, req: codec.Request, send: Send, principal: Any = None,
                 before_answer: _Hook | None = None) -> None:
    """One session request: JSON, or SSE once a notification or server request must go first.
    ``before_answer`` runs between the handler and the answer (saving a shared session)."""
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
    if before_answer is not None:
        try:
            await before_answer()
        except errors.MCPError as exc:
            if body is not None:
                body = codec.encode_error(req.id, exc)
    await exchange.finish(body)
