"""The time limits of a client's requests, on one timer (:class:`mcpkit._timers.Schedule`).

``asyncio.timeout`` costs a context manager, two coroutines and a timer handle per request;
:func:`within` keeps its rule (the awaiting task is cancelled at the deadline; a cancellation
that was only ours becomes TimeoutError, any other stays a cancellation) with a dict entry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from .._timers import Schedule

T = TypeVar("T")


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
