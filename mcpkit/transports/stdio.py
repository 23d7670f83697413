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
from typing import TYPE_CHECKING, Any, Callable

from ..protocol import codec, eras, errors
from . import _stdio_main
from ._stdio_main import Out, claim_stdout, run_stdio_server  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from ..server import Server

log = logging.getLogger("mcpkit.stdio")



# ====================================================================== server
class StdioServerSession:
    """Serves one stream of lines; independent of where the lines come from."""

    def __init__(self, server: "Server", write: Callable[[bytes], None]) -> None:
        self.server = server
        self.write = write
        self.inflight: dict[Any, asyncio.Task] = {}
        self.listens: set[asyncio.Task] = set()  # open subscriptions/listen handlers
        #: Decided by the first ``initialize`` (legacy) or ``_meta``-carrying request (modern).
        self.era: str | None = None
        self.legacy: Any = None  # the LegacySession of a legacy process

    async def _write_async(self, data: bytes) -> None:
        self.write(data)

    def _route(self, req: codec.Request) -> str | errors.MCPError:
        """Which era serves ``req``: the process's, decided by its first request."""
        era = self.era
        if era == "modern" and req.method != "initialize":
            return "modern"  # the hot path: no second look at params
        params = codec.params_dict(req.params)
        kind = eras.request_era(params)
        if era is None:
            if kind == "modern":
                self.era = "modern"
                return "modern"
            if req.method == "ping" and self.server.legacy:
                return "ping"  # 2025-11-25 allows a ping before initialize; it decides nothing
            if req.method == "initialize" and self.server.legacy:
                from ..server._legacy import LegacySession

                bad = LegacySession.validate_initialize(params)
                if bad is not None:
                    return bad  # a broken handshake decides nothing
                self.era = "legacy"
                self.legacy = LegacySession(self.server, send=self._write_async)
                return "legacy"
            return "modern"  # undecided: the modern ladder answers it (and names what is missing)
        if era == "modern":
            if kind == "modern":
                return "modern"
            return errors.invalid_request(
                "this stdio session already speaks 2026-07-28 (per-request _meta); initialize is not accepted now")
        if kind == "modern":
            return errors.invalid_request(
                f"this stdio session speaks {self.legacy.version or 'the legacy protocol'} after initialize; "
                "a 2026-07-28 request (_meta) cannot be mixed in: start a new process")
        return "legacy"

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
            if msg.id in self.inflight:
                # Ids must be unique among in-flight requests; answering would be ambiguous.
                self.write(codec.encode_error(msg.id, errors.invalid_request(f"id {msg.id!r} is already in flight")))
                return
            route = self._route(msg)
            if isinstance(route, errors.MCPError):
                self.write(codec.encode_error(msg.id, route))
                return
            if route == "ping":
                self.write(codec.encode_result(msg.id, {}))
                return
            task = asyncio.get_running_loop().create_task(self._serve(msg) if route == "modern" else self._serve_legacy(msg))
            self.inflight[msg.id] = task
            if msg.method == "subscriptions/listen":
                self.listens.add(task)
        elif type(msg) is codec.Notification:
            if msg.method == "notifications/cancelled":
                self._cancel(msg.params)
            elif self.legacy is not None:
                self.legacy.handle_notification(msg)
            # Other client notifications carry nothing a stateless server must act on.
        elif self.legacy is not None:
            self.legacy.handle_response(msg)  # an answer to our sampling/elicitation/roots request
        else:
            log.warning("ignoring a JSON-RPC response from the client (2026-07-28 servers send no requests)")

    def _cancel(self, raw: Any) -> None:
        params = codec.params_dict(raw) if raw is not None else None
        rid = params.get("requestId") if isinstance(params, dict) else None
        # Only a string or integer names a request (True == 1 in Python, but not in JSON-RPC).
        task = self.inflight.get(rid) if type(rid) in (int, str) else None
        if task is not None:
            task.cancel()  # malformed or unknown cancellations are ignored silently, as the spec asks

    async def _serve(self, req: codec.Request) -> None:
        write = self.write
        encode = codec.encode_notification

        async def emit(method: str, params: dict) -> None:
            write(encode(method, params))

        try:
            reply = await self.server.handle(req, emit)
        except asyncio.CancelledError:
            return  # cancelled: nothing more is sent for this id
        finally:
            if self.inflight.get(req.id) is asyncio.current_task():
                del self.inflight[req.id]
            self.listens.discard(asyncio.current_task())  # type: ignore[arg-type]
        write(reply.body)
        if req.method == "subscriptions/listen" and reply.error_code is None:
            # The server ended the subscription: after the graceful result, stdio also says
            # so with notifications/cancelled (the one use servers may make of it).
            write(encode("notifications/cancelled", {"requestId": req.id, "reason": "subscription closed by server"}))

    async def _serve_legacy(self, req: codec.Request) -> None:
        try:
            reply = await self.legacy.handle(req, self._write_async)
        except asyncio.CancelledError:
            return
        finally:
            if self.inflight.get(req.id) is asyncio.current_task():
                del self.inflight[req.id]
        self.write(reply.body)

    async def drain(self, timeout: float | None) -> None:
        if self.legacy is not None:
            self.legacy.close()  # nobody is left to answer our requests or read notifications
        # The client closed stdin: its listen streams are over; other requests may finish.
        for task in list(self.listens):
            task.cancel()
        pending = list(self.inflight.values())
        if not pending:
            return
        done, not_done = await asyncio.wait(pending, timeout=timeout)
        for task in not_done:
            task.cancel()


async def serve_stdio(server: "Server", *, drain_timeout: float = 10.0, in_fd: int | None = None,
                      out_fd: int | None = None, opening: Any = None) -> None:
    """Serve MCP on stdin/stdout until stdin reaches EOF.

    ``opening`` carries over what the synchronous opening phase already did (the era it
    decided, and the unread rest of its input).
    """
    in_fd = sys.stdin.fileno() if in_fd is None else in_fd
    out_fd = claim_stdout() if out_fd is None else out_fd
    session = StdioServerSession(server, Out(out_fd).write)
    if opening is not None:
        session.era = opening.era
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


async def _lines(fd: int, session: StdioServerSession, head: bytes = b"") -> Any:
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
            if head:
                item, head = head + item, b""
            yield item
        if head:
            yield head
        return
    reader = asyncio.StreamReader(limit=_stdio_main.MAX_LINE, loop=loop)
    if head:
        reader.feed_data(head)
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    try:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    yield exc.partial  # a last line without its newline still counts
                return
            except asyncio.LimitOverrunError:
                await _skip_line(reader)
                session.write(codec.encode_error(None, errors.invalid_request(f"message longer than {_stdio_main.MAX_LINE} bytes")))
                continue
            yield line
    finally:
        transport.close()


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

    async def start(self) -> None:
        env = None
        if self.env is not None:
            env = {**os.environ, **self.env}
        self.proc = await asyncio.create_subprocess_exec(
            self.command, *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr, env=env, cwd=self.cwd, limit=_stdio_main.MAX_LINE,
        )

    async def send(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        await self.proc.stdin.drain()

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
            except asyncio.TimeoutError:
                continue
        return proc.returncode


def _signal(proc: asyncio.subprocess.Process, fn: Callable[[], None]) -> None:
    try:
        fn()
    except ProcessLookupError:
        pass
