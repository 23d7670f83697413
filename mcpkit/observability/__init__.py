"""OpenTelemetry for mcpkit: spans and metrics by the semantic conventions for MCP.

Server side, a SERVER span per request (``tools/call add``...) covering the handler, and the
``mcp.server.operation.duration`` histogram; client side, a CLIENT span per request and
``mcp.client.operation.duration``; trace context travels in ``params._meta``
(``traceparent``, ``tracestate``, ``baggage``), so a client's span is the parent of the
server's, over any transport. Notifications get spans on both ends (CLIENT where sent,
SERVER where received), so do a legacy session's own methods and its requests to the
client; ``mcp.server.session.duration`` covers a legacy session, ``mcp.client.session.duration``
a Client's connection (both eras); an MRTR call is one CLIENT span across its rounds, and a
task's follow-ups join the trace of the call that created it (see docs/operating.md).

It needs ``opentelemetry-api`` (``pip install 'mcpkit[otel]'``) and an SDK set up the usual
way (your own ``TracerProvider``/``MeterProvider``, or ``opentelemetry-instrument`` with the
``OTEL_*`` variables). A served server (``mcpkit serve``, ``server.run()``,
``server.http_app()``) is instrumented on its own when OpenTelemetry is already loaded with
a real provider; ``OTEL_SDK_DISABLED=true`` or ``mcpkit`` in
``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` turns that off. Nothing here imports OpenTelemetry
until it is used, so ``import mcpkit`` costs what it did.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import weakref

    from ..server import Server

__all__ = ["McpkitInstrumentor", "auto_instrument", "configured", "disabled", "instrument_clients",
           "instrument_server", "setup", "uninstrument_clients"]

_MISSING = "telemetry needs opentelemetry-api: pip install 'mcpkit[otel]'"

#: The servers instrumented so far (made with the first: a cold start that instruments none
#: does not load weakref).
_servers: weakref.WeakKeyDictionary[Any, Any] | None = None


def _instrumented() -> weakref.WeakKeyDictionary[Any, Any]:
    global _servers
    if _servers is None:
        import weakref

        _servers = weakref.WeakKeyDictionary()
    return _servers


def instrument_server(server: Server, *, transport: str | None = None, capture_content: bool = False,
                      tracer_provider: Any = None, meter_provider: Any = None) -> bool:
    """Trace and measure every request ``server`` answers (through ``server.add_middleware``).

    ``transport`` (``"stdio"``/``"http"``, or a ``network.transport`` value) is recorded when
    given; ``capture_content`` records tool arguments and results (they may hold secrets).
    The providers default to the global ones. Returns False when it was already instrumented.
    Raises ImportError (one line) when opentelemetry-api is not installed.
    """
    if server in _instrumented():
        return False
    try:
        from ._server import ServerTelemetry
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    telemetry = ServerTelemetry(transport=transport, capture_content=capture_content,
                                tracer_provider=tracer_provider, meter_provider=meter_provider)
    server.add_middleware(telemetry)
    server.add_session_observer(telemetry)  # legacy sessions: their own methods, notifications, duration
    _instrumented()[server] = telemetry
    return True


def instrument_clients(*, capture_content: bool = False, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Trace and measure every request any :class:`~mcpkit.Client` of this process sends, and
    put the trace context in its ``params._meta`` (replaces an earlier call's settings)."""
    try:
        from ._client import ClientTelemetry
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    from ..client import set_request_observer

    set_request_observer(ClientTelemetry(capture_content=capture_content, tracer_provider=tracer_provider,
                                         meter_provider=meter_provider))


def uninstrument_clients() -> None:
    from ..client import set_request_observer

    set_request_observer(None)


def disabled() -> bool:
    """Whether the standard variables turn telemetry off (``OTEL_SDK_DISABLED``,
    ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return True
    names = os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    return any(n.strip() in ("mcpkit", "*") for n in names.split(","))


def configured() -> bool:
    """Whether OpenTelemetry is loaded with a real tracer or meter provider (no import if not loaded)."""
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return False
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        return False
    if not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return True
    provider = metrics.get_meter_provider()
    return type(provider).__name__ not in ("_ProxyMeterProvider", "NoOpMeterProvider")


def auto_instrument(server: Server, transport: str | None = None) -> bool:
    """Instrument ``server`` (and this process's clients) when :func:`configured` and not
    :func:`disabled`; called when a server starts serving. True when it did."""
    if disabled() or not configured() or server in _instrumented():
        return False
    from ..client import request_observer

    if request_observer() is None:
        instrument_clients()
    return instrument_server(server, transport=transport)


def setup(server: Server, transport: str | None = None, *, force: bool = False) -> bool:
    """What ``mcpkit serve`` does: :func:`auto_instrument`; with ``force`` (``--otel``) also
    set up the SDK from the ``OTEL_*`` variables the way ``opentelemetry-instrument`` does
    (needs opentelemetry-distro) when no provider is set yet, then instrument.

    Raises ImportError (one line) when ``force`` and OpenTelemetry is not installed."""
    if not force:
        return auto_instrument(server, transport)
    if not configured():
        try:
            from opentelemetry.instrumentation.auto_instrumentation import initialize
        except ImportError:
            try:
                import opentelemetry.trace  # noqa: F401
            except ImportError as exc:
                raise ImportError(_MISSING) from exc
        else:
            initialize()
    from ..client import request_observer

    if request_observer() is None:
        instrument_clients()
    return instrument_server(server, transport=transport)


class McpkitInstrumentor:
    """For ``opentelemetry-instrument`` (the ``opentelemetry_instrumentor`` entry point):
    instruments this process's clients; servers are instrumented when they start serving."""

    def instrument(self, **kwargs: Any) -> None:
        instrument_clients(tracer_provider=kwargs.get("tracer_provider"), meter_provider=kwargs.get("meter_provider"))

    def uninstrument(self, **kwargs: Any) -> None:
        uninstrument_clients()

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ()
