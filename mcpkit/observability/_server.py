"""The server side: one SERVER span and one ``mcp.server.operation.duration`` point per request.

Installed through the server's public middleware hook (``Server.add_middleware``), so the
span covers the handler and every wrapper inside it, in both eras. The parent is the trace
context the client put in ``params._meta`` (``traceparent``/``tracestate``/``baggage``);
the ambient context (e.g. an HTTP server span from ASGI instrumentation) is linked.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.metrics import MeterProvider, get_meter
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from ..errors import MCPError
from ..protocol import types as t
from ..protocol.types import request_target
from ..server import Context, Handler, InputRequired
from . import _conv as C

_perf = time.perf_counter


class ServerTelemetry:
    """The middleware (``await telemetry(ctx, params, call_next)``) and its instruments."""

    def __init__(self, *, transport: str | None = None, capture_content: bool = False,
                 tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None) -> None:
        #: ``network.transport`` (``pipe``, ``tcp``), when the transport is known.
        self.transport = C.TRANSPORTS.get(transport or "", transport)
        #: Record ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result`` (they may hold secrets).
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(C.SCOPE, __version__, tracer_provider)
        meter = get_meter(C.SCOPE, __version__, meter_provider)
        self.duration = meter.create_histogram(
            C.SERVER_OPERATION_DURATION, unit="s",
            description="The duration of the MCP request or notification as observed on the receiver from the "
                        "time it was received until the result or ack is sent.",
            explicit_bucket_boundaries_advisory=C.DURATION_BUCKETS)

    async def __call__(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        start = _perf()
        method = ctx.method
        span_name, attrs = C.target_attributes(method, *request_target(params))
        rid = C.request_id(ctx.request_id)
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        version = ctx.protocol_version
        if version:
            attrs[C.PROTOCOL_VERSION] = version
        if self.transport is not None:
            attrs[C.NETWORK_TRANSPORT] = self.transport
            if self.transport == "tcp":
                attrs[C.NETWORK_PROTOCOL_NAME] = "http"
        meta = ctx.meta
        parent: context.Context | None = None
        links = None
        if any(k in meta for k in C.PROPAGATION_KEYS):
            parent = propagate.extract(meta)
            ambient = trace.get_current_span().get_span_context()
            if ambient.is_valid:
                links = [trace.Link(ambient)]
        if self.capture_content and method == "tools/call":
            attrs[C.TOOL_ARGUMENTS] = C.to_json(params.arguments if isinstance(params, t.CallToolParams) else None)
        span = self.tracer.start_span(span_name, parent, SpanKind.SERVER, attrs, links)
        # The handler runs in the span (and with the client's baggage, which the extracted context holds).
        token = context.attach(trace.set_span_in_context(span, parent))
        error: str | None = None
        try:
            result = await call_next(ctx, params)
        except InputRequired:
            raise  # an MRTR round unwinding: the era answers input_required; not an error
        except MCPError as exc:
            error = attrs[C.STATUS_CODE] = str(exc.code)
            span.set_attribute(C.STATUS_CODE, error)
            span.set_status(Status(StatusCode.ERROR, exc.message))
            raise
        except Exception as exc:  # dispatch answers -32603
            error = type(exc).__qualname__
            attrs[C.STATUS_CODE] = "-32603"
            span.set_attribute(C.STATUS_CODE, "-32603")
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"Internal error while handling {method}"))
            raise
        except BaseException:  # cancelled (the client went away, or notifications/cancelled)
            error = "cancelled"
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
            raise
        else:
            if isinstance(result, t.CallToolResult) and result.isError is True:
                error = C.TOOL_ERROR
                span.set_status(Status(StatusCode.ERROR, _first_text(result)))
            elif self.capture_content and method == "tools/call":
                span.set_attribute(C.TOOL_RESULT, C.to_json(result))
            return result
        finally:
            if error is not None:
                attrs[C.ERROR_TYPE] = error
                span.set_attribute(C.ERROR_TYPE, error)
            context.detach(token)
            span.end()
            self.duration.record(_perf() - start, C.metric_attributes(attrs))


def _first_text(result: Any) -> str:
    for block in result.content if isinstance(result, t.CallToolResult) else ():
        if isinstance(block, t.TextContent):
            return block.text[:200]
    return "tool error"
