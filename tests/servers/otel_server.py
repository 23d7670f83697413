"""A server for the telemetry tests: its spans go, one JSON line each, to $OTEL_TEST_SPANS;
with $OTEL_TEST_METRICS, its metrics go there as JSON when the process exits.

The SDK is set up when the file is imported (as an application's own setup would be), so
the server instruments itself when it starts serving: over stdio (``python otel_server.py``,
``server.run()``) or over HTTP (``mcpkit serve --http otel_server.py``).
"""

from __future__ import annotations

import os

from opentelemetry import metrics, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from mcpkit import Context, Server

_out = open(os.environ["OTEL_TEST_SPANS"], "a", buffering=1)
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=_out, formatter=lambda s: s.to_json(indent=None) + "\n")))
trace.set_tracer_provider(provider)

if os.environ.get("OTEL_TEST_METRICS"):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    _metrics_out = open(os.environ["OTEL_TEST_METRICS"], "a", buffering=1)
    exporter = ConsoleMetricExporter(out=_metrics_out, formatter=lambda m: m.to_json(indent=None) + "\n")
    # Exported at exit (the provider shuts down at exit and flushes).
    metrics.set_meter_provider(MeterProvider(metric_readers=[PeriodicExportingMetricReader(
        exporter, export_interval_millis=3_600_000)]))

server = Server("otel-test", "1.0.0")


@server.tool()
async def add(ctx: Context, a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the user for a name (an elicitation: MRTR rounds, or a request in a legacy session)."""
    answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {(answer.content or {}).get('name')}"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Report progress, log, and say the tool list changed."""
    await ctx.report_progress(1, 2)
    await ctx.info("half way")
    server.notify_tools_changed()
    return "done"


@server.tool()
async def nap(ctx: Context, seconds: float) -> str:
    """Sleep (a call to cancel)."""
    import asyncio

    await asyncio.sleep(seconds)
    return "rested"


@server.prompt()
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


@server.resource("test://readme")
def readme() -> str:
    return "read me"


if __name__ == "__main__":
    server.run()
