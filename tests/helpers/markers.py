"""Marker files: how a handler in a server process tells the test where it is (started, then
cancelled or completed), so that cancellation can be proved across a process boundary."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def write(path: str | Path, state: str) -> None:
    with open(path, "w") as f:
        f.write(state)


def read(path: str | Path) -> str:
    """The marker's state ("" before the handler wrote one)."""
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return ""


async def recorded(marker: str | Path, work: Awaitable[T]) -> T:
    """Server side: write ``started``, await ``work``; then ``cancelled`` (and re-raise) or ``completed``."""
    write(marker, "started")
    try:
        result = await work
    except asyncio.CancelledError:
        write(marker, "cancelled")
        raise
    write(marker, "completed")
    return result


def wait_for(path: str | Path, wanted: str, timeout: float = 5.0) -> str:
    """Test side: poll until the marker says ``wanted``; return what it says at the end."""
    deadline = time.monotonic() + timeout
    state = read(path)
    while state != wanted and time.monotonic() < deadline:
        time.sleep(0.02)
        state = read(path)
    return state
