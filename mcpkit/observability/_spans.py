"""What the client and server halves share: the four instruments, how a span starts
(sending: in the current context, its context written to ``params._meta``; receiving: the
sender's context from ``params._meta`` as the parent, the ambient one linked) and how one
ends (``error.type``, the status, one duration point).

Notifications use the same two halves: whoever sends one reports a CLIENT span (and a
``mcp.client.operation.duration`` point, covering the send), whoever receives one a SERVER
span (and ``mcp.server.operation.duration``), as the conventions say for requests and
notifications alike, whichever side initiates.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider, get_meter
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from ..errors import MCPError
from . import _conv as C

perf = time.perf_counter


class Instruments:
    """The tracer and the four duration histograms of one pair of providers."""

    def __init__(self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None) -> None:
        self.tracer = trace.get_tracer(C.SCOPE, __version__, tracer_provider)
        meter = get_meter(C.SCOPE, __version__, meter_provider)

        def histogram(name: str, description: str) -> Any:
            return meter.create_histogram(name, unit="s", description=description,
                                          explicit_bucket_boundaries_advisory=C.DURATION_BUCKETS)

        self.client_operation = histogram(
            C.CLIENT_OPERATION_DURATION, "The duration of the MCP request or notification as observed on the sender "
                                         "from the time it was sent until the response or ack is received.")
        self.server_operation = histogram(
            C.SERVER_OPERATION_DURATION, "MCP request or notification duration as observed on the receiver from the "
                                         "time it was received until the result or ack is sent.")
        self.client_session = histogram(C.CLIENT_SESSION_DURATION,
                                        "The duration of the MCP session as observed on the MCP client.")
        self.server_session = histogram(C.SERVER_SESSION_DURATION,
                                        "The duration of the MCP session as observed on the MCP server.")

    # ------------------------------------------------------------ starting
    def sending(self, name: str, attrs: dict[str, Any], meta_of: dict[str, Any] | None) -> trace.Span:
        """A CLIENT span in the current context; its context is injected into ``meta_of["_meta"]``
        (a copy of it: the caller's dict is not shared) when ``meta_of`` is given."""
        span = self.tracer.start_span(name, None, SpanKind.CLIENT, attrs)
        if meta_of is not None:
            inject(meta_of, trace.set_span_in_context(span))
        return span

    def receiving(self, name: str, attrs: dict[str, Any], meta: Any) -> tuple[trace.Span, Context]:
        """A SERVER span whose parent is the context the sender put in ``meta`` (``params._meta``),
        the ambient context (e.g. an HTTP server span) linked; without one, a child of the ambient.
        Also the context to handle it in: the span, over the extracted context (its baggage)."""
        parent = None
        links = None
        if isinstance(meta, Mapping) and any(k in meta for k in C.PROPAGATION_KEYS):
            parent = propagate.extract(meta)
            ambient = trace.get_current_span().get_span_context()
            if ambient.is_valid:
                links = [trace.Link(ambient)]
        span = self.tracer.start_span(name, parent, SpanKind.SERVER, attrs, links)
        return span, trace.set_span_in_context(span, parent)

    # ------------------------------------------------------------ notifications
    async def send_note(self, method: str, params: dict[str, Any], attrs: dict[str, Any],
                        send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Send one notification (``send(params)``) in a CLIENT span, its context in ``params._meta``."""
        attrs = note_attributes(method, params, attrs)
        body = dict(params)
        with Measured(self, self.sending(method, attrs, body), attrs, self.client_operation, server=False):
            await send(body)

    def handle_note(self, method: str, params: Any, attrs: dict[str, Any], handle: Callable[[], Any]) -> Any:
        """Handle one notification received (``handle()``) in a SERVER span."""
        attrs = note_attributes(method, params, attrs)
        span, inside = self.receiving(method, attrs, params.get("_meta") if isinstance(params, dict) else None)
        with Measured(self, span, attrs, self.server_operation, server=True, inside=inside):
            return handle()

    # ------------------------------------------------------------ ending
    @staticmethod
    def end(span: trace.Span, attrs: dict[str, Any], error: str | None, start: float, histogram: Any) -> None:
        if error is not None:
            attrs[C.ERROR_TYPE] = error
            span.set_attribute(C.ERROR_TYPE, error)
        span.end()
        histogram.record(perf() - start, C.metric_attributes(attrs))


class Measured:
    """``with Measured(...) as m:`` around sending or handling one message: ``span`` ends (and
    one point goes to ``histogram``) however the block ends; ``m.error`` is its ``error.type``.

    ``inside``: the context the block runs in (attached, then detached). An exception sets
    ``error.type``: an MCPError its code (when it classifies as an error on this side,
    ``server``), a timeout ``timeout``, a cancellation ``cancelled``, any other its class
    name (with ``internal``, also ``rpc.response.status_code`` -32603 and that description:
    what the dispatcher answers). Exceptions of the types in ``quiet`` pass as no error.
    """

    __slots__ = ("instruments", "span", "attrs", "histogram", "server", "internal", "quiet", "error", "start",
                 "token")

    def __init__(self, instruments: Instruments, span: trace.Span, attrs: dict[str, Any], histogram: Any, *,
                 server: bool, inside: Context | None = None, internal: str | None = None,
                 quiet: tuple[type[BaseException], ...] = (), start: float | None = None) -> None:
        self.instruments = instruments
        self.span = span
        self.attrs = attrs
        self.histogram = histogram
        self.server = server
        self.internal = internal
        self.quiet = quiet
        self.error: str | None = None
        self.start = perf() if start is None else start
        self.token = context.attach(inside) if inside is not None else None

    def __enter__(self) -> Measured:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        span = self.span
        if exc is not None and not isinstance(exc, self.quiet):
            if isinstance(exc, MCPError):
                self.error = json_rpc_error(span, self.attrs, exc.code, exc.message, server=self.server)
            elif isinstance(exc, TimeoutError):
                self.error = "timeout"
                span.set_status(Status(StatusCode.ERROR, "no answer in time"))
            elif isinstance(exc, Exception):
                if self.internal is not None:
                    json_rpc_error(span, self.attrs, -32603, self.internal, server=True)
                else:
                    span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
                self.error = type(exc).__qualname__
                span.record_exception(exc)
            else:
                self.error = "cancelled"
                span.set_status(Status(StatusCode.ERROR, "cancelled"))
        if self.token is not None:
            context.detach(self.token)
        self.instruments.end(span, self.attrs, self.error, self.start, self.histogram)


def inject(body: dict[str, Any], ctx: Any) -> None:
    """Write the trace context of ``ctx`` into ``body["_meta"]`` (a new dict), by the configured propagators."""
    meta = dict(body.get("_meta") or {})
    propagate.inject(meta, ctx)
    body["_meta"] = meta


def note_attributes(method: str, params: Any, base: Mapping[str, Any]) -> dict[str, Any]:
    attrs = dict(base)
    attrs[C.METHOD] = method
    if method == "notifications/resources/updated" and isinstance(params, dict) and isinstance(params.get("uri"), str):
        attrs[C.RESOURCE_URI] = params["uri"]
    return attrs


def json_rpc_error(span: trace.Span, attrs: dict[str, Any], code: Any, message: str, *, server: bool) -> str | None:
    """Record a JSON-RPC error answer: ``rpc.response.status_code`` always; ``error.type`` (returned)
    and the ERROR status when the code classifies as an error (see :func:`_conv.is_error_code`)."""
    text = str(code)
    attrs[C.STATUS_CODE] = text
    span.set_attribute(C.STATUS_CODE, text)
    if not C.is_error_code(code, server=server):
        return None
    span.set_status(Status(StatusCode.ERROR, message))
    return text or "_OTHER"
