"""Client transports: each sends one request and returns its response message."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..protocol import codec, errors
from ..transports.stdio import StdioProcess

if TYPE_CHECKING:
    from ..server import Server

log = logging.getLogger("mcpkit.client")

#: Receives (method, params) of a notification that belongs to one request.
OnNote = Callable[[str, dict], Any]
#: Answers a server-to-client request (legacy sessions only): (method, params) -> result.
OnRequest = Callable[[str, dict], Awaitable[Any]]


async def answer_request(on_request: "OnRequest | None", msg: codec.Request) -> bytes:
    """The encoded response to a server's request (legacy sessions: sampling, elicitation, roots, ping)."""
    if on_request is None:
        return codec.encode_error(msg.id, errors.method_not_found(msg.method))
    try:
        result = await on_request(msg.method, msg.params or {})
    except errors.MCPError as exc:
        return codec.encode_error(msg.id, exc)
    except Exception as exc:
        log.exception("answering the server's %s failed", msg.method)
        return codec.encode_error(msg.id, errors.internal_error(f"the client failed to answer {msg.method}: {exc}"))
    return codec.encode_result(msg.id, result)


class TransportError(Exception):
    """A local failure (the server went away, a timeout): never a JSON-RPC error from the peer."""


class TransportClosed(TransportError):
    pass


class ClientTransport:
    async def start(self) -> None: ...

    async def request(self, id: Any, method: str, params: dict, on_note: OnNote | None) -> codec.Response:
        raise NotImplementedError

    async def notify(self, method: str, params: dict | None) -> None: ...

    async def close(self) -> None: ...


class StdioTransport(ClientTransport):
    """Lines over a subprocess's pipes; responses are matched to requests by id."""

    def __init__(self, command: str, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                 cwd: str | None = None, stderr: Any = None, on_notification: OnNote | None = None) -> None:
        self.proc = StdioProcess(command, args, env=env, cwd=cwd, stderr=stderr)
        self.pending: dict[Any, asyncio.Future] = {}
        self.note_routes: dict[Any, OnNote] = {}  # progress token -> the request's callback
        self.on_notification = on_notification
        self.on_request: OnRequest | None = None  # set for legacy sessions
        self._reader: asyncio.Task | None = None
        self._closed: BaseException | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        # A restart (e.g. after a stale era verdict) begins from a clean slate.
        self._closed = None
        self.pending.clear()
        self.note_routes.clear()
        try:
            await self.proc.start()
        except OSError as exc:
            raise TransportError(f"cannot start {self.proc.command!r}: {exc.strerror or exc}") from exc
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            while True:
                line = await self.proc.receive()
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    msg = codec.decode(line, parse_params=True)
                except codec.InvalidMessage as exc:
                    log.warning("server wrote an invalid message: %s", exc.error.message)
                    continue
                if type(msg) is codec.Response:
                    fut = self.pending.pop(msg.id, None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg)
                elif type(msg) is codec.Notification:
                    self._route(msg)
                elif self.on_request is not None or msg.method == "ping":
                    task = asyncio.ensure_future(self._answer(msg))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                else:
                    log.warning("server sent a request (%s) on stdio; 2026-07-28 servers never do", msg.method)
                    await self.proc.send(codec.encode_error(msg.id, errors.method_not_found(msg.method)))
        except Exception as exc:  # pragma: no cover - defensive
            log.debug("reader stopped: %r", exc)
        finally:
            code = self.proc.proc.returncode if self.proc.proc else None
            self._fail_all(TransportClosed(f"the server closed its output{'' if code is None else f' (exit code {code})'}"))

    async def _answer(self, msg: codec.Request) -> None:
        if msg.method == "ping" and self.on_request is None:
            body = codec.encode_result(msg.id, {})
        else:
            body = await answer_request(self.on_request, msg)
        try:
            await self.proc.send(body)
        except (ConnectionError, BrokenPipeError):
            pass

    def _route(self, msg: codec.Notification) -> None:
        params = msg.params or {}
        meta = params.get("_meta")
        sid = meta.get("io.modelcontextprotocol/subscriptionId") if isinstance(meta, dict) else None
        if sid is not None:
            cb = self.note_routes.get(("listen", type(sid).__name__, sid))
        elif msg.method == "notifications/progress":
            token = params.get("progressToken")
            cb = self.note_routes.get(token) if token is not None else None
        else:
            cb = None
        if cb is None:
            cb = self.on_notification
        if cb is not None:
            try:
                cb(msg.method, params)
            except Exception:
                log.exception("notification callback failed")

    def _fail_all(self, exc: BaseException) -> None:
        self._closed = exc
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()

    async def request(self, id: Any, method: str, params: dict, on_note: OnNote | None) -> codec.Response:
        if self._closed is not None:
            raise self._closed
        fut = asyncio.get_running_loop().create_future()
        self.pending[id] = fut
        token = (params.get("_meta") or {}).get("progressToken")
        if method == "subscriptions/listen":
            token = ("listen", type(id).__name__, id)  # matched by subscriptionId, JSON type included
        if on_note is not None and token is not None:
            self.note_routes[token] = on_note
        try:
            try:
                await self.proc.send(codec.encode_request(id, method, params))
            except (ConnectionError, BrokenPipeError) as exc:
                raise TransportClosed(f"the server is gone: {exc}") from None
            return await fut
        except asyncio.CancelledError:
            # Abandoned (timeout or caller cancelled): tell the server, as stdio requires.
            if self._closed is None:
                try:
                    await self.notify("notifications/cancelled", {"requestId": id, "reason": "cancelled by client"})
                except Exception:
                    pass
            raise
        finally:
            self.pending.pop(id, None)
            if token is not None:
                self.note_routes.pop(token, None)

    async def notify(self, method: str, params: dict | None) -> None:
        await self.proc.send(codec.encode_notification(method, params))

    async def close(self) -> None:
        await self.proc.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 1.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()


class MemoryTransport(ClientTransport):
    """Talks to a ``Server`` object in this process, through the same codec and ladder as a wire."""

    def __init__(self, server: "Server", on_notification: OnNote | None = None) -> None:
        self.server = server
        self.on_notification = on_notification

    async def request(self, id: Any, method: str, params: dict, on_note: OnNote | None) -> codec.Response:
        req = codec.decode(codec.encode_request(id, method, params))
        cb = on_note or self.on_notification

        async def emit(m: str, p: dict) -> None:
            note = codec.decode(codec.encode_notification(m, p), parse_params=True)
            if cb is not None:
                cb(note.method, note.params)

        reply = await self.server.handle(req, emit)  # type: ignore[arg-type]
        msg = codec.decode(reply.body)
        assert type(msg) is codec.Response
        return msg
