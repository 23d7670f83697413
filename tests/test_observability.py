"""OpenTelemetry by the MCP semantic conventions: spans, metrics and trace context.

Checked with the SDK's in-memory span exporter and metric reader, in process (every method,
errors, content capture) and across real processes over stdio and HTTP, both eras (one
trace id from the client's span to the server's). The acceptance runs ``mcpkit serve``
under ``opentelemetry-instrument`` with console exporters.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Client, Context, MCPError, Server
from mcpkit.observability import _conv as C
from mcpkit.observability import auto_instrument, configured, instrument_clients, instrument_server, uninstrument_clients
from tests.helpers.aio import run
from tests.helpers.paths import DEMO, ROOT, SERVERS, subprocess_env
from tests.helpers.servers import free_port

OTEL_SERVER = SERVERS / "otel_server.py"
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]


class Recorder:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    @property
    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}

    def finished(self, kind: SpanKind | None = None) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if kind is None or s.kind == kind]

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        assert m.unit == "s"
                        out.extend(m.data.data_points)
        return out


@pytest.fixture
def rec() -> Any:
    r = Recorder()
    yield r
    uninstrument_clients()


def build() -> Server:
    server = Server("otel", "1.0.0")

    @server.tool()
    async def add(ctx: Context, a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def broken(ctx: Context) -> int:
        raise ValueError("secret detail")

    @server.tool()
    async def refuse(ctx: Context) -> int:
        raise MCPError(-32042, "not today")

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.resource("test://readme")
    def readme() -> str:
        return "read me"

    @server.resource("test://items/{item}")
    def item(item: str) -> str:
        return item

    @server.completion(prompt="greet")
    def complete(argument: str, value: str, context: Any) -> list[str]:
        return ["Ada", "Alan"]

    return server


def test_server_spans_for_every_method(rec: Recorder) -> None:
    server = build()
    assert instrument_server(server, **rec.providers)
    assert not instrument_server(server, **rec.providers)  # once

    async def go() -> None:
        async with Client(server) as client:
            await client.discover()
            await client.list_tools()
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
            assert (await client.call_tool("broken", {})).isError
            with pytest.raises(MCPError):
                await client.call_tool("refuse", {})
            with pytest.raises(MCPError):
                await client.call_tool("nope", {})
            await client.list_prompts()
            await client.get_prompt("greet", {"name": "Ada"})
            await client.list_resources()
            await client.list_resource_templates()
            await client.read_resource("test://readme")
            await client.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                         "argument": {"name": "name", "value": "A"}})

    run(go())
    spans = rec.finished(SpanKind.SERVER)
    by_name = {s.name: s for s in spans}
    expected = {"server/discover", "tools/list", "tools/call add", "tools/call broken", "tools/call refuse",
                "tools/call nope", "prompts/list", "prompts/get greet", "resources/list", "resources/templates/list",
                "resources/read", "completion/complete"}
    assert expected <= set(by_name), set(by_name)
    for span in spans:
        a = span.attributes
        assert a[C.METHOD] == span.name.split(" ")[0]
        assert a[C.PROTOCOL_VERSION] == "2026-07-28"
        assert a[C.REQUEST_ID]
        assert C.NETWORK_TRANSPORT not in a  # in process: no network
    ok = by_name["tools/call add"]
    assert ok.attributes[C.TOOL_NAME] == "add" and ok.attributes[C.OPERATION_NAME] == "execute_tool"
    assert ok.status.status_code == StatusCode.UNSET and C.ERROR_TYPE not in ok.attributes
    assert C.TOOL_ARGUMENTS not in ok.attributes  # opt-in only
    tool_error = by_name["tools/call broken"]
    assert tool_error.attributes[C.ERROR_TYPE] == "tool_error"
    assert tool_error.status.status_code == StatusCode.ERROR
    refused = by_name["tools/call refuse"]
    assert refused.attributes[C.ERROR_TYPE] == "-32042" and refused.attributes[C.STATUS_CODE] == "-32042"
    assert refused.status.description == "not today"
    # On the server, -32602 (and the other "the caller sent what cannot be served" codes) is no error.
    nope = by_name["tools/call nope"]
    assert nope.attributes[C.STATUS_CODE] == "-32602" and C.ERROR_TYPE not in nope.attributes
    assert nope.status.status_code == StatusCode.UNSET
    assert by_name["prompts/get greet"].attributes[C.PROMPT_NAME] == "greet"
    assert by_name["resources/read"].attributes[C.RESOURCE_URI] == "test://readme"
    # One duration point set per (method, target, outcome); attributes stay low-cardinality.
    points = rec.points(C.SERVER_OPERATION_DURATION)
    assert sum(p.count for p in points) == len(spans)
    for p in points:
        assert list(p.explicit_bounds) == BUCKETS
        assert C.REQUEST_ID not in p.attributes and C.RESOURCE_URI not in p.attributes
    add_point = next(p for p in points if p.attributes.get(C.TOOL_NAME) == "add")
    assert add_point.attributes[C.METHOD] == "tools/call" and C.ERROR_TYPE not in add_point.attributes
    assert any(p.attributes.get(C.ERROR_TYPE) == "-32042" for p in points)


def test_client_span_is_the_parent_of_the_server_span_in_process(rec: Recorder) -> None:
    server = build()
    instrument_server(server, **rec.providers)
    instrument_clients(**rec.providers)

    async def go() -> None:
        async with Client(server) as client:
            await client.discover()
            await client.call_tool("add", {"a": 1, "b": 1})
            with pytest.raises(MCPError):
                await client.call_tool("refuse", {})

    run(go())
    clients = {s.name: s for s in rec.finished(SpanKind.CLIENT)}
    servers = {s.name: s for s in rec.finished(SpanKind.SERVER)}
    for name in ("tools/call add", "tools/call refuse", "server/discover"):
        c, s = clients[name], servers[name]
        assert c.context.trace_id == s.context.trace_id
        assert s.parent is not None and s.parent.span_id == c.context.span_id and s.parent.is_remote
    c = clients["tools/call add"]
    assert c.attributes[C.TOOL_NAME] == "add" and c.attributes[C.REQUEST_ID] and C.ERROR_TYPE not in c.attributes
    assert clients["tools/call refuse"].attributes[C.ERROR_TYPE] == "-32042"
    assert clients["tools/call refuse"].attributes[C.STATUS_CODE] == "-32042"
    points = rec.points(C.CLIENT_OPERATION_DURATION)
    assert points and all(list(p.explicit_bounds) == BUCKETS for p in points)


def test_content_capture_is_opt_in(rec: Recorder) -> None:
    server = build()
    instrument_server(server, capture_content=True, **rec.providers)

    async def go() -> None:
        async with Client(server) as client:
            await client.call_tool("add", {"a": 4, "b": 5})

    run(go())
    span = next(s for s in rec.finished(SpanKind.SERVER) if s.name == "tools/call add")
    assert json.loads(span.attributes[C.TOOL_ARGUMENTS]) == {"a": 4, "b": 5}
    assert json.loads(span.attributes[C.TOOL_RESULT])["structuredContent"] == {"result": 9}


def test_baggage_and_an_outer_span_reach_the_handler(rec: Recorder) -> None:
    from opentelemetry import baggage, context, trace

    server = build()
    seen: dict[str, Any] = {}

    @server.tool()
    async def look(ctx: Context) -> str:
        seen["baggage"] = baggage.get_baggage("tenant")
        seen["span"] = trace.get_current_span().get_span_context().span_id
        return "ok"

    instrument_server(server, **rec.providers)
    instrument_clients(**rec.providers)
    tracer = rec.tracer_provider.get_tracer("app")

    async def go() -> None:
        token = context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            with tracer.start_as_current_span("agent step"):
                async with Client(server) as client:
                    await client.call_tool("look", {})
        finally:
            context.detach(token)

    run(go())
    outer = next(s for s in rec.finished() if s.name == "agent step")
    call = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call look")
    handled = next(s for s in rec.finished(SpanKind.SERVER) if s.name == "tools/call look")
    assert call.parent is not None and call.parent.span_id == outer.context.span_id
    assert handled.context.trace_id == outer.context.trace_id
    assert seen == {"baggage": "acme", "span": handled.context.span_id}


def _spans_file(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_spans(path: Path, name: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        spans = _spans_file(path)
        if any(s["name"] == name for s in spans):
            return spans
        time.sleep(0.05)
    raise AssertionError(f"no {name!r} span in {_spans_file(path)}")


def _check_one_trace(rec: Recorder, server_spans: list[dict[str, Any]], version: str, transport: str) -> None:
    client = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call add")
    served = next(s for s in server_spans if s["name"] == "tools/call add")
    assert served["kind"] == "SpanKind.SERVER"
    assert int(served["context"]["trace_id"], 16) == client.context.trace_id
    assert int(served["parent_id"], 16) == client.context.span_id
    a = served["attributes"]
    assert a[C.METHOD] == "tools/call" and a[C.TOOL_NAME] == "add"
    assert a[C.NETWORK_TRANSPORT] == transport
    assert a[C.PROTOCOL_VERSION] == version
    assert client.attributes[C.NETWORK_TRANSPORT] == transport


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_one_trace_from_client_to_server_over_stdio(rec: Recorder, tmp_path: Path, mode: str) -> None:
    spans = tmp_path / "spans.jsonl"
    instrument_clients(**rec.providers)
    env = {"PYTHONPATH": str(ROOT), "OTEL_TEST_SPANS": str(spans)}

    async def go() -> None:
        async with Client([sys.executable, str(OTEL_SERVER)], mode=mode, env=env) as client:
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
            version = client.legacy_version if mode == "legacy" else client.protocol_version
            _check_one_trace(rec, _wait_spans(spans, "tools/call add"), version or "", "pipe")

    run(go())


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_one_trace_from_client_to_server_over_http(rec: Recorder, tmp_path: Path, mode: str) -> None:
    spans = tmp_path / "spans.jsonl"
    instrument_clients(**rec.providers)
    port = free_port()
    with otel_http_server(port, OTEL_TEST_SPANS=str(spans)):
        async def go() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
                await client.call_tool("add", {"a": 2, "b": 3})
                version = client.legacy_version if mode == "legacy" else client.protocol_version
                server_spans = _wait_spans(spans, "tools/call add")
                _check_one_trace(rec, server_spans, version or "", "tcp")
                client_span = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call add")
                assert client_span.attributes[C.SERVER_PORT] == port
                assert client_span.attributes[C.SERVER_ADDRESS] == "127.0.0.1"
                if mode == "legacy":
                    session = client_span.attributes[C.SESSION_ID]
                    assert session and isinstance(session, str)

        run(go())


@contextlib.contextmanager
def otel_http_server(port: int, **env: str) -> Iterator[subprocess.Popen[str]]:
    """``mcpkit serve --http`` of tests/servers/otel_server.py on ``port``, ready (``env``: where
    its spans and metrics go); killed on the way out unless it has exited."""
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), str(OTEL_SERVER)],
                            cwd=str(ROOT), env={**subprocess_env(), **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        assert "serving otel-test" in proc.stderr.readline()
        _wait_port(port)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_port(port: int, timeout: float = 15.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def _json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporters print one after another."""
    decoder = json.JSONDecoder()
    out, i = [], 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return out
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        out.append(obj)
        i = end


def test_acceptance_opentelemetry_instrument_console(tmp_path: Path) -> None:
    """``opentelemetry-instrument --traces_exporter console --metrics_exporter console mcpkit
    serve --http --port P examples/demo.py``, then ``mcpkit call add a=2 b=3``."""
    bindir = Path(sys.executable).parent
    instrument = bindir / "opentelemetry-instrument"
    if not instrument.exists():
        pytest.skip("opentelemetry-instrument is not installed (opentelemetry-distro)")
    port = free_port()
    # Logs are not part of this: the distro's default logs exporter (OTLP) needs an exporter package.
    env = {**subprocess_env(), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "OTEL_LOGS_EXPORTER": "none", "OTEL_METRIC_EXPORT_INTERVAL": "60000"}
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        proc = subprocess.Popen([str(instrument), "--traces_exporter", "console", "--metrics_exporter", "console",
                                 "mcpkit", "serve", "--http", "--port", str(port), str(DEMO)],
                                cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert "serving" in line, line + proc.stderr.read()
            _wait_port(port)
            called = subprocess.run([str(bindir / "mcpkit"), "call", "add", "a=2", "b=3", f"http://127.0.0.1:{port}/mcp"],
                                    env=env, capture_output=True, text=True, timeout=60)
            assert called.returncode == 0, called.stderr
            assert called.stdout.strip() == "5"
            proc.send_signal(signal.SIGTERM)  # the SDK flushes spans and metrics at exit
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    printed = _json_objects(out.read_text())
    span = next((o for o in printed if o.get("name") == "tools/call add"), None)
    assert span is not None, out.read_text()[-3000:]
    assert span["kind"] == "SpanKind.SERVER"
    assert span["attributes"][C.METHOD] == "tools/call" and span["attributes"][C.TOOL_NAME] == "add"
    metrics = [m for o in printed for rm in o.get("resource_metrics", ()) for sm in rm["scope_metrics"]
               for m in sm["metrics"] if m["name"] == C.SERVER_OPERATION_DURATION]
    points = [p for m in metrics for p in m["data"]["data_points"]]
    assert any(p["attributes"].get(C.TOOL_NAME) == "add" and p["count"] >= 1 for p in points), metrics
    assert metrics[0]["unit"] == "s"


IMPORT_CHECK = """
import sys
import mcpkit
from mcpkit import Server, Client
s = Server("x")
from mcpkit.observability import auto_instrument, configured
assert not configured()
assert not auto_instrument(s, "stdio")
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_nothing_imports_opentelemetry_unless_it_is_set_up() -> None:
    out = subprocess.run([sys.executable, "-c", IMPORT_CHECK], capture_output=True, text=True, env=subprocess_env(),
                         cwd=str(ROOT), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


API_ONLY = """
from opentelemetry import trace  # loaded, but no SDK provider set: stays off
from mcpkit import Server
from mcpkit.observability import auto_instrument, configured
assert not configured()
assert not auto_instrument(Server("x"), "http")
print("off")
"""


def test_api_without_a_provider_stays_off() -> None:
    out = subprocess.run([sys.executable, "-c", API_ONLY], capture_output=True, text=True, env=subprocess_env(),
                         cwd=str(ROOT), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "off"


def test_the_standard_variables_turn_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    if not configured():
        monkeypatch.setattr(trace, "get_tracer_provider", lambda: TracerProvider())
    assert configured()
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "redis, mcpkit")
    assert not auto_instrument(Server("x"), "http")
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not auto_instrument(Server("x"), "http")
