"""Change-notification fan-out for ``subscriptions/listen``.

The server publishes :class:`Change` events; every open listen stream subscribes. The
interface is deliberately small so a cross-process bus can replace :class:`InMemoryBus`
without touching the server: ``mcpkit.backends.redis.RedisBus`` (Redis pub/sub, for several
workers behind a load balancer) does. A bus's async ``ready()`` raises
:class:`~mcpkit.protocol.errors.MCPError` while it cannot receive changes (a shared bus whose
connection is down; the in-memory bus is always ready): a bus installed with
``Server.use_bus`` is asked before each ``subscriptions/listen`` is acknowledged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from .._lazy import LazyLogger

if TYPE_CHECKING:
    import asyncio

log = LazyLogger("mcpkit.server")  # logging loads with the first record

ChangeKind = Literal["tools", "prompts", "resources", "resource_updated"]


class Change(NamedTuple):
    """One change a :class:`Bus` carries: ``kind`` (``tools``, ``prompts``, ``resources`` or
    ``resource_updated``) and, for ``resource_updated``, the resource's ``uri``."""

    kind: ChangeKind
    uri: str | None = None  # for "resource_updated"


class Subscription(Protocol):
    """What :meth:`Bus.subscribe` returns: iterate it for the changes, ``close()`` it when done."""

    def __aiter__(self) -> AsyncIterator[Change]: ...

    def close(self) -> None:
        """Stop receiving changes (the iteration ends)."""


class Bus(Protocol):
    """Carries list and resource changes to every ``subscriptions/listen`` stream, across
    workers when it is shared (``mcpkit.backends.redis``); :class:`InMemoryBus` serves one
    process."""

    def publish(self, change: Change) -> None:
        """Deliver ``change`` to every subscription (fire-and-forget; never blocks)."""

    def subscribe(self) -> Subscription:
        """A new subscription; iterate it for changes, ``close()`` it when done."""

    async def ready(self) -> None:
        """Return when changes can be received now; raise ``MCPError`` when they cannot."""


class _MemorySubscription:
    __slots__ = ("bus", "queue", "closed")

    def __init__(self, bus: InMemoryBus, maxsize: int) -> None:
        import asyncio  # subscriptions exist only while serving, on the event loop

        self.bus = bus
        self.queue: asyncio.Queue[Change | None] = asyncio.Queue(maxsize)
        self.closed = False

    def __aiter__(self) -> AsyncIterator[Change]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Change]:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            yield item

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.bus._subs.discard(self)
            if self.queue.full():
                return  # the reader is far behind; it ends at the next close of the bus
            self.queue.put_nowait(None)


class InMemoryBus:
    """Fan-out within one process. A subscriber that falls ``maxsize`` events behind is
    closed (its stream ends, the client reconnects) rather than silently losing events."""

    def __init__(self, maxsize: int = 10_000) -> None:
        self.maxsize = maxsize
        self._subs: set[_MemorySubscription] = set()

    def publish(self, change: Change) -> None:
        """Queue ``change`` for every subscription; one that fell ``maxsize`` behind is closed."""
        for sub in list(self._subs):
            if sub.queue.qsize() < self.maxsize:
                sub.queue.put_nowait(change)
                continue
            import asyncio

            log.warning("closing a listen stream that fell %d notifications behind", self.maxsize)
            sub.closed = True
            self._subs.discard(sub)
            sub.queue = asyncio.Queue(1)
            sub.queue.put_nowait(None)

    async def ready(self) -> None:
        """Always ready: changes published in this process reach its subscribers."""

    def subscribe(self) -> _MemorySubscription:
        """A new subscription; iterate it for changes, ``close()`` it when done."""
        sub = _MemorySubscription(self, self.maxsize + 1)
        self._subs.add(sub)
        return sub

    def close_all(self) -> None:
        """Close every subscription (their streams end)."""
        for sub in list(self._subs):
            sub.close()

    def __len__(self) -> int:
        return len(self._subs)
