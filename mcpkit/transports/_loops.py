"""Which event loop a server runs on: uvloop's where it is installed (as uvicorn chooses for
Streamable HTTP), else asyncio's.

On the stdio hot path the loop is most of what a request costs beyond its handler: asyncio's
pure-Python loop step (a zero-timeout ``epoll_wait``, the ready queue, handle objects) runs
twice per request, uvloop's in C. ``loop="asyncio"`` keeps the standard loop.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # (importing this module must not import asyncio: the stdio opening runs without it)
    import asyncio

T = TypeVar("T")

#: The choices of ``loop=``: ``auto`` is uvloop when it imports, else asyncio.
LOOPS = ("auto", "asyncio", "uvloop")


def check_loop(kind: str) -> None:
    """ValueError unless ``kind`` is one of :data:`LOOPS`."""
    if kind not in LOOPS:
        raise ValueError(f"unknown loop {kind!r}: choose 'auto', 'asyncio' or 'uvloop'")


def loop_factory(kind: str = "auto") -> Callable[[], asyncio.AbstractEventLoop]:
    """The factory of the event loop ``kind`` names (ValueError for an unknown kind, or for
    ``"uvloop"`` where uvloop is not installed)."""
    check_loop(kind)
    import asyncio

    if kind == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if kind == "uvloop":
            raise ValueError("loop='uvloop' needs uvloop installed: pip install 'mcpkit[fast]'") from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run(coro: Coroutine[Any, Any, T], kind: str = "auto") -> T:
    """``asyncio.run(coro)`` on the loop ``kind`` names."""
    import asyncio

    with asyncio.Runner(loop_factory=loop_factory(kind)) as runner:
        return runner.run(coro)
