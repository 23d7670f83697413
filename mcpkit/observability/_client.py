"""The client side: CLIENT spans and ``mcp.client.operation.duration`` for what a Client sends,
SERVER spans for what it receives, and ``mcp.client.session.duration``.

Installed as the client's observer (``mcpkit.client.set_request_observer``):

- a request's span starts when it leaves and ends when its answer arrives (or the time limit
  passes); its context goes into ``params._meta`` through the configured propagators, so the
  server's span is its child. ``initialize``, ``ping``, ``logging/setLevel`` and every other
  request go the same way;
- an MRTR call (``input_required``, then a retry with ``inputResponses``) is one logical
  operation: one CLIENT span from the first round to the final answer, an ``mcp.input_required``
  event per round that asked and an ``mcp.retry`` event per retry (with its
  ``jsonrpc.request.id``); every retry carries the same span's context, so each round's
  SERVER span is a child of it; one duration point for the whole call;
- the follow-ups of a task (``tasks/get``, ``tasks/result``, ``tasks/cancel``) are children of
  the span of the call that created it (the ambient context is linked): creation, polling and
  result are one trace;
- the notifications it sends (``notifications/initialized``...) get CLIENT spans, those it
  receives (progress, log messages, list changes) and the requests a legacy server sends it
  (elicitation, sampling, roots, ping) SERVER spans, children of the sender's context;
- a session is the Client's connection: from ``start()`` (or ``async with``) to ``close()``,
  in both eras. A 2026-07-28 server keeps no session, but the client still opens and closes
  a connection (a stdio process, an HTTP client); that lifetime is what
  ``mcp.client.session.duration`` measures there (without ``mcp.session.id``, which the
  conventions reserve for a legacy ``Mcp-Session-Id``).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import NonRecordingSpan, SpanKind, Status, StatusCode, TracerProvider

from ..errors import MCPError, ProtocolError, TransportError
from . import _conv as C
from ._spans import Instruments, Measured, inject, json_rpc_error, perf

if TYPE_CHECKING:
    from ..client import Around, Client, OnNote
    from ..client import Response as ClientResponse
    from ..protocol import codec

    Response = ClientResponse | codec.Response

#: Task ids remembered (with the span context of the call that created them) at most.
MAX_TASKS = 4096


class _Rounds:
    """The one span of an MRTR call, held open between its rounds."""

    __slots__ = ("method", "span", "attrs", "start", "round")

    def __init__(self, method: str) -> None:
        self.method = method
        self.span: trace.Span | None = None
        self.attrs: dict[str, Any] = {}
        self.start = 0.0
        self.round = 1


_rounds: ContextVar[_Rounds | None] = ContextVar("mcpkit_otel_rounds", default=None)


class ClientTelemetry:
    """The observer: ``telemetry(client, method, request_id, body)`` -> a wrapper of the answer;
    and the other seams of :class:`mcpkit.client.ClientObserver`."""

    def __init__(self, *, capture_content: bool = False, tracer_provider: TracerProvider | None = None,
                 meter_provider: MeterProvider | None = None) -> None:
        self.capture_content = capture_content
        self.instruments = Instruments(tracer_provider, meter_provider)
        self.tracer = self.instruments.tracer
        self.duration = self.instruments.client_operation
        self._opened: weakref.WeakKeyDictionary[Client, float] = weakref.WeakKeyDictionary()
        self._tasks: OrderedDict[str, trace.SpanContext] = OrderedDict()

    # ------------------------------------------------------------ attributes
    @staticmethod
    def attributes(client: Client) -> dict[str, Any]:
        """What every span and metric of ``client`` carries: version, transport, server, session."""
        attrs: dict[str, Any] = {}
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
        return attrs

    # ------------------------------------------------------------ requests
    def __call__(self, client: Client, method: str, request_id: Any, body: dict[str, Any]) -> Around:
        rid = C.request_id(request_id)
        hold = _rounds.get()
        if hold is not None and hold.span is not None and hold.method == method and (
                "inputResponses" in body or "requestState" in body):
            return self._retry(hold, rid, body)
        span_name, attrs = C.target_attributes(method, body.get("name"), body.get("uri"))
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        attrs.update(self.attributes(client))
        if method == "initialize" and isinstance(body.get("protocolVersion"), str):
            attrs[C.PROTOCOL_VERSION] = body["protocolVersion"]  # the version asked for (no era is settled yet)
        if self.capture_content and method == "tools/call":
            attrs[C.TOOL_ARGUMENTS] = C.to_json(body.get("arguments"))
        parent = links = None
        if method in C.TASK_METHODS:
            created = self._tasks.get(body.get("taskId"))  # type: ignore[arg-type]
            if created is not None:  # a task's follow-up: in the trace of the call that created it
                parent = trace.set_span_in_context(NonRecordingSpan(created))
                ambient = trace.get_current_span().get_span_context()
                links = [trace.Link(ambient)] if ambient.is_valid else None
        span = self.tracer.start_span(span_name, parent, SpanKind.CLIENT, attrs, links)
        inject(body, trace.set_span_in_context(span))
        held = hold if hold is not None and hold.span is None and hold.method == method else None
        return self._answered(span, attrs, method, perf(), held)

    def _retry(self, hold: _Rounds, rid: str | None, body: dict[str, Any]) -> Around:
        assert hold.span is not None
        hold.round += 1
        hold.span.add_event("mcp.retry", {"mcp.round": hold.round, **({C.REQUEST_ID: rid} if rid else {})})
        inject(body, trace.set_span_in_context(hold.span))
        return self._answered(hold.span, hold.attrs, hold.method, hold.start, hold)

    def _answered(self, span: trace.Span, attrs: dict[str, Any], method: str, start: float,
                  hold: _Rounds | None) -> Around:
        in_span = trace.set_span_in_context(span)

        async def answered(waited: Awaitable[Response]) -> Response:
            error: str | None = None
            keep = False
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
                error, keep = self._outcome(span, attrs, method, resp, hold)
                return resp
            finally:
                context.detach(token)
                if keep:
                    assert hold is not None
                    hold.span, hold.attrs, hold.start = span, attrs, start
                else:
                    if hold is not None:
                        hold.span = None
                    self.instruments.end(span, attrs, error, start, self.duration)

        return answered

    def _outcome(self, span: trace.Span, attrs: dict[str, Any], method: str, resp: Any,
                 hold: _Rounds | None) -> tuple[str | None, bool]:
        """The ``error.type`` of an answer, and whether the span stays open (an MRTR round)."""
        msg = getattr(resp, "message", resp)  # a Response, or a bare codec.Response
        if msg is None:  # an HTTP answer without a JSON-RPC message (401, 502...)
            status = getattr(resp, "status", None)
            span.set_status(Status(StatusCode.ERROR, getattr(resp, "problem", "") or f"HTTP {status}"))
            return (str(status) if status is not None else "_OTHER"), False
        err = msg.error
        if err is not None:
            return json_rpc_error(span, attrs, err.get("code", ""), str(err.get("message", "")), server=False), False
        result = msg.result
        if not isinstance(result, dict):
            return None, False
        kind = result.get("resultType")
        if kind == "input_required" and hold is not None:
            span.add_event("mcp.input_required", {"mcp.round": hold.round,
                                                  "mcp.input_request.keys": sorted(result.get("inputRequests") or ())})
            return None, True
        if method == "tools/call":
            task = result if kind == "task" else result.get("task")
            if isinstance(task, dict) and isinstance(task.get("taskId"), str):
                self._remember_task(task["taskId"], span.get_span_context())
            elif result.get("isError") is True:
                span.set_status(Status(StatusCode.ERROR, "tool error"))
                return C.TOOL_ERROR, False
            elif self.capture_content:
                span.set_attribute(C.TOOL_RESULT, C.to_json(result))
        return None, False

    def _remember_task(self, task_id: str, created: trace.SpanContext) -> None:
        self._tasks[task_id] = created
        while len(self._tasks) > MAX_TASKS:
            self._tasks.popitem(last=False)

    @contextmanager
    def rounds(self, client: Client, method: str) -> Iterator[None]:
        """Around all the rounds of one MRTR-capable call: its span stays open between rounds."""
        hold = _Rounds(method)
        token = _rounds.set(hold)
        try:
            yield
        except BaseException as exc:
            if hold.span is not None:  # the rounds stopped (a handler failed, too many rounds, cancelled)
                error = type(exc).__qualname__ if isinstance(exc, Exception) else "cancelled"
                hold.span.set_status(Status(StatusCode.ERROR, str(exc)[:200] or error))
                self.instruments.end(hold.span, hold.attrs, error, hold.start, self.duration)
                hold.span = None
            raise
        finally:
            _rounds.reset(token)
            if hold.span is not None:  # pragma: no cover - a round left it open without a retry
                self.instruments.end(hold.span, hold.attrs, "_OTHER", hold.start, self.duration)

    # ------------------------------------------------------------ the session (connection)
    def opened(self, client: Client) -> None:
        self._opened[client] = perf()

    def closed(self, client: Client, error: BaseException | None = None) -> None:
        start = self._opened.pop(client, None)
        if start is None:
            return
        attrs = self.attributes(client)
        attrs.pop(C.SESSION_ID, None)
        if isinstance(error, (TransportError, ProtocolError, MCPError, TimeoutError, OSError)):
            attrs[C.ERROR_TYPE] = "timeout" if isinstance(error, TimeoutError) else type(error).__qualname__
        self.instruments.client_session.record(perf() - start, C.session_attributes(attrs))

    # ------------------------------------------------------------ notifications and the server's requests
    async def notify(self, client: Client, method: str, params: dict[str, Any],
                     send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        await self.instruments.send_note(method, params, self.attributes(client), send)

    def received(self, client: Client, method: str, params: dict[str, Any], handle: Callable[[], None]) -> None:
        self.instruments.handle_note(method, params, self.attributes(client), handle)

    def listener(self, client: Client, on_note: OnNote) -> OnNote:
        """A request's own notification callback (progress, log messages), traced."""
        def traced(method: str, params: dict[str, Any]) -> None:
            self.received(client, method, params, lambda: on_note(method, params))

        return traced

    async def serve(self, client: Client, method: str, params: dict[str, Any],
                    answer: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> Any:
        """A request the server sent (a legacy session's elicitation, sampling, roots; ping)."""
        inst = self.instruments
        attrs = self.attributes(client)
        attrs[C.METHOD] = method
        span, inside = inst.receiving(method, attrs, params.get("_meta"))
        with Measured(inst, span, attrs, inst.server_operation, server=True, inside=inside,
                      internal=f"the client failed to answer {method}"):
            return await answer(method, params)
