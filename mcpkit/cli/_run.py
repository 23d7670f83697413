"""``asyncio.run`` for the commands, with one fix: a signal that lands on another thread still
wakes the event loop (:mod:`mcpkit._wakeup`), so Ctrl-C at a prompt stops the command at once
instead of once Enter is pressed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._wakeup import woken

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to the end, as :func:`asyncio.run` does, woken by every signal."""
    return asyncio.run(woken(main))
