"""The stdio client transport: lines over a subprocess's pipes, matched to requests by id."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import ProtocolError, TransportClosed, TransportError
from ..protocol import codec
from ..protocol.lines import LineSplitter
from ..transports.stdio import StdioProcess
from ._pending import PendingRequests
from ._transport import NO_CREDENTIALS, Capabilities, ClientTransport, OnNote, Response, answer_request

log = logging.getLogger("mcpkit.client")


class StdioTransport(PendingRequests, ClientTransport):
    """Spawns ``command`` and speaks newline-delimited JSON-RPC with it.

    A server whose first output is not JSON-RPC (log lines on stdout, a common mistake) and
    that writes no JSON-RPC message within :attr:`garbage_grace` seconds of it fails the
    requests waiting on it at once (:class:`~mcpkit.errors.ProtocolError`), rather than
    leaving them to their time limits."""

    capabilities: ClassVar[Capabilities] = Capabilities(kind="stdio")
    #: Seconds a server whose first output was not JSON-RPC has to write a JSON-RPC message
    #: (None: wait for the requests' own time limits).
    garbage_grace: float | None = 1.0

    def __init__(self, command: str, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                 cwd: str | None = None, stderr: Any = None) -> None:
        self.proc = StdioProcess(command, args, env=env, cwd=cwd, stderr=stderr)
        self._init_pending()
        self._reader: asyncio.Task[None] | None = None
        self._spoken = False  # a JSON-RPC message came from this process
        self._garbage: asyncio.TimerHandle | None = None
        self._eof: asyncio.Future[None] | None = None  # set once the output's EOF is handled
        self._rfd = -1  # the read end of the server's stdout (-1: none, or read by _reader)
        self._lines: LineSplitter | None = None  # the server's stdout, read by _readable

    @property
    def closed(self) -> bool:
        """Whether the server is known to be gone (its output closed)."""
        return self._closed is not None

    async def start(self) -> None:
        # A restart (e.g. after a stale era verdict) begins from a clean slate.
        self._closed = None
        self.pending.clear()
        self.note_routes.clear()
        self._spoken = False
        self._cancel_garbage_verdict()
        loop = asyncio.get_running_loop()
        self._eof = loop.create_future()
        # The server's stdout on a pipe of our own, read from a loop callback: an answer resolves
        # its request's future there, with no reading task to wake in between (one loop turn less
        # per call). A loop without add_reader (the proactor) reads through a task instead.
        r, w = os.pipe()
        try:
            loop.add_reader(r, self._readable, r)
        except NotImplementedError:
            os.close(r)
            os.close(w)
            r = w = -1
        try:
            await self.proc.start(stdout=w if w >= 0 else None)
        except OSError as exc:
            if r >= 0:
                loop.remove_reader(r)
                os.close(r)
            raise TransportError(f"cannot start {self.proc.command!r}: {exc.strerror or exc}") from exc
        finally:
            if w >= 0:
                os.close(w)  # the child has it: EOF comes when the child's copy closes
        if r >= 0:
            os.set_blocking(r, False)
            self._rfd, self._lines = r, LineSplitter(self.proc.max_line)
        else:
            self._reader = loop.create_task(self._read())

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        lines = self._lines
        assert lines is not None
        if not data:
            self._stop_reading()
            last = lines.end()  # a last line without its newline
            if last is None:
                self._skipped()
            elif last:
                self._line(last)
            self._finish()
            return
        for line in lines.feed(data):
            if line is None:
                self._skipped()
            else:
                self._line(line)

    def _skipped(self) -> None:
        log.warning("skipped a line longer than %d bytes from the server", self.proc.max_line)

    def _stop_reading(self) -> None:
        if self._rfd >= 0:
            asyncio.get_running_loop().remove_reader(self._rfd)
            os.close(self._rfd)
            self._rfd = -1

    async def _read(self) -> None:
        """The reading task of a loop without add_reader."""
        try:
            while True:
                line = await self.proc.receive()
                if line is None:
                    break
                self._line(line)
        finally:
            self._finish()

    def _finish(self) -> None:
        code = self.proc.proc.returncode if self.proc.proc else None
        self._fail_all(TransportClosed(f"the server closed its output{'' if code is None else f' (exit code {code})'}"))
        if self._eof is not None and not self._eof.done():
            self._eof.set_result(None)

    def _line(self, line: bytes) -> None:
        try:
            self._handle(line)
        except Exception as exc:  # pragma: no cover - defensive
            log.debug("reading a line failed: %r", exc)

    def _handle(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            msg = codec.decode(line, parse_params=True)
        except codec.InvalidMessage as exc:
            text = line.decode("utf-8", "replace").strip()
            shown = text if len(text) <= 200 else text[:199] + "…"
            log.warning("server wrote an invalid message: %s: %s", exc.error.message, shown)
            self._saw_garbage(shown)
            return
        if not self._spoken:
            self._spoken = True
            self._cancel_garbage_verdict()
        self._dispatch(msg)

    def _saw_garbage(self, line: str) -> None:
        """Non-JSON-RPC output: if nothing else came yet, give the server a moment to speak."""
        if self._spoken or self._garbage is not None or self.garbage_grace is None or not self.pending:
            return

        def verdict() -> None:
            self._garbage = None
            if not self._spoken and self.pending:
                self._fail_all(ProtocolError(
                    f"the server writes to stdout what is not JSON-RPC ({line!r}) and no JSON-RPC message: "
                    "an MCP stdio server writes only JSON-RPC there (logs belong on stderr)"))

        self._garbage = asyncio.get_running_loop().call_later(self.garbage_grace, verdict)

    def _cancel_garbage_verdict(self) -> None:
        if self._garbage is not None:
            self._garbage.cancel()
            self._garbage = None

    async def _answer(self, msg: codec.Request) -> None:
        body = await answer_request(self.on_request, msg)
        try:
            await self.proc.send(body)
        except (ConnectionError, BrokenPipeError):
            pass

    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        fut, token = self._open(id, method, params, on_note)
        try:
            try:
                await self.proc.send(codec.encode_request(id, method, params))
            except (ConnectionError, BrokenPipeError) as exc:
                raise TransportClosed(f"the server is gone: {exc}") from None
            return Response(await fut, credentials=NO_CREDENTIALS)  # headers are not sent over stdio
        except asyncio.CancelledError:
            # Abandoned (timeout or caller cancelled): tell the server, as stdio requires.
            if self._closed is None:
                try:
                    await self.notify("notifications/cancelled", {"requestId": id, "reason": "cancelled by client"})
                except Exception:
                    pass
            raise
        finally:
            self._release(id, token)

    async def outgoing_credentials(self, headers: Mapping[str, str] | None = None) -> str | None:
        return NO_CREDENTIALS  # one process, one identity: auth headers do not travel over stdio

    async def notify(self, method: str, params: dict[str, Any] | None, *, headers: Mapping[str, str] | None = None) -> None:
        await self.proc.send(codec.encode_notification(method, params))

    async def close(self, grace: float = 2.0) -> None:
        self._cancel_garbage_verdict()
        await self.proc.close(grace)
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 1.0)
            except (TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        elif self._eof is not None and not self._eof.done():
            try:  # the output's EOF, which fails what is still pending
                await asyncio.wait_for(asyncio.shield(self._eof), 1.0)
            except TimeoutError:
                self._stop_reading()
                self._finish()

    async def abandon(self) -> None:
        await self.close(grace=0.2)  # a process still busy starting is not waited for
