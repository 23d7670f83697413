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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._backend import Backend

log = logging.getLogger("mcpkit.proxy")


class Upstream:
    """The URIs the front's clients follow, counted, and the backend subscribed to them."""

    def __init__(self, backend: Backend, *, limit: int = 1000) -> None:
        self.backend = backend
        self.limit = limit
        self.counts: dict[str, int] = {}  # the backend loop only
        self._tasks: set[asyncio.Task[None]] = set()

    def changed(self, uri: str, subscribed: bool) -> None:
        """A front client subscribed to ``uri`` or left it (from the front's loop)."""
        bridge = self.backend.bridge
        if bridge is not None:
            bridge.call_soon(self._changed, uri, subscribed)

    def _changed(self, uri: str, subscribed: bool) -> None:
        count = self.counts.get(uri, 0)
        if subscribed:
            if count == 0 and len(self.counts) >= self.limit:
                log.warning("not following %s upstream: %d resources are followed already", uri, self.limit)
                return
            self.counts[uri] = count + 1
            if count == 0:
                self._follow(uri, True)
        elif count > 0:
            if count == 1:
                del self.counts[uri]
                self._follow(uri, False)
            else:
                self.counts[uri] = count - 1

    def _follow(self, uri: str, on: bool) -> None:
        task = asyncio.ensure_future(self.backend.follow(uri, on, sorted(self.counts)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
