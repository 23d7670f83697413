"""Change notifications a server publishes, and the watchers of its clients' subscriptions.

A mixin of :class:`mcpkit.Server`: ``notify_*`` publish on the server's bus (held by
:meth:`Changes.batch_changes`), and :meth:`Changes.watch_subscriptions` tells a proxy (or
anyone) who follows which resource.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._lazy import LazyLogger
from ._bus import Change

if TYPE_CHECKING:
    from ._bus import Bus

#: ``watcher(uri, subscribed, principal, client_capabilities)`` (see Server.watch_subscriptions).
SubscriptionWatcher = Callable[[str, bool, "str | None", "dict[str, Any] | None"], None]
log = LazyLogger("mcpkit.server")  # logging loads with the first record


class Changes:
    """Publishing changes and watching subscriptions (part of :class:`mcpkit.Server`)."""

    bus: Bus
    _subscription_watchers: list[SubscriptionWatcher]

    #: Changes held by :meth:`batch_changes` (None: published at once).
    _held: dict[Change, None] | None = None

    @contextlib.contextmanager
    def batch_changes(self) -> Iterator[None]:
        """Hold change notifications while several registrations change, then publish each
        distinct one once (one ``list_changed`` per kind, one update per URI), in order.
        Nested batches publish when the outermost ends."""
        if self._held is not None:
            yield
            return
        self._held = {}
        try:
            yield
        finally:
            held, self._held = self._held, None
            for change in held:
                self._publish(change)

    # ---------------------------------------------------------------- change notifications
    def notify_tools_changed(self) -> None:
        """Tell ``subscriptions/listen`` streams that opted in that the tool list changed."""
        self._publish(Change("tools"))

    def notify_prompts_changed(self) -> None:
        """Tell ``subscriptions/listen`` streams that opted in that the prompt list changed."""
        self._publish(Change("prompts"))

    def notify_resources_changed(self) -> None:
        """Tell ``subscriptions/listen`` streams that opted in that the resource list changed."""
        self._publish(Change("resources"))

    def notify_resource_updated(self, uri: str) -> None:
        """Tell streams subscribed to ``uri`` (or to a parent of it) that it changed."""
        self._publish(Change("resource_updated", uri))

    def watch_subscriptions(self, watcher: SubscriptionWatcher) -> None:
        """Call ``watcher(uri, True, principal, client_capabilities)`` when a client of this
        process subscribes to ``uri`` (a 2025-11-25 ``resources/subscribe``, or a listen
        stream acknowledging it) and ``watcher(uri, False, ...)`` when that subscription ends;
        ``principal`` is the caller's key (None without auth). A proxy subscribes upstream."""
        self._subscription_watchers.append(watcher)

    def subscription_changed(self, uri: str, subscribed: bool, principal: str | None = None,
                             client_capabilities: dict[str, Any] | None = None) -> None:
        """Tell the watchers (:meth:`watch_subscriptions`) one subscription began or ended."""
        for watcher in self._subscription_watchers:
            try:
                watcher(uri, subscribed, principal, client_capabilities)
            except Exception:
                log.exception("a subscription watcher failed")

    def _publish(self, change: Change) -> None:
        if self._held is not None:
            self._held[change] = None
            return
        self.bus.publish(change)

