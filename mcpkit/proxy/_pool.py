"""Legacy backend sessions, one per caller and client-capability set.

A 2025-11-25 session declares the client's capabilities once, at ``initialize``, and a stdio
one carries no caller at all: so a single backend session would let one front client's
capabilities (and, when the front checks tokens, one principal's identity) stand for
another's. The pool keeps one backend session per ``(principal, capabilities)``: the
principal is the front caller's key (None when the front has no auth), the capabilities
those of ``elicitation``, ``sampling`` and ``roots`` that the front client has and the proxy
relays. The backend is told exactly those at ``initialize``, and a question it asks on a
session can only reach a request of that session's principal.

The proxy's own session (the one it connected first) serves the key ``(None, everything the
proxy relays)`` and the methods that ask nothing (lists, completion, subscriptions). Other
sessions are opened on first use (a stdio backend: one process each), at most
``max_sessions`` of them; one idle for ``idle_ttl`` seconds is closed. When the pool is full
the least recently used idle session is closed to make room; when every session is busy the
request fails with one clear error (never a session of someone else). A session is busy while
a forwarded request runs or waits on it (an MRTR question), and while a front client follows
a resource on it (:mod:`._subscriptions`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol import errors

if TYPE_CHECKING:
    from ._backend import Backend

log = logging.getLogger("mcpkit.proxy")

Key = tuple[str | None, frozenset[str]]


class SessionPool:
    """The legacy backend sessions of one proxy (on the backend loop only)."""

    def __init__(self, primary: Backend, *, max_sessions: int = 16, idle_ttl: float = 300.0) -> None:
        if max_sessions < 1 or idle_ttl <= 0:
            raise ValueError("max_sessions must be at least 1 and idle_ttl positive")
        self.primary = primary
        self.max_sessions = max_sessions
        self.idle_ttl = idle_ttl
        #: The open sessions, least recently used first: key -> (backend, last used).
        self.sessions: OrderedDict[Key, tuple[Backend, float]] = OrderedDict()
        self._opening: dict[Key, asyncio.Future[Backend]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def key(self, principal: str | None, client_caps: Mapping[str, Any] | None) -> Key:
        declare = self.primary.declare
        if client_caps is None:  # (no front client behind the request: the proxy's own session)
            return principal, frozenset(declare)
        return principal, frozenset(name for name in declare if isinstance(client_caps.get(name), dict))

    async def session_for(self, principal: str | None, client_caps: Mapping[str, Any] | None) -> Backend:
        """The backend session for this caller and these capabilities (opened if need be)."""
        key = self.key(principal, client_caps)
        if key == (None, frozenset(self.primary.declare)):
            return self.primary
        self._expire()
        found = self.sessions.get(key)
        if found is not None:
            self.sessions[key] = (found[0], time.monotonic())
            self.sessions.move_to_end(key)
            return found[0]
        opening = self._opening.get(key)
        if opening is not None:
            return await asyncio.shield(opening)
        fut: asyncio.Future[Backend] = asyncio.get_running_loop().create_future()
        self._opening[key] = fut
        try:
            session = await self._open(key)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # (retrieved: whoever waits on it gets it raised)
            raise
        finally:
            self._opening.pop(key, None)
        fut.set_result(session)
        return session

    async def _open(self, key: Key) -> Backend:
        from ._backend import Backend

        await self._make_room()
        principal, caps = key
        primary = self.primary
        who = "no principal" if principal is None else "a principal"
        session = Backend(primary.target, connect_timeout=primary.connect_timeout,
                          request_timeout=primary.request_timeout, call_timeout=primary.call_timeout,
                          declare=sorted(caps), label=f"{primary.label} (session for {who}, "
                          f"capabilities {', '.join(sorted(caps)) or 'none'})", **primary.client_options)
        session.bridge = primary.bridge
        session.on_change = self._updated
        await session.open()
        log.info("opened %s", session.label)
        self.sessions[key] = (session, time.monotonic())
        return session

    def _updated(self, method: str, params: dict[str, Any]) -> None:
        """A pooled session's change notification: its resource updates (for the resources
        subscribed on it) go to the front; list changes come from the proxy's own session."""
        if method == "notifications/resources/updated" and self.primary.on_change is not None:
            self.primary.on_change(method, params)

    async def _make_room(self) -> None:
        while len(self.sessions) + len(self._opening) > self.max_sessions:
            idle = next((k for k, (s, _) in self.sessions.items() if not s.busy()), None)
            if idle is None:
                raise errors.internal_error(f"proxy: all {self.max_sessions} backend sessions are in use; "
                                            "try again later")
            session, _ = self.sessions.pop(idle)
            await session.shutdown()

    def _expire(self) -> None:
        now = time.monotonic()
        for key, (session, used) in list(self.sessions.items()):
            if now - used >= self.idle_ttl and not session.busy():
                del self.sessions[key]
                task = asyncio.ensure_future(session.shutdown())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        sessions = [s for s, _ in self.sessions.values()]
        self.sessions.clear()
        for session in sessions:
            await session.shutdown()
