"""A time limit on one await, as cheap as asyncio allows: the client's per-request limit.

``asyncio.timeout`` costs a context manager, two coroutines and a rescheduling per request;
:func:`within` keeps its rule (the awaiting task is cancelled at the deadline; a cancellation
that was only ours becomes TimeoutError, any other stays a cancellation) with one timer handle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


def _expire(task: asyncio.Task[Any], fired: list[bool]) -> None:
    fired.append(True)
    task.cancel()


async def within(call: Awaitable[T], limit: float) -> T:
    """``await call``; TimeoutError when it takes more than ``limit`` seconds."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    if task is None:  # not in a task: asyncio.timeout says what is wrong
        async with asyncio.timeout(limit):
            return await call
    fired: list[bool] = []
    timer = loop.call_at(loop.time() + limit, _expire, task, fired)
    try:
        result = await call
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()
    if fired:  # the awaited call swallowed our cancellation and answered: it is withdrawn
        task.uncancel()
    return result
