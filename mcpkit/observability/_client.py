"""The client side: one CLIENT span and one ``mcp.client.operation.duration`` point per request.

Installed as the client's request observer (``mcpkit.client.set_request_observer``): the span starts
when the request leaves and ends when its answer arrives (or the time limit passes); its
context goes into ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``) through the
configured propagators, so the server's span is its child.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context, propagate, trace
from opentelemetry.metrics import MeterProvider, get_meter
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from . import _conv as C

if TYPE_CHECKING:
    from ..client import Around, Client
    from ..protocol import codec

_perf = time.perf_counter


class ClientTelemetry:
    """The observer: ``telemetry(client, method, request_id, body)`` -> a wrapper of the answer."""

    def __init__(self, *, capture_content: bool = False, tracer_provider: TracerProvider | None = None,
                 meter_provider: MeterProvider | None = None) -> None:
        self.capture_content = capture_content
        self.tracer = trace.get_tracer(C.SCOPE, __version__, tracer_provider)
        meter = get_meter(C.SCOPE, __version__, meter_provider)
        self.duration = meter.create_histogram(
            C.CLIENT_OPERATION_DURATION, unit="s",
            description="The duration of the MCP request or notification as observed on the sender from the "
                        "time it was sent until the response or ack is received.",
            explicit_bucket_boundaries_advisory=C.DURATION_BUCKETS)

    def __call__(self, client: Client, method: str, request_id: Any, body: dict[str, Any]) -> Around:
        span_name, attrs = C.target_attributes(method, body.get("name"), body.get("uri"))
        rid = C.request_id(request_id)
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        version = client.legacy_version if client.era == "legacy" else client.protocol_version
        if version:
            attrs[C.PROTOCOL_VERSION] = version
        transport = client.transport
        kind = transport.capabilities.kind
        network = C.TRANSPORTS.get(kind)
        if network is not None:
            attrs[C.NETWORK_TRANSPORT] = network
        if kind == "http":
            attrs[C.NETWORK_PROTOCOL_NAME] = "http"
            url = getattr(transport, "url", None)
            if isinstance(url, str):
                parts = urlsplit(url)
                if parts.hostname:
                    attrs[C.SERVER_ADDRESS] = parts.hostname
                    attrs[C.SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
            session = getattr(transport, "session_id", None)
            if isinstance(session, str):
                attrs[C.SESSION_ID] = session
        if self.capture_content and method == "tools/call":
            attrs[C.TOOL_ARGUMENTS] = C.to_json(body.get("arguments"))
        span = self.tracer.start_span(span_name, None, SpanKind.CLIENT, attrs)
        in_span = trace.set_span_in_context(span)
        meta = dict(body.get("_meta") or {})
        propagate.inject(meta, in_span)
        body["_meta"] = meta
        start = _perf()

        async def answered(waited: Awaitable[Response | codec.Response]) -> Response | codec.Response:
            error: str | None = None
            token = context.attach(in_span)  # the transport's own spans (e.g. httpx) are children
            try:
                resp = await waited
            except TimeoutError:
                error = "timeout"
                span.set_status(Status(StatusCode.ERROR, f"{method}: no answer in time"))
                raise
            except Exception as exc:
                error = type(exc).__qualname__
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
                raise
            except BaseException:
                error = "cancelled"
                raise
            else:
                error = self._outcome(span, attrs, method, resp)
                return resp
            finally:
                if error is not None:
                    attrs[C.ERROR_TYPE] = error
                    span.set_attribute(C.ERROR_TYPE, error)
                context.detach(token)
                span.end()
                self.duration.record(_perf() - start, C.metric_attributes(attrs))

        return answered

    def _outcome(self, span: trace.Span, attrs: dict[str, Any], method: str, resp: Any) -> str | None:
        msg = getattr(resp, "message", resp)  # a Response, or a bare codec.Response
        if msg is None:  # an HTTP answer without a JSON-RPC message (401, 502...)
            status = getattr(resp, "status", None)
            span.set_status(Status(StatusCode.ERROR, getattr(resp, "problem", "") or f"HTTP {status}"))
            return str(status) if status is not None else "_OTHER"
        err = msg.error
        if err is not None:
            code = str(err.get("code", ""))
            attrs[C.STATUS_CODE] = code
            span.set_attribute(C.STATUS_CODE, code)
            span.set_status(Status(StatusCode.ERROR, str(err.get("message", ""))))
            return code or "_OTHER"
        result = msg.result
        if method == "tools/call" and isinstance(result, dict):
            if result.get("isError") is True:
                span.set_status(Status(StatusCode.ERROR, "tool error"))
                return C.TOOL_ERROR
            if self.capture_content:
                span.set_attribute(C.TOOL_RESULT, C.to_json(result))
        return None


if TYPE_CHECKING:
    from ..client import Response
