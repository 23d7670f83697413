"""The server side: one SERVER span and one ``mcp.server.operation.duration`` point per request.

Installed through the server's public middleware hook (``Server.add_middleware``), so the
span covers the handler and every wrapper inside it, in both eras. The parent is the trace
context the client put in ``params._meta`` (``traceparent``/``tracestate``/``baggage``);
the ambient context (e.g. an HTTP server span from ASGI instrumentation) is linked. The
notifications a handler sends (progress, log messages, listen streams' changes) get CLIENT
spans, children of the request's span, their context in their own ``params._meta``.

An MRTR round that ends ``input_required`` is not an error: its span says so with an
``mcp.input_required`` event; the retry is another request, whose span is another child of
the client's one span for the whole call (its ``_meta`` carries that span's context).

Legacy sessions (``Server.session_observer``, see :mod:`._session`) add the session's own
methods, the notifications in both directions, the server's requests to the client and
``mcp.server.session.duration``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Status, StatusCode, TracerProvider

from ..protocol import codec
from ..protocol import types as t
from ..protocol.meta import PROTOCOL_VERSION as PROTOCOL_VERSION_KEY
from ..protocol.types import request_target
from ..server import Context, Handler, InputRequired
from . import _conv as C
from ._spans import Instruments, Measured, perf

if TYPE_CHECKING:
    from ._session import SessionTelemetry


class ServerTelemetry:
    """The middleware (``await telemetry(ctx, params, call_next)``) and its instruments; also
    the server's ``session_observer`` (``telemetry.session(legacy_session)``)."""

    def __init__(self, *, transport: str | None = None, capture_content: bool = False,
                 tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None) -> None:
        #: ``network.transport`` (``pipe``, ``tcp``), when the transport is known.
        self.transport = C.TRANSPORTS.get(transport or "", transport)
        #: Record ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result`` (they may hold secrets).
        self.capture_content = capture_content
        self.instruments = Instruments(tracer_provider, meter_provider)
        self.tracer = self.instruments.tracer
        self.duration = self.instruments.server_operation
        #: The attributes every span of this server carries (the transport's).
        self.network: dict[str, Any] = {}
        if self.transport is not None:
            self.network[C.NETWORK_TRANSPORT] = self.transport
            if self.transport == "tcp":
                self.network[C.NETWORK_PROTOCOL_NAME] = "http"

    def session(self, session: Any, resumed: bool = False) -> SessionTelemetry:
        """The observer of one legacy session (called when the session is made)."""
        from ._session import SessionTelemetry

        return SessionTelemetry(self, session, resumed)

    def notified(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        """A notification outside any legacy session (stdio ``notifications/cancelled``, or one
        POSTed to a stateless endpoint): a SERVER span around handling it."""
        params = codec.params_dict(note.params)
        attrs = dict(self.network)
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        if isinstance(version, str):
            attrs[C.PROTOCOL_VERSION] = version
        self.instruments.handle_note(note.method, params, attrs, handle)

    async def __call__(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        start = perf()
        method = ctx.method
        span_name, attrs = C.target_attributes(method, *request_target(params))
        rid = C.request_id(ctx.request_id)
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        version = ctx.protocol_version
        if version:
            attrs[C.PROTOCOL_VERSION] = version
        attrs.update(self.network)
        if self.capture_content and method == "tools/call":
            attrs[C.TOOL_ARGUMENTS] = C.to_json(params.arguments if isinstance(params, t.CallToolParams) else None)
        span, inside = self.instruments.receiving(span_name, attrs, ctx.meta)
        # The handler runs in the span (and with the client's baggage, which the extracted context holds).
        with Measured(self.instruments, span, attrs, self.duration, server=True, inside=inside, start=start,
                      internal=f"Internal error while handling {method}", quiet=(InputRequired,)) as m:
            ctx.emitter = self._emitter(ctx.emitter, version)
            try:
                result = await call_next(ctx, params)
            except InputRequired as need:
                # An MRTR round unwinding: the era answers input_required; not an error.
                span.add_event("mcp.input_required", {"mcp.input_request.keys": sorted(need.requests)})
                raise
            if isinstance(result, t.CallToolResult) and result.isError is True:
                m.error = C.TOOL_ERROR
                span.set_status(Status(StatusCode.ERROR, _first_text(result)))
            elif self.capture_content and method == "tools/call":
                span.set_attribute(C.TOOL_RESULT, C.to_json(result))
            return result

    def _emitter(self, inner: Callable[[str, dict[str, Any]], Awaitable[None]],
                 version: str | None) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
        base = dict(self.network)
        if version:
            base[C.PROTOCOL_VERSION] = version
        send_note = self.instruments.send_note

        async def emit(method: str, params: dict[str, Any]) -> None:
            await send_note(method, params, base, lambda body: inner(method, body))

        return emit


def _first_text(result: Any) -> str:
    for block in result.content if isinstance(result, t.CallToolResult) else ():
        if isinstance(block, t.TextContent):
            return block.text[:200]
    return "tool error"
