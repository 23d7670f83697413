"""Resource subscriptions through the proxy.

The front serves subscriptions as any mcpkit server does (a 2026-07-28 client's
``subscriptions/listen`` with ``resourceSubscriptions``, a 2025-11-25 client's
``resources/subscribe``), and tells the proxy which URIs its clients follow
(:meth:`Server.watch_subscriptions <mcpkit.Server.watch_subscriptions>`). The proxy follows
the union of them upstream, counted, so the first subscriber of a URI subscribes the backend
and the last one leaving unsubscribes it:

- a legacy backend gets ``resources/subscribe`` / ``resources/unsubscribe`` on its session;
- a modern backend's ``subscriptions/listen`` stream is opened again with the new set in its
  ``resourceSubscriptions`` (the list changes it follows stay).

The backend's ``notifications/resources/updated`` reach the front's bus, which sends each to
the streams and sessions subscribed to that URI (and only to callers allowed to read it).
At most ``limit`` URIs are followed upstream; past that a new URI is not (logged).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import Backend

log = logging.getLogger("mcpkit.proxy")


class Upstream:
    """The URIs the front's clients follow, counted, and the backend subscribed to them.

    A legacy backend is subscribed on the session of the subscriber (its principal and
    client capabilities, :mod:`._pool`), so a backend that keys its updates by session sends
    them where that caller's other requests go; a modern backend has one listen stream.
    """

    def __init__(self, backend: Backend, *, limit: int = 1000) -> None:
        self.backend = backend
        self.limit = limit
        #: Subscribers by (session key, URI); the session key is None for a modern backend.
        self.counts: dict[tuple[Any, str], int] = {}  # the backend loop only
        self._tasks: set[asyncio.Task[None]] = set()

    def changed(self, uri: str, subscribed: bool, principal: str | None = None,
                client_caps: dict[str, Any] | None = None) -> None:
        """A front client subscribed to ``uri`` or left it (from the front's loop)."""
        bridge = self.backend.bridge
        if bridge is not None:
            bridge.call_soon(self._changed, uri, subscribed, principal, client_caps)

    def _changed(self, uri: str, subscribed: bool, principal: str | None = None,
                 client_caps: dict[str, Any] | None = None) -> None:
        legacy = self.backend.era == "legacy"
        key = (self.backend.pool.key(principal, client_caps) if legacy else None, uri)
        count = self.counts.get(key, 0)
        if subscribed:
            if count == 0 and len(self.counts) >= self.limit:
                log.warning("not following %s upstream: %d resources are followed already", uri, self.limit)
                return
            self.counts[key] = count + 1
            if count == 0:
                self._follow(uri, True, principal, client_caps)
        elif count > 0:
            if count == 1:
                del self.counts[key]
                self._follow(uri, False, principal, client_caps)
            else:
                self.counts[key] = count - 1

    def _follow(self, uri: str, on: bool, principal: str | None, client_caps: dict[str, Any] | None) -> None:
        task = asyncio.ensure_future(self._follow_on(uri, on, principal, client_caps))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _follow_on(self, uri: str, on: bool, principal: str | None, client_caps: dict[str, Any] | None) -> None:
        backend = self.backend
        if backend.era != "legacy":
            await backend.follow(uri, on, sorted({u for (_, u) in self.counts}))
            return
        try:
            session = await backend.session_for(principal, client_caps)
        except Exception as exc:  # (the pool is full of busy sessions)
            log.warning("could not follow %s on the backend: %s", uri, exc)
            return
        await session.follow(uri, on, [])
