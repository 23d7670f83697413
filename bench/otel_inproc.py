#!/usr/bin/env python3
"""Tracing off and on, in process: the cost of mcpkit's telemetry per HTTP request without
sockets, uvicorn or wrk (what bench/otel.py measures end to end).

    python bench/otel_inproc.py [--rounds 7] [--calls 3000] [--profile]

Two echo servers (bench/servers/echo_mcpkit.py's tool) behind ``server.http_app()``: the
first made before the OpenTelemetry SDK is set up (so it installs nothing), the second after
it is set up the way bench/servers/otel_wrap.py does (a TracerProvider with a
BatchSpanProcessor and a dropping exporter, a MeterProvider with an in-memory reader), so it
instruments itself. Each round POSTs ``--calls`` ``tools/call echo`` requests (the body and
headers bench/wrk/mcp.lua sends) straight to each ASGI app, who goes first alternating;
reported: the median CPU µs per request of each side and of the per-round difference.
``--profile``: a cProfile of the traced side (one round), its top functions by own time.

Needs the OpenTelemetry SDK (``pip install 'mcpkit[otel]' opentelemetry-sdk``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import time
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from mcpkit import Server

META = (b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{},'
        b'"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}')
BODY = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
        b'"arguments":{"text":"bench-echo-payload"},' + META + b'}}')
HEADERS = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
           (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", b"2026-07-28"),
           (b"mcp-method", b"tools/call"), (b"mcp-name", b"echo"), (b"content-length", str(len(BODY)).encode())]
SCOPE: dict[str, Any] = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                         "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "root_path": "", "query_string": b"",
                         "headers": HEADERS, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}


class Drop(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def echo_server() -> Server:
    server = Server("echo", "1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


def set_up_sdk() -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), schedule_delay_millis=200))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))


async def calls(app: Any, n: int) -> float:
    """CPU µs per request over ``n`` sequential POSTs (the process's CPU time, the span
    processor's thread included: robust to a loaded machine, unlike the wall clock)."""
    request = {"type": "http.request", "body": BODY, "more_body": False}
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return request

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            status.append(event["status"])

    now = time.process_time
    t0 = now()
    for _ in range(n):
        await app(dict(SCOPE), receive, send)
    took = now() - t0
    if set(status) != {200}:
        raise SystemExit(f"unexpected statuses {set(status)}")
    return took / n * 1e6


async def main_async(args: argparse.Namespace) -> int:
    off = echo_server().http_app()
    set_up_sdk()
    traced = echo_server()
    on = traced.http_app()
    from mcpkit.observability import _servers

    if traced not in _servers:
        raise SystemExit("the traced server did not instrument itself")
    apps = {"off": off, "on": on}
    for app in apps.values():  # warm-up
        await calls(app, 300)
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        await calls(on, args.calls)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(35)
        return 0
    got: dict[str, list[float]] = {"off": [], "on": []}
    for r in range(args.rounds):
        order = ("off", "on") if r % 2 == 0 else ("on", "off")
        for name in order:
            got[name].append(await calls(apps[name], args.calls))
        print(f"  r{r + 1}  off {got['off'][-1]:7.1f} µs  on {got['on'][-1]:7.1f} µs", flush=True)
    diff = [b - a for a, b in zip(got["off"], got["on"], strict=True)]
    print(f"median of {args.rounds} rounds x {args.calls} calls: off {statistics.median(got['off']):.1f} µs, "
          f"on {statistics.median(got['on']):.1f} µs, tracing adds {statistics.median(diff):+.1f} µs per request")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--profile", action="store_true")
    return asyncio.run(main_async(ap.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
