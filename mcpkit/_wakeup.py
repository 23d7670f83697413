"""Signals that wake the event loop, wherever the kernel delivers them.

The kernel may hand a process-directed signal (Ctrl-C's SIGINT, a supervisor's SIGTERM) to
any of the process's threads, and asyncio keeps some (the child watcher keeps one per
subprocess, ``to_thread`` a pool). Python runs a ``signal.signal`` handler only once the main
thread next runs Python code, and a main thread blocked in the selector (waiting for a line
on stdin, for a person to type an answer) does not: the signal was lost until the next byte
arrived. A wakeup fd makes the signal also write a byte the loop is watching, so the
selector returns and the handler runs at once. ``loop.add_signal_handler`` sets one; code
that handles its signals with ``signal.signal`` (``asyncio.run``'s SIGINT, ``mcpkit serve``
and ``mcpkit proxy``) needs :func:`signals_wake`.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """:func:`asyncio.run` of ``main`` inside :func:`signals_wake` (the CLI's commands: Ctrl-C
    at a prompt stops the command at once, not once Enter is pressed)."""
    import asyncio

    async def woken() -> T:
        with signals_wake(asyncio.get_running_loop()):
            return await main

    return asyncio.run(woken())


@contextmanager
def signals_wake(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While inside, every signal wakes ``loop``: on the main thread, where no wakeup fd is set
    yet (one that is, the loop's own or uvloop's, already does this and is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # another thread's loop: signals are the main thread's to wait for
        return
    theirs, ours = socket.socketpair()
    theirs.setblocking(False)
    ours.setblocking(False)
    previous = signal.set_wakeup_fd(ours.fileno(), warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        theirs.close()
        ours.close()
        yield
        return

    def drain() -> None:
        try:
            while theirs.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    loop.add_reader(theirs.fileno(), drain)
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)
        loop.remove_reader(theirs.fileno())
        theirs.close()
        ours.close()


class Stopping:
    """Serve until SIGINT or SIGTERM, then run the handler the caller installed for it outside
    the event loop.

    A ``signal.signal`` handler that raises to stop serving (``mcpkit serve``'s, ``mcpkit
    proxy``'s, Python's own KeyboardInterrupt) raises wherever the main thread happens to be:
    inside one of uvloop's callbacks, which logs anything but a KeyboardInterrupt and serves
    on, or inside a task, which logs "exception never retrieved". :meth:`serve` takes those
    signals over while the loop runs (with a handler that only asks the loop to cancel the
    serving coroutine: a lifespan shuts down cleanly) and :meth:`deliver` then calls the
    caller's handler once the loop has returned. A signal that comes as serving ends anyway
    (stdin closed at the same moment) is still delivered."""

    __slots__ = ("got", "_taken")

    def __init__(self) -> None:
        self.got: int | None = None
        self._taken: dict[int, Any] = {}

    async def serve(self, main: Coroutine[Any, Any, T]) -> T | None:
        import asyncio

        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None or threading.current_thread() is not threading.main_thread():
            return await main

        def stop(signum: int, _frame: Any) -> None:
            # a Python handler (run on the main thread, in whatever the loop is doing) that
            # never raises: it asks the loop to cancel serving, from its next step
            if self.got is None:
                self.got = signum
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:  # the loop is closing: serving is over anyway
                    pass

        for sig in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(sig)
            if callable(handler):
                self._taken[sig] = handler
                signal.signal(sig, stop)
        try:
            with signals_wake(loop):
                return await main
        except asyncio.CancelledError:
            if self.got is None:
                raise
            return None
        finally:
            for signum, handler in self._taken.items():
                signal.signal(signum, handler)

    def deliver(self) -> None:
        """Run the caller's handler for the signal that stopped serving (if one did)."""
        if self.got is not None:  # (set only by the handler that replaced the caller's)
            self._taken[self.got](self.got, None)
