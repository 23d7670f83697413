"""The time limits of a client's requests: one timer for all of them, not one per request.

``asyncio.timeout`` costs a context manager, two coroutines and a timer handle per request
(on uvloop a timer is a libuv handle, made and closed each time). :class:`Deadlines` keeps its
rule (the awaiting task is cancelled at the deadline; a cancellation that was only ours becomes
TimeoutError, any other stays a cancellation) with the requests in flight in a dict and one
timer set at the earliest deadline: a request adds and removes its entry, and the timer is set
again only when it fires or an earlier deadline comes in.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")

_NEVER = float("inf")
#: A timer may fire this much before its time (the loop's clock resolution): taken as due.
_EARLY = 0.001


class _Entry:
    __slots__ = ("deadline", "task", "fired")

    def __init__(self, deadline: float, task: asyncio.Task[Any]) -> None:
        self.deadline = deadline
        self.task = task
        self.fired = False


class Deadlines:
    """The deadlines of the requests in flight on ``loop``, watched by one timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[int, _Entry] = {}
        self._keys = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._at = _NEVER

    async def within(self, call: Awaitable[T], limit: float) -> T:
        """``await call``; TimeoutError when it takes more than ``limit`` seconds."""
        loop = self.loop
        task = asyncio.current_task(loop)
        if task is None:  # not in a task: asyncio.timeout says what is wrong
            async with asyncio.timeout(limit):
                return await call
        entry = _Entry(loop.time() + limit, task)
        key = next(self._keys)
        self.waiting[key] = entry
        if entry.deadline < self._at:
            self._arm(entry.deadline)
        try:
            result = await call
        except asyncio.CancelledError:
            if entry.fired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            del self.waiting[key]
        if entry.fired:  # the awaited call swallowed our cancellation and answered: withdrawn
            task.uncancel()
        return result

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self.loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer, self._at = None, _NEVER
        due = self.loop.time() + _EARLY
        later = _NEVER
        for entry in list(self.waiting.values()):
            if entry.fired:
                continue
            if entry.deadline <= due:
                entry.fired = True
                entry.task.cancel()
            elif entry.deadline < later:
                later = entry.deadline
        if later < _NEVER:
            self._arm(later)


def deadlines_for(current: Deadlines | None) -> Deadlines:
    """``current`` when it watches the running loop, else new ones for it."""
    loop = asyncio.get_running_loop()
    if current is not None and current.loop is loop:
        return current
    return Deadlines(loop)
