"""The backend's own event loop, on a daemon thread.

The proxy's front is an ordinary :class:`~mcpkit.Server`, served however servers are served
(stdio, uvicorn, workers), each of which runs its own event loop. The backend
:class:`~mcpkit.Client` lives on this loop instead, so it is connected once, before serving
starts (the front must know the backend's capabilities to answer ``initialize``), and keeps
working whatever loop the front runs on. Front coroutines reach it through :meth:`LoopThread.run`;
cancelling the awaiting front task cancels the backend coroutine.

Crossing threads costs about a quarter of a millisecond a call (two loop wake-ups each way),
more than the proxy's own work: so the proxy's own serving (``ProxyServer.run``, ``mcpkit
proxy``) runs the front on this very loop (:meth:`LoopThread.run_here`), and :meth:`run`
then awaits the backend coroutine directly.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..transports import loop_factory

T = TypeVar("T")


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (what uvicorn serves on by default), else asyncio's."""
    return loop_factory("auto")()


class LoopThread:
    """One event loop running forever on a daemon thread."""

    def __init__(self, name: str = "mcpkit-proxy-backend") -> None:
        self.name = name
        self.loop = _new_loop()
        self._thread = self._start()

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        thread.start()
        return thread

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def on_loop(self) -> bool:
        """Whether the caller runs on this loop."""
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the backend loop from any other loop (or directly on this one)."""
        if self.on_loop():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the backend loop and block until it is done (startup, shutdown)."""
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise

    def run_here(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on this loop in the calling thread until it is done (the front's
        serving coroutine: front and backend then share one loop, no thread hop per call).

        The daemon thread hands the loop over (its ``run_forever`` stops; transports, tasks
        and the backend client stay as they are) and gets it back afterwards, whatever
        ``coro`` raised (a signal's exception included), so :meth:`run_sync` works again.
        """
        if self.on_loop():
            raise RuntimeError("run_here: already on the backend loop")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        asyncio.set_event_loop(self.loop)
        task = self.loop.create_task(coro)
        try:
            return self.loop.run_until_complete(task)
        finally:
            if not task.done():  # interrupted (a signal): the serving coroutine ends here too
                task.cancel()
                try:
                    self.loop.run_until_complete(task)
                except BaseException:  # it was cancelled: what it raised is moot
                    pass
            asyncio.set_event_loop(None)
            self._thread = self._start()

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(2.0)
