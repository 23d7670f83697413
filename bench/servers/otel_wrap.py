"""Run an echo server ($BENCH_OTEL_TARGET, with this script's argv) with the OpenTelemetry SDK
set up the way an application does before serving: a TracerProvider whose BatchSpanProcessor
hands every span to an exporter that drops it, and a MeterProvider with an in-memory reader
(never collected). The same setup for both libraries: like is compared with like.

The first exported span's name goes to stderr once (``otel: first span ...``), so a run can
show that spans were made at all.
"""

import os
import runpy
import sys

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class Drop(SpanExporter):
    said = False

    def export(self, spans):  # type: ignore[no-untyped-def]
        if spans and not self.said:
            self.said = True
            print(f"otel: first span {spans[0].name!r} ({spans[0].kind})", file=sys.stderr, flush=True)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(Drop(), schedule_delay_millis=200))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

target = os.environ["BENCH_OTEL_TARGET"]
sys.argv = [target, *sys.argv[1:]]
runpy.run_path(target, run_name="__main__")
