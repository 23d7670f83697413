"""Change notifications: a 2026-07-28 ``subscriptions/listen`` stream, or, on a 2025-11-25
session, the notifications the server pushes (with ``resources/subscribe`` for resources)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ._transport import OnNote

if TYPE_CHECKING:
    from ._api import LogCallback, ProgressCallback

#: The change notifications (they also invalidate the response cache).
LIST_NOTES = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                        "notifications/resources/list_changed", "notifications/resources/updated"})
_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


class Notification(msgspec.Struct, frozen=True):
    """A notification received on a ``listen()`` stream."""

    method: str
    params: dict[str, Any]

    @property
    def uri(self) -> str | None:
        """The ``uri`` of a ``notifications/resources/updated``, or None."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


class Hub:
    """Fans the notifications a legacy session pushes out to the open ``listen()`` streams."""

    __slots__ = ("_queues",)

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[tuple[str, dict[str, Any]]]] = set()

    def publish(self, method: str, params: dict[str, Any]) -> None:
        for q in self._queues:
            q.put_nowait((method, params))

    def open(self) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        q: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._queues.add(q)
        return q

    def close(self, q: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        self._queues.discard(q)


def subscription_filter(tools: bool, prompts: bool, resources_list: bool, resources: Sequence[str]) -> dict[str, Any]:
    """The ``notifications`` filter of a ``subscriptions/listen`` request."""
    filt: dict[str, Any] = {}
    if tools:
        filt["toolsListChanged"] = True
    if prompts:
        filt["promptsListChanged"] = True
    if resources_list:
        filt["resourcesListChanged"] = True
    if resources:
        filt["resourceSubscriptions"] = list(resources)
    return filt


async def modern_stream(send: Callable[[OnNote], Awaitable[Any]], on_change: OnNote,
                        on_ack: Callable[[dict[str, Any]], None]) -> AsyncGenerator[Notification, None]:
    """Yield a listen stream's notifications. ``send(on_note)`` sends the listen request and
    returns when the server ends the stream; ``on_change`` also sees each change (the cache
    listens), ``on_ack`` the filter the server agreed to honour. Leaving the iteration
    cancels the request (stdio: ``notifications/cancelled``; HTTP: the stream is closed)."""
    queue: asyncio.Queue[Notification | None] = asyncio.Queue()

    def on_note(method: str, params: dict[str, Any]) -> None:
        if method in LIST_NOTES:
            on_change(method, params)
        if method == _ACKNOWLEDGED:
            notes = params.get("notifications")
            on_ack(notes if isinstance(notes, dict) else {})
        else:
            queue.put_nowait(Notification(method, params))

    async def run() -> None:
        try:
            await send(on_note)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(run())
    try:
        while True:
            item = await queue.get()
            if item is None:
                break
            yield item
        if task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                raise exc
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass


async def legacy_stream(hub: Hub, request: Callable[[str, dict[str, Any]], Awaitable[Any]], tools: bool, prompts: bool,
                        resources_list: bool, resources: Sequence[str]) -> AsyncGenerator[Notification, None]:
    """A 2025-11-25 server pushes changes on its session: subscribe, then filter them.
    ``request(method, params)`` sends ``resources/subscribe`` and ``resources/unsubscribe``."""
    wanted = set()
    if tools:
        wanted.add("notifications/tools/list_changed")
    if prompts:
        wanted.add("notifications/prompts/list_changed")
    if resources_list:
        wanted.add("notifications/resources/list_changed")
    uris = list(resources)
    queue = hub.open()
    try:
        for uri in uris:
            await request("resources/subscribe", {"uri": uri})
        while True:
            method, params = await queue.get()
            if method in wanted or (method == "notifications/resources/updated" and params.get("uri") in uris):
                yield Notification(method, params)
    finally:
        hub.close(queue)
        for uri in uris:
            try:
                await request("resources/unsubscribe", {"uri": uri})
            except Exception:
                pass


def note_router(progress: ProgressCallback | None, on_log: LogCallback | None, other: OnNote | None) -> OnNote:
    def route(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress" and progress is not None:
            progress(params.get("progress"), params.get("total"), params.get("message"))  # type: ignore[arg-type]
        elif method == "notifications/message" and on_log is not None:
            on_log(params)
        elif other is not None:
            other(method, params)

    return route
