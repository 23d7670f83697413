"""Running a stdio server: the opening answered without an event loop, then the loop.

Hosts often spawn a server only to ask ``server/discover`` (or list its tools) and close
it. Those first requests are answered synchronously, before asyncio is even imported,
which cuts the cold start; the first request that may need the loop (a tool call, a
legacy handshake, anything else) hands over to the asyncio session with the router (and
so the era) and the unread input carried over.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .._lazy import before_first_log
from ..protocol import codec, routing
from ._envelope import BARE

if TYPE_CHECKING:  # (at run time this module must not import asyncio, which _interface does)
    from ._interface import Dispatcher, LegacyPeer

#: Lines longer than this are refused (the rest of the line is skipped) rather than buffered.
MAX_LINE = 16 * 1024 * 1024

#: Methods the opening may answer: their handlers are mcpkit's own and never wait on I/O.
_OPENING_METHODS = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                              "resources/templates/list"})


class Out:
    """Writes whole lines to the MCP output fd; a line is never interleaved with another."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        buf = memoryview(data + b"\n")
        while buf:
            try:
                n = os.write(self.fd, buf)
            except BlockingIOError:  # a non-blocking pipe that is full: wait for the reader
                import select

                select.select([], [self.fd], [])
                continue
            buf = buf[n:]


def claim_stdout() -> int:
    """Keep the real stdout for MCP and point fd 1 (and sys.stdout) at stderr; returns the
    MCP stream's new fd.

    A stray ``print()`` in a handler, or a C library writing to fd 1, would otherwise
    corrupt the message stream.
    """
    sys.stdout.flush()
    mcp_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return mcp_fd


class Opening:
    """What the synchronous opening leaves for the event loop."""

    __slots__ = ("router", "lines", "rest", "eof")

    def __init__(self, router: routing.StdioRouter[LegacyPeer]) -> None:
        self.router = router  # it has seen every request the opening answered
        self.lines: list[bytes] = []  # complete lines not answered yet, in order
        self.rest = b""  # an incomplete last line
        self.eof = False

    def take_lines(self) -> list[bytes]:
        lines, self.lines = self.lines, []
        return lines


def answer_opening(server: Dispatcher, in_fd: int, write: Callable[[bytes], None]) -> Opening:
    """Answer discover/list requests synchronously until one needs the event loop or EOF."""
    opening = Opening(routing.StdioRouter(legacy=server.serving.legacy))
    buf = b""
    while True:
        try:
            chunk = os.read(in_fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            opening.eof = True
            opening.rest = buf
            return opening
        buf += chunk
        if len(buf) > MAX_LINE and b"\n" not in buf:
            opening.rest = buf  # an oversized line: the session refuses it properly
            return opening
        *lines, buf = buf.split(b"\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            if len(line) > MAX_LINE or not _answer_now(server, line, write, opening):
                opening.lines = lines[i:]
                opening.rest = buf
                return opening


def _answer_now(server: Dispatcher, line: bytes, write: Callable[[bytes], None], opening: Opening) -> bool:
    """Answer ``line`` here if that needs no event loop; False hands it to the loop."""
    try:
        msg = codec.decode(line)
    except codec.InvalidMessage as exc:
        write(codec.encode_error(exc.id, exc.error))
        return True
    if type(msg) is not codec.Request or msg.method not in _OPENING_METHODS:
        return False
    # Never an initialize or a ping: the router can only say "modern" here (deciding the era
    # when the request carries _meta). Handing over re-feeds the line, which says it again.
    if opening.router.receive_request(msg) is not routing.SERVE_MODERN:
        return False
    coro = server.serve(msg, BARE)
    try:
        coro.send(None)
    except StopIteration as done:
        write(done.value.body)
        return True
    coro.close()  # it wanted to wait after all: the loop will answer it (these methods are pure)
    return False


def run_stdio_server(server: Dispatcher, *, fast_exit: bool = False, in_fd: int | None = None,
                     out_fd: int | None = None, runner: Callable[[Coroutine[Any, Any, None]], object] | None = None,
                     loop: str = "auto", **kwargs: Any) -> None:
    """Serve ``server`` on stdio until stdin closes and what was in flight is answered, then return.

    ``out_fd``: an fd already claimed for MCP (see :func:`claim_stdout`); the caller keeps
    it. Otherwise stdout is claimed here, and on return the MCP stream is closed (the client
    sees EOF) while fd 1 and ``sys.stdout`` stay on stderr, so nothing printed afterwards
    can reach a client that is still reading.

    ``fast_exit`` ends the process instead of returning, right after the last answer:
    atexit handlers run and streams are flushed, but the interpreter's slow teardown is
    skipped, so a host closing many servers is not kept waiting (``mcpkit serve`` does
    this). Code after ``server.run()`` then never runs.

    ``loop``: the event loop served on once the opening is over: ``"auto"`` (uvloop where it
    is installed, as for HTTP; else asyncio's), ``"asyncio"`` or ``"uvloop"``.
    ``runner`` runs the serving coroutine instead (a proxy runs it on its backend's loop, so
    that the front and the backend client share one loop).

    Called while a server file is being loaded (see :mod:`._loading`), it serves nothing and
    hands ``server`` to the loader. A server with a ``lifespan`` is served inside it (started
    before the first line is read; a failure there is :class:`~mcpkit.errors.LifespanError`).
    """
    from . import hand_over

    hand_over(server)
    if runner is None:
        from ._loops import check_loop

        check_loop(loop)  # before anything is read
    if "logging" in sys.modules:  # the process logs already: its records are formatted from the start
        _log_to_stderr()
    else:  # set up with mcpkit's first record or before the event loop (which loads logging), not before
        before_first_log[:] = [_log_to_stderr]
    in_fd = sys.stdin.fileno() if in_fd is None else in_fd
    claimed = out_fd is None
    mcp_fd = claim_stdout() if out_fd is None else out_fd
    try:
        # No synchronous opening with a lifespan (nothing is answered before it started) or
        # with a runner (a proxy's loop runs already, and a signal landing on its thread could
        # not wake the opening's blocking read).
        if server.serving.lifespan or runner is not None:
            _logging_ready()
            from . import stdio

            serve = stdio.serve_stdio_running if server.serving.lifespan else stdio.serve_stdio
            _run(serve(server, in_fd=in_fd, out_fd=mcp_fd, **kwargs), runner, loop)
        else:
            opening = answer_opening(server, in_fd, Out(mcp_fd).write)
            if opening.lines or opening.rest or not opening.eof:
                _logging_ready()
                from .stdio import serve_stdio

                _run(serve_stdio(server, in_fd=in_fd, out_fd=mcp_fd, opening=opening, **kwargs), runner, loop)
    except KeyboardInterrupt:
        pass
    if fast_exit:
        _exit_now()
    _logging_ready()  # what runs after server.run() finds the root logger set up, as it always did
    if claimed:
        os.close(mcp_fd)


def _run(coro: Coroutine[Any, Any, None], runner: Callable[[Coroutine[Any, Any, None]], object] | None,
         loop: str) -> None:
    from .._wakeup import Stopping  # SIGINT/SIGTERM end serving cleanly, whichever thread they hit

    stopping = Stopping()
    if runner is not None:
        runner(stopping.serve(coro))
    else:
        from . import _loops

        _loops.run(stopping.serve(coro), loop)
    stopping.deliver()  # the caller's handler, now that the loop is done


def _log_to_stderr() -> None:
    import logging

    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def _logging_ready() -> None:
    """Run the root logger's set-up if it is still pending (logging loads here)."""
    if before_first_log:
        before_first_log.pop()()


def _exit_now() -> None:
    import atexit

    try:
        atexit._run_exitfuncs()  # logging.shutdown and the user's own handlers
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)
