"""The client's per-request time limits (``mcpkit._timers.within`` on a
``mcpkit._timers.Schedule``: one timer for the requests in flight) keep asyncio.timeout's rule: a deadline is a TimeoutError, any other
cancellation stays one, and the task's cancellation count is left as it was found."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import _timers as _deadline
from mcpkit._timers import Schedule, schedule_for


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 10))


async def within(call: Any, limit: float) -> Any:
    return await _deadline.within(schedule_for(None), call, limit)


def test_an_answer_in_time_is_returned_and_leaves_no_timer() -> None:
    async def go() -> tuple[str, int]:
        async def answer() -> str:
            await asyncio.sleep(0.01)
            return "ok"
        got = await within(answer(), 5.0)
        task = asyncio.current_task()
        assert task is not None
        return got, task.cancelling()
    assert run(go()) == ("ok", 0)


def test_a_deadline_is_a_timeout_error_and_the_task_is_not_left_cancelled() -> None:
    async def go() -> tuple[bool, int, str]:
        with pytest.raises(TimeoutError):
            await within(asyncio.sleep(10), 0.05)
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # the task still runs: the cancellation was ours and withdrawn
        return True, task.cancelling(), "after"
    assert run(go()) == (True, 0, "after")


def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    async def go() -> str:
        async def waiter() -> None:
            await within(asyncio.sleep(10), 5.0)
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.02)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "not cancelled"
    assert run(go()) == "cancelled"


def test_a_cancellation_from_outside_at_the_deadline_is_not_taken_for_a_timeout() -> None:
    async def go() -> str:
        async def waiter() -> None:
            await within(asyncio.sleep(10), 0.05)
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.05)
        task.cancel()  # both: ours and the caller's
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        except TimeoutError:
            return "timeout"
        return "neither"
    assert run(go()) == "cancelled"



def test_one_timer_watches_many_requests_each_at_its_own_deadline() -> None:
    async def go() -> tuple[list[str], int]:
        d = schedule_for(None)
        assert schedule_for(d) is d

        async def one(sleep: float, limit: float) -> str:
            try:
                await _deadline.within(d, asyncio.sleep(sleep, "ok"), limit)
                return "ok"
            except TimeoutError:
                return "timeout"
        # a long limit first, then shorter ones: the timer comes forward; answers in between
        outcomes = await asyncio.gather(one(0.3, 5.0), one(0.02, 0.2), one(0.5, 0.1), one(0.5, 0.25),
                                        one(0.05, 1.0))
        return outcomes, len(d.entries)
    assert run(go()) == (["ok", "ok", "timeout", "timeout", "ok"], 0)


def test_sequential_requests_set_the_timer_once() -> None:
    async def go() -> tuple[bool, int]:
        d = Schedule(asyncio.get_running_loop())
        await _deadline.within(d, asyncio.sleep(0), 30.0)
        timer = d._timer
        for _ in range(50):
            await _deadline.within(d, asyncio.sleep(0), 30.0)
        return d._timer is timer and timer is not None, len(d.entries)
    assert run(go()) == (True, 0)
