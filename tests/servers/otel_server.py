"""A server for the telemetry tests: its spans go, one JSON line each, to $OTEL_TEST_SPANS.

The SDK is set up when the file is imported (as an application's own setup would be), so
the server instruments itself when it starts serving: over stdio (``python otel_server.py``,
``server.run()``) or over HTTP (``mcpkit serve --http otel_server.py``).
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from mcpkit import Context, Server

_out = open(os.environ["OTEL_TEST_SPANS"], "a", buffering=1)
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=_out, formatter=lambda s: s.to_json(indent=None) + "\n")))
trace.set_tracer_provider(provider)

server = Server("otel-test", "1.0.0")


@server.tool()
async def add(ctx: Context, a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.prompt()
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


@server.resource("test://readme")
def readme() -> str:
    return "read me"


if __name__ == "__main__":
    server.run()
