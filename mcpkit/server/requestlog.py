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

Never logged: tokens and headers; argument values only with ``arguments=True``
(``--log-arguments``): they may hold secrets. Nothing is installed, so nothing is paid per
request, unless you install it.
"""

from __future__ import annotations

import sys
import time
from typing import IO, TYPE_CHECKING, Any

from ..protocol import errors, versions
from ..protocol.types import CallToolParams, GetPromptParams, request_target
from ._input import InputRequired

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Handler
    from ._server import Server

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
            import asyncio

            outcome = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
            code = None if outcome == "cancelled" else errors.INTERNAL_ERROR
            raise
        else:
            if getattr(result, "isError", False) is True:
                outcome = "tool_error"
            return result
        finally:
            self._write(ctx, params, (time.perf_counter() - start) * 1000.0, outcome, code)

    def _write(self, ctx: Context, params: Any, ms: float, outcome: str, code: int | None) -> None:
        now = time.time()
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z",
            "level": "info" if outcome in ("ok", "tool_error", "input_required") else "warning",
            "method": ctx.method,
        }
        name, uri = request_target(params)
        if name is not None or uri is not None:
            line["target"] = name if name is not None else uri
        line["id"] = ctx.request_id
        line["duration_ms"] = round(ms, 3)
        line["outcome"] = outcome
        if code is not None:
            line["error_code"] = code
        version = ctx.protocol_version
        line["era"] = "modern" if versions.is_modern(version) else "legacy"
        line["protocol_version"] = version
        if self.transport is not None:
            line["transport"] = self.transport
        if ctx.peer is not None:
            line["peer"] = ctx.peer
        auth = ctx.auth
        if auth is not None:
            who = auth.subject or getattr(auth, "client_id", None)
            if who:
                line["principal"] = who
        if self.arguments and isinstance(params, (CallToolParams, GetPromptParams)):
            line["arguments"] = params.arguments
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
