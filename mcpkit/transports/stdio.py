"""stdio: one JSON-RPC message per line on stdin/stdout, for both ends.

Server side: requests run concurrently, ``notifications/cancelled`` cancels a handler
(and suppresses its reply), every garbage line gets an error, EOF on stdin ends the
process once in-flight requests are answered. Client side: spawn a command and speak
over its pipes, shutting down as the spec says (close stdin, wait, SIGTERM, SIGKILL).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, assert_never

from ..protocol import codec, errors, routing
from ..protocol.lines import LineSplitter
from ..protocol.routing import ServeModern
from . import _stdio_main
from ._interface import Dispatcher, Envelope, LegacyPeer
from ._stdio_main import Opening, Out, claim_stdout, run_stdio_server  # noqa: F401 (re-exported)

log = logging.getLogger("mcpkit.stdio")

#: Requests a stdio server handles at once before it stops reading (backpressure).
DEFAULT_MAX_INFLIGHT = 256


if sys.version_info >= (3, 12):
    def _start(coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
        """Start a request's task eagerly: it runs now, up to its first suspension, so a
        handler that never waits is answered in this loop step (no second pass of the loop,
        no scheduling, no wake-up)."""
        return asyncio.Task(coro, loop=loop, eager_start=True)
else:  # Python 3.11 has no eager tasks
    def _start(coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
        return loop.create_task(coro)


# ====================================================================== server
class StdioServerSession:
    """Serves one stream of lines; independent of where the lines come from.

    The era (and where each message goes) is the router's decision; this class owns the
    tasks: in-flight requests by id (ids must be unique among them), open listen streams.
    """

    def __init__(self, server: Dispatcher, write: Callable[[bytes], None],
                 router: routing.StdioRouter[LegacyPeer] | None = None, *, max_inflight: int = DEFAULT_MAX_INFLIGHT) -> None:
        self.server = server
        #: Requests handled at once (open listen streams not counted); reading waits above it.
        self.max_inflight = max_inflight
        self.write = write
        #: Carried over from the synchronous opening, when there was one.
        self.router: routing.StdioRouter[LegacyPeer] = router if router is not None else routing.StdioRouter(
            legacy=server.serving.legacy)
        self.inflight: dict[codec.RequestId, asyncio.Task[None]] = {}
        self.listens: set[asyncio.Task[None]] = set()  # open subscriptions/listen handlers
        #: The running loop, once known (asking for it costs a getpid() system call each time).
        self._loop: asyncio.AbstractEventLoop | None = None

    def full(self) -> bool:
        """Whether reading must wait for a request to finish (the hot check: one comparison)."""
        return len(self.inflight) - len(self.listens) >= self.max_inflight

    async def room(self) -> None:
        """Wait until fewer than ``max_inflight`` requests are being handled (backpressure: a
        client that floods requests, or stops reading answers, is not read from meanwhile)."""
        while self.full():
            busy = [t for t in self.inflight.values() if t not in self.listens]
            if not busy:
                return
            await asyncio.wait(busy, return_when=asyncio.FIRST_COMPLETED)

    async def _write_async(self, data: bytes) -> None:
        self.write(data)

    def feed(self, line: bytes) -> None:
        """Handle one inbound line (without its newline)."""
        if not line.strip():
            return
        try:
            msg = codec.decode(line)
        except codec.InvalidMessage as exc:
            self.write(codec.encode_error(exc.id, exc.error))
            return
        if type(msg) is codec.Request:
            rid = msg.id
            if rid in self.inflight:
                # Ids must be unique among in-flight requests; answering would be ambiguous.
                self.write(codec.encode_error(rid, errors.invalid_request(f"id {rid!r} is already in flight")))
                return
            action = self.router.receive_request(msg)
            if isinstance(action, ServeModern):  # the hot path
                task = _start(self._serve(msg), self._loop or self._running_loop())
                if not task.done():  # (an eager start may have answered it already)
                    self.inflight[rid] = task
                    if msg.method == "subscriptions/listen":
                        self.listens.add(task)
            else:
                self._request(msg, action)
        elif type(msg) is codec.Notification:
            self._notification(msg)
        else:
            assert type(msg) is codec.Response
            self._response(msg)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        self._loop = asyncio.get_running_loop()
        return self._loop

    def _request(self, req: codec.Request, action: routing.RequestAction[LegacyPeer]) -> None:
        match action:
            case routing.ServeLegacy(peer=peer):
                self._start_legacy(req, peer)
            case routing.OpenLegacy():
                peer = self.server.open_legacy_session(send=self._write_async)
                self._start_legacy(req, self.router.bind_legacy(peer).peer)
            case routing.AnswerPing():
                self.write(codec.encode_result(req.id, {}))
            case routing.Refuse(error=error):
                self.write(codec.encode_error(req.id, error))
            case routing.ServeModern():  # pragma: no cover - feed() serves these itself
                raise AssertionError("modern requests are served by feed()")
            case unexpected:
                assert_never(unexpected)

    def _notification(self, note: codec.Notification) -> None:
        match self.router.receive_notification(note):
            case routing.CancelRequest(request_id=rid):
                observer = self.server.session_observer
                if observer is not None:  # telemetry: a SERVER span
                    observer.notified(note, lambda: self._cancel(rid))
                else:
                    self._cancel(rid)
            case routing.NotifyLegacy(peer=peer):
                peer.handle_notification(note)  # the session cancels by id itself
            case routing.Ignore():
                pass
            case unexpected:
                assert_never(unexpected)

    def _cancel(self, rid: codec.RequestId) -> None:
        task = self.inflight.get(rid)
        if task is not None:
            task.cancel()  # unknown ids are ignored silently, as the spec asks

    def _response(self, resp: codec.Response) -> None:
        match self.router.receive_response(resp):
            case routing.AnswerLegacy(peer=peer):
                peer.handle_response(resp)  # an answer to its sampling/elicitation/roots request
            case routing.IgnoreResponse() as ignored:
                log.warning(ignored.warning)
            case unexpected:
                assert_never(unexpected)

    def _start_legacy(self, req: codec.Request, peer: LegacyPeer) -> None:
        task = asyncio.get_running_loop().create_task(self._serve_legacy(req, peer))
        self.inflight[req.id] = task
        peer.inflight[req.id] = task  # so the session's notifications/cancelled finds it

    async def _serve(self, req: codec.Request) -> None:
        write = self.write
        encode = codec.encode_notification

        async def emit(method: str, params: dict[str, Any]) -> None:
            write(encode(method, params))

        try:
            reply = await self.server.serve(req, Envelope(None, None, emit))
        except asyncio.CancelledError:
            return  # cancelled: nothing more is sent for this id
        finally:
            task = asyncio.current_task(self._loop)
            if self.inflight.get(req.id) is task:
                del self.inflight[req.id]
            self.listens.discard(task)
        write(reply.body)
        if req.method == "subscriptions/listen" and reply.error_code is None:
            # The server ended the subscription: after the graceful result, stdio also says
            # so with notifications/cancelled (the one use servers may make of it).
            write(encode("notifications/cancelled", {"requestId": req.id, "reason": "subscription closed by server"}))

    async def _serve_legacy(self, req: codec.Request, peer: LegacyPeer) -> None:
        try:
            reply = await peer.handle(req, self._write_async)
        except asyncio.CancelledError:
            return
        finally:
            task = asyncio.current_task()
            if self.inflight.get(req.id) is task:
                del self.inflight[req.id]
            if peer.inflight.get(req.id) is task:
                del peer.inflight[req.id]
        self.write(reply.body)

    async def drain(self, timeout: float | None) -> None:
        peer = self.router.close()
        if peer is not None:
            # Nobody is left to answer the session's requests or read its notifications; but
            # EOF is not a cancellation: what is in flight may still answer (below).
            peer.inflight.clear()
            peer.close()
        # The client closed stdin: its listen streams are over; other requests may finish.
        for task in list(self.listens):
            task.cancel()
        pending = list(self.inflight.values())
        if not pending:
            return
        done, not_done = await asyncio.wait(pending, timeout=timeout)
        for task in not_done:
            task.cancel()


async def serve_stdio(server: Dispatcher, *, drain_timeout: float = 10.0, in_fd: int | None = None,
                      out_fd: int | None = None, opening: Opening | None = None,
                      max_inflight: int = DEFAULT_MAX_INFLIGHT) -> None:
    """Serve MCP on stdin/stdout until stdin reaches EOF.

    ``max_inflight`` bounds the requests handled at once: above it no more input is read
    until one finishes (listen streams do not count).

    ``opening`` carries over what the synchronous opening phase already did (its router,
    which knows the era it decided, and the unread rest of its input).
    """
    in_fd = sys.stdin.fileno() if in_fd is None else in_fd
    out_fd = claim_stdout() if out_fd is None else out_fd
    session = StdioServerSession(server, Out(out_fd).write, opening.router if opening is not None else None,
                                 max_inflight=max_inflight)
    if opening is not None:
        for line in opening.take_lines():
            if len(line) > _stdio_main.MAX_LINE:
                session.write(codec.encode_error(None, errors.invalid_request(
                    f"message longer than {_stdio_main.MAX_LINE} bytes")))
            else:
                session.feed(line)
    if opening is None or not opening.eof:
        async for line in _lines(in_fd, session, opening.rest if opening is not None else b""):
            session.feed(line)
    elif opening.rest:
        session.feed(opening.rest)  # a last line without its newline
    await session.drain(drain_timeout)


async def serve_stdio_running(server: Dispatcher, **options: Any) -> None:
    """:func:`serve_stdio` inside the server's lifespan, which ends normally (its shutdown runs)
    at stdin EOF and on SIGTERM (unless something else, like ``mcpkit serve``, handles it)."""
    import signal
    import threading

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    handled = (main is not None and threading.current_thread() is threading.main_thread()
               and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None))
    if handled:
        assert main is not None
        loop.add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        async with server.running():
            await serve_stdio(server, **options)
    except asyncio.CancelledError:
        return  # SIGTERM (or the loop closing): the lifespan has shut down
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGTERM)


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` (pipes, sockets, ttys; not files or /dev/null)."""
    import select

    if not hasattr(select, "epoll"):
        import stat

        mode = os.fstat(fd).st_mode
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
    ep = select.epoll()
    try:
        ep.register(fd, select.EPOLLIN)
        return True
    except OSError:
        return False
    finally:
        ep.close()


async def _lines(fd: int, session: StdioServerSession, head: bytes = b"") -> AsyncIterator[bytes]:
    """Yield inbound lines until EOF (``head``: bytes already read); oversized lines are
    answered and skipped."""
    loop = asyncio.get_running_loop()
    if not _pollable(fd):
        # stdin is a regular file or /dev/null: read it on a thread instead.
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        def pump() -> None:
            with os.fdopen(fd, "rb", closefd=False) as f:
                for line in f:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, None)

        import threading

        threading.Thread(target=pump, name="mcpkit-stdin", daemon=True).start()
        while (item := await queue.get()) is not None:
            if session.full():
                await session.room()
            if head:
                item, head = head + item, b""
            yield item
        if head:
            yield head
        return
    feed = _Feed(loop, fd, session, head)
    os.set_blocking(fd, False)  # as connect_read_pipe would
    try:
        loop.add_reader(fd, feed.readable)
    except NotImplementedError:  # a loop without readiness callbacks (the proactor, on Windows)
        async for streamed in _stream_lines(loop, fd, session, head):
            yield streamed
        return
    try:
        while True:
            await feed.wake
            feed.wake = loop.create_future()
            while feed.backlog:
                if session.full():
                    await session.room()
                line = feed.backlog.popleft()
                if line is None:
                    session.write(_too_long())
                else:
                    yield line
            if feed.eof:
                last = feed.lines.end()
                if last is None:
                    session.write(_too_long())
                elif last:
                    yield last  # a last line without its newline still counts
                return
            loop.add_reader(fd, feed.readable)
    finally:
        loop.remove_reader(fd)


async def _stream_lines(loop: asyncio.AbstractEventLoop, fd: int, session: StdioServerSession,
                        head: bytes) -> AsyncIterator[bytes]:
    """:func:`_lines` through a read pipe transport and a stream reader, for loops that have
    no ``add_reader``."""
    reader = asyncio.StreamReader(limit=_stdio_main.MAX_LINE, loop=loop)
    if head:
        reader.feed_data(head)
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    try:
        while True:
            if session.full():
                await session.room()
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    yield exc.partial  # a last line without its newline still counts
                return
            except asyncio.LimitOverrunError:
                await _skip_line(reader)
                session.write(_too_long())
                continue
            yield line
    finally:
        transport.close()


def _too_long() -> bytes:
    return codec.encode_error(None, errors.invalid_request(f"message longer than {_stdio_main.MAX_LINE} bytes"))


class _Feed:
    """The read side of the stdio server: the loop calls :meth:`readable` when stdin has data,
    and complete lines go straight to the session from that callback (no stream reader, no
    reading task to wake between a line arriving and its request starting). When the session
    is full, or at EOF, reading stops and :func:`_lines` (woken through ``wake``) takes over
    the lines left in ``backlog``.

    A line longer than ``MAX_LINE`` is skipped up to its newline and answered with one error
    (``None`` in the backlog keeps its place among the lines).
    """

    __slots__ = ("loop", "fd", "session", "lines", "backlog", "eof", "wake")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, session: StdioServerSession, head: bytes) -> None:
        self.loop = loop
        self.fd = fd
        self.session = session
        self.lines = LineSplitter(_stdio_main.MAX_LINE, head)
        self.backlog: deque[bytes | None] = deque()
        self.eof = False
        self.wake: asyncio.Future[None] = loop.create_future()

    def readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)  # (not 256 KiB as asyncio's pipes: that is an mmap per read)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # a broken stdin ends the session as EOF does
        if not data:
            self.eof = True
            self._stop()
            return
        session, backlog = self.session, self.backlog
        for line in self.lines.feed(data):
            if backlog or session.full():
                backlog.append(line)
            elif line is None:
                session.write(_too_long())
            else:
                session.feed(line)
        if backlog:
            self._stop()

    def _stop(self) -> None:
        self.loop.remove_reader(self.fd)
        if not self.wake.done():
            self.wake.set_result(None)


async def _skip_line(reader: asyncio.StreamReader) -> None:
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


# ====================================================================== client
class StdioProcess:
    """A server subprocess and its pipes, as the client's line transport."""

    def __init__(self, command: str, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                 cwd: str | None = None, stderr: Any = None) -> None:
        self.command = command
        self.args = list(args or [])
        self.env = env
        self.cwd = cwd
        self.stderr = stderr
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def max_line(self) -> int:
        """The longest line read from the server (longer ones are skipped)."""
        return _stdio_main.MAX_LINE

    async def start(self, stdout: int | None = None) -> None:
        """Spawn the process; its stdout goes to the fd ``stdout`` when given (the caller reads
        it), else to a pipe :meth:`receive` reads."""
        env = None
        if self.env is not None:
            env = {**os.environ, **self.env}
        self.proc = await asyncio.create_subprocess_exec(
            self.command, *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE if stdout is None else stdout,
            stderr=self.stderr, env=env, cwd=self.cwd, limit=_stdio_main.MAX_LINE,
        )

    async def send(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        stdin = self.proc.stdin
        stdin.write(data + b"\n")
        # Waited only when there is something to wait for: bytes the pipe did not take yet (flow
        # control) or a pipe closing (drain raises its error). A line the pipe took at once, the
        # usual case, skips drain's coroutine.
        if stdin.transport.get_write_buffer_size() or stdin.transport.is_closing():
            await stdin.drain()

    async def receive(self) -> bytes | None:
        """The next line, or None at EOF."""
        assert self.proc is not None and self.proc.stdout is not None
        try:
            line = await self.proc.stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            await _skip_line(self.proc.stdout)
            log.warning("skipped a line longer than %d bytes from the server", _stdio_main.MAX_LINE)
            return b""
        return line

    async def close(self, grace: float = 2.0) -> int | None:
        """Close stdin, wait; then SIGTERM, wait; then SIGKILL."""
        proc = self.proc
        if proc is None:
            return None
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for step in (None, "terminate", "kill"):
            if step == "terminate":
                _signal(proc, proc.terminate)
            elif step == "kill":
                _signal(proc, proc.kill)
            try:
                return await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                continue
        return proc.returncode


def _signal(proc: asyncio.subprocess.Process, fn: Callable[[], None]) -> None:
    try:
        fn()
    except ProcessLookupError:
        pass
