"""Coroutines from synchronous tests (there is no pytest-asyncio here)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


def run(coro: Any, limit: float | None = None) -> Any:
    """Run a coroutine to completion on a fresh event loop (within ``limit`` seconds, if given)."""
    if limit is None:
        return asyncio.run(coro)
    return asyncio.run(asyncio.wait_for(coro, limit))


async def until(cond: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    """Poll ``cond`` every 10 ms; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def read_body(receive: Any) -> bytes:
    """An ASGI request's whole body (for the small ASGI apps the tests stand up)."""
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            return body
