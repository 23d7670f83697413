"""Structured request logs: one JSON line per request (``mcpkit serve --log-format json``).

::

    from mcpkit.server.requestlog import RequestLog

    RequestLog(transport="http").install(server)          # to sys.stderr
    RequestLog(stream=open("requests.log", "a"), arguments=True).install(server)

Each line is one JSON object::

    {"time": "2026-12-02T12:00:00.123Z", "level": "info", "method": "tools/call", "target": "add",
     "id": 7, "duration_ms": 0.41, "outcome": "ok", "era": "modern", "protocol_version": "2026-07-28",
     "transport": "http", "peer": "10.0.0.7", "principal": "alice"}

``target``: the tool or prompt name, or the resource URI; ``outcome``: ``ok``,
``tool_error`` (a tool answered ``isError: true``), ``error`` (then ``error_code``, the
JSON-RPC code: ``-32029`` a rate limit, ``-32030`` a budget, ``-32603`` an internal
error...), ``input_required`` (an MRTR round asked the client) or ``cancelled``. ``era``:
``modern`` (2026-07-28) or ``legacy`` (a 2025-11-25 session). ``principal``: the OAuth
subject (or client id), when the server is protected; ``peer``: the caller's address over
HTTP. ``trace_id``/``span_id``: the current OpenTelemetry span, when tracing is on.

A 2025-11-25 session's own methods (``initialize``, ``ping``, ``logging/setLevel``,
``resources/subscribe``...) get a line each too (through ``Server.add_session_observer``:
no handler answers them), and so does each notification a client sends: ``method``,
``outcome``, ``duration_ms``, ``era``..., no ``id``.

Never logged: tokens and headers; argument values only with ``arguments=True``
(``--log-arguments``): they may hold secrets. Nothing is installed, so nothing is paid per
request, unless you install it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from typing import IO, TYPE_CHECKING, Any

from ..protocol import codec, errors, versions
from ..protocol.meta import PROTOCOL_VERSION
from ..protocol.types import CallToolParams, CallToolResult, GetPromptParams, request_target
from ._input import InputRequired

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Handler
    from ._legacy import LegacySession
    from ._server import Server
    from .auth import Principal

__all__ = ["RequestLog"]


class RequestLog:
    """The middleware: ``RequestLog(stream=sys.stderr, transport=None, arguments=False).install(server)``.

    Install it before OpenTelemetry (``mcpkit serve`` does), so that the request span is
    current when a line is written, and after rate limits, so that refusals are logged."""

    def __init__(self, stream: IO[str] | None = None, *, transport: str | None = None, arguments: bool = False) -> None:
        self.stream = stream
        self.transport = transport
        self.arguments = arguments
        import msgspec

        self._encode = msgspec.json.Encoder().encode
        trace = sys.modules.get("opentelemetry.trace")
        self._trace: Any = trace

    def install(self, server: Server) -> RequestLog:
        server.add_middleware(self)
        server.add_session_observer(self)  # the legacy session's own methods, the notifications
        return self

    async def __call__(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        start = time.perf_counter()
        outcome, code = "ok", None
        try:
            result = await call_next(ctx, params)
        except errors.MCPError as exc:
            outcome, code = "error", exc.code
            raise
        except InputRequired:
            outcome = "input_required"
            raise
        except BaseException as exc:
            outcome, code = _failed(exc)
            raise
        else:
            if _is_tool_error(result):
                outcome = "tool_error"
            return result
        finally:
            ms = (time.perf_counter() - start) * 1000.0
            name, uri = request_target(params)
            arguments = params.arguments if self.arguments and isinstance(
                params, (CallToolParams, GetPromptParams)) else _NONE
            self._write(ctx.method, name if name is not None else uri, ctx.request_id, ms, outcome, code,
                        ctx.protocol_version, ctx.peer, ctx.auth, arguments)

    # ------------------------------------------------------------ as Server.session_observer
    def session(self, session: LegacySession, resumed: bool = False) -> _SessionLog:
        """The log of one legacy session: its own methods and the client's notifications."""
        return _SessionLog(self, session)

    def notified(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        """A notification outside any legacy session (a 2026-07-28 client's ``notifications/cancelled``)."""
        params = codec.params_dict(note.params)
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
        self.noted(note, handle, version if isinstance(version, str) else None, None, None)

    def noted(self, note: codec.Notification, handle: Callable[[], None], version: str | None, peer: str | None,
              auth: Any, legacy: bool = False) -> None:
        """Handle one notification (``handle()``) and write its line (no id)."""
        start = time.perf_counter()
        outcome, code = "ok", None
        try:
            handle()
        except BaseException as exc:
            outcome, code = _failed(exc)
            raise
        finally:
            self._write(note.method, None, _NONE, (time.perf_counter() - start) * 1000.0, outcome, code, version,
                        peer, auth, _NONE, legacy)

    # ------------------------------------------------------------ the line
    def _write(self, method: str, target: Any, rid: Any, ms: float, outcome: str, code: int | None,
               version: str | None, peer: str | None, auth: Principal | None, arguments: Any,
               legacy: bool = False) -> None:
        now = time.time()
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z",
            "level": "info" if outcome in ("ok", "tool_error", "input_required") else "warning",
            "method": method,
        }
        if target is not None:
            line["target"] = target
        if rid is not _NONE:
            line["id"] = rid
        line["duration_ms"] = round(ms, 3)
        line["outcome"] = outcome
        if code is not None:
            line["error_code"] = code
        if version is not None:
            line["era"] = "modern" if versions.is_modern(version) else "legacy"
            line["protocol_version"] = version
        elif legacy:  # a session's notification read before its initialize was answered
            line["era"] = "legacy"
        if self.transport is not None:
            line["transport"] = self.transport
        if peer is not None:
            line["peer"] = peer
        if auth is not None:
            who = auth.subject or auth.client_id
            if who:
                line["principal"] = who
        if arguments is not _NONE:
            line["arguments"] = arguments
        trace = self._trace if self._trace is not None else sys.modules.get("opentelemetry.trace")
        if trace is not None:
            span = trace.get_current_span().get_span_context()
            if span.is_valid:
                line["trace_id"] = f"{span.trace_id:032x}"
                line["span_id"] = f"{span.span_id:016x}"
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            data = self._encode(line)
        except TypeError:  # an argument value msgspec cannot encode
            line["arguments"] = repr(line.get("arguments"))
            data = self._encode(line)
        stream.write(data.decode() + "\n")
        stream.flush()


#: No value (a notification's id, arguments not logged).
_NONE: Any = object()


def _failed(exc: BaseException) -> tuple[str, int | None]:
    """The outcome and code of a handler that raised ``exc`` (not an MCPError)."""
    import asyncio

    if isinstance(exc, asyncio.CancelledError):
        return "cancelled", None
    if isinstance(exc, errors.MCPError):
        return "error", exc.code
    return "error", errors.INTERNAL_ERROR


class _SessionLog:
    """One legacy session's lines: the methods it answers itself (``initialize``, ``ping``,
    ``logging/setLevel``, ``resources/subscribe``...) and the notifications its client sends."""

    __slots__ = ("log", "session")

    def __init__(self, log: RequestLog, session: LegacySession) -> None:
        self.log = log
        self.session = session

    async def handled(self, req: codec.Request, answer: Awaitable[codec.Reply]) -> codec.Reply:
        start = time.perf_counter()
        outcome, code = "ok", None
        try:
            reply = await answer
        except BaseException as exc:
            outcome, code = _failed(exc)
            raise
        else:
            if reply.error_code is not None:
                outcome, code = "error", reply.error_code
            return reply
        finally:
            session = self.session
            params = codec.params_dict(req.params)
            uri = params.get("uri") if isinstance(params, dict) else None
            self.log._write(req.method, uri if isinstance(uri, str) else None, req.id,
                            (time.perf_counter() - start) * 1000.0, outcome, code, session.version, session.address,
                            session.auth, _NONE, True)

    def received(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        session = self.session
        self.log.noted(note, handle, session.version, session.address, session.auth, True)

    def asked(self, request_id: Any, method: str, params: dict[str, Any],
              send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Awaitable[Any]:
        return send(params)

    def pushed(self, method: str, params: dict[str, Any] | None,
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> Awaitable[None]:
        return send(params or {})

    def closed(self) -> None:
        pass


def _is_tool_error(result: Any) -> bool:
    """Whether a handler's result is a tool result with ``isError`` (typed, or a plain dict
    from a handler that answers with one, such as a proxy's)."""
    if isinstance(result, CallToolResult):
        return result.isError is True
    return isinstance(result, dict) and result.get("isError") is True
