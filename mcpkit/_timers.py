"""Many due times on one event loop, watched by one timer.

A timer per request costs more than the request's own work on the fast paths (on uvloop each
is a libuv handle made and closed; asyncio's a heap entry and a handle object), and almost all
of them are cancelled unfired: a request's time limit, the moment a suspended HTTP handler
starts watching for the client going away, its first keep-alive. :class:`Schedule` keeps
them in a dict (adding and dropping one is a dict operation) and sets the loop's timer only
for the earliest, again only when it fires or an earlier time comes in. :func:`within` is a
time limit on one await on it (the client's per-request limit), with ``asyncio.timeout``'s
rule: the awaiting task is cancelled at the deadline; a cancellation that was only ours
becomes TimeoutError, any other stays a cancellation.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

_NEVER = float("inf")
#: A timer may fire this much before its time (the loop's clock resolution): taken as due.
_EARLY = 0.001


class Schedule:
    """Callbacks at loop times (``loop.time()``), on ``loop``, one timer for all of them."""

    __slots__ = ("loop", "entries", "_keys", "_timer", "_at")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.entries: dict[int, tuple[float, Callable[[Any], object], Any]] = {}
        self._keys = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._at = _NEVER

    def add(self, when: float, callback: Callable[[Any], object], arg: Any) -> int:
        """Call ``callback(arg)`` at ``when``; the key drops it (:meth:`drop`)."""
        key = next(self._keys)
        self.entries[key] = (when, callback, arg)
        if when < self._at:
            self._arm(when)
        return key

    def drop(self, key: int) -> None:
        """Forget an entry (whether or not it fired)."""
        self.entries.pop(key, None)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self.loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer, self._at = None, _NEVER
        due = self.loop.time() + _EARLY
        ready = [key for key, (when, _, _) in self.entries.items() if when <= due]
        for key in ready:
            _, callback, arg = self.entries.pop(key)
            try:
                callback(arg)
            except Exception as exc:  # one callback's failure must not stop the others
                self.loop.call_exception_handler({"message": "mcpkit: a scheduled callback failed", "exception": exc})
        if self.entries and self._timer is None:
            self._arm(min(when for when, _, _ in self.entries.values()))


def schedule_for(current: Schedule | None) -> Schedule:
    """``current`` when it runs on the running loop, else a new one for it."""
    loop = asyncio.get_running_loop()
    if current is not None and current.loop is loop:
        return current
    return Schedule(loop)


class _Limit:
    __slots__ = ("task", "fired")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False


def _expire(limit: _Limit) -> None:
    limit.fired = True
    limit.task.cancel()


async def within(schedule: Schedule, call: Awaitable[T], limit: float) -> T:
    """``await call``; TimeoutError when it takes more than ``limit`` seconds."""
    task = asyncio.current_task(schedule.loop)
    if task is None:  # not in a task: asyncio.timeout says what is wrong
        async with asyncio.timeout(limit):
            return await call
    mine = _Limit(task)
    key = schedule.add(schedule.loop.time() + limit, _expire, mine)
    try:
        result = await call
    except asyncio.CancelledError:
        if mine.fired and task.uncancel() == 0:
            raise TimeoutError from None
        raise
    finally:
        schedule.drop(key)
    if mine.fired:  # the awaited call swallowed our cancellation and answered: withdrawn
        task.uncancel()
    return result
