"""OpenTelemetry beyond one request: sessions, notifications, MRTR rounds, tasks and a proxy hop.

Checked with the SDK's in-memory exporters in this process, and with the spans and metrics
that real server processes (``tests/servers/otel_server.py`` over stdio and HTTP, ``mcpkit
proxy`` under ``opentelemetry-instrument``) write out:

- ``mcp.client.session.duration`` (the Client's connection, both eras) and
  ``mcp.server.session.duration`` (a legacy session: stdio process, ``Mcp-Session-Id``);
- SERVER spans for the legacy session's own methods and the client's notifications, CLIENT
  spans for what a server sends (notifications, a legacy session's elicitation request), and
  the mirror images on the client;
- one CLIENT span, one trace, across the rounds of an MRTR call; a task's creation, polling
  and result in one trace;
- client -> ``mcpkit proxy`` -> backend: one trace, the proxy's SERVER span the parent of its
  CLIENT span.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Client, Context, Server
from mcpkit.errors import TransportError
from mcpkit.observability import _conv as C
from mcpkit.observability import instrument_clients, instrument_server
from mcpkit.protocol import types as t
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, TASKS_SERVER, load_module, subprocess_env
from tests.helpers.servers import free_port
from tests.test_observability import (
    BUCKETS,
    OTEL_SERVER,
    Recorder,
    _json_objects,
    _spans_file,
    _wait_port,
    _wait_spans,
    otel_http_server,
)

TASKS = load_module(TASKS_SERVER, "_tests_otel_tasks_server")
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.fixture
def rec() -> Any:
    from mcpkit.observability import uninstrument_clients

    r = Recorder()
    yield r
    uninstrument_clients()


def answer(params: t.ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def _metric_points(path: Path, name: str) -> list[dict[str, Any]]:
    out = []
    for dump in _spans_file(path):
        for rm in dump.get("resource_metrics", ()):
            for sm in rm["scope_metrics"]:
                for m in sm["metrics"]:
                    if m["name"] == name:
                        assert m["unit"] == "s"
                        out.extend(m["data"]["data_points"])
    return out


def _by_name(spans: list[dict[str, Any]], name: str, kind: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name and s["kind"] == f"SpanKind.{kind}"]


def _tid(span: dict[str, Any]) -> int:
    return int(span["context"]["trace_id"], 16)


def _sid(span: dict[str, Any]) -> int:
    return int(span["context"]["span_id"], 16)


def _parent(span: dict[str, Any]) -> int | None:
    return int(span["parent_id"], 16) if span.get("parent_id") else None


# ====================================================================== sessions
def test_client_session_is_the_connection_in_the_2026_era(rec: Recorder) -> None:
    server = Server("s")

    @server.tool()
    def hi() -> str:
        return "hi"

    instrument_clients(**rec.providers)
    instrument_server(server, **rec.providers)

    async def go() -> None:
        async with Client(server) as client:
            await client.call_tool("hi", {})
        async with Client(server) as client:
            await client.list_tools()

    run(go())
    points = rec.points(C.CLIENT_SESSION_DURATION)
    assert sum(p.count for p in points) == 2
    (point,) = points  # both with the same attributes
    assert list(point.explicit_bounds) == BUCKETS
    assert dict(point.attributes) == {C.PROTOCOL_VERSION: "2026-07-28"}  # in memory: no network, no session id
    assert rec.points(C.SERVER_SESSION_DURATION) == []  # a stateless server keeps no session


def test_a_client_that_fails_to_connect_records_the_error(rec: Recorder, tmp_path: Path) -> None:
    instrument_clients(**rec.providers)

    async def go() -> None:
        with pytest.raises(TransportError):
            async with Client([sys.executable, "-c", "import sys; sys.exit(3)"], probe_timeout=2) as client:
                await client.list_tools()

    run(go())
    (point,) = rec.points(C.CLIENT_SESSION_DURATION)
    assert point.attributes[C.NETWORK_TRANSPORT] == "pipe" and point.attributes[C.ERROR_TYPE] == "TransportClosed"


def test_legacy_session_over_stdio(rec: Recorder, tmp_path: Path) -> None:
    """initialize .. EOF: the session's own methods and notifications as spans, both ends'
    session durations, a pushed list change and a server-to-client elicitation in one trace."""
    spans_path, metrics_path = tmp_path / "spans.jsonl", tmp_path / "metrics.jsonl"
    instrument_clients(**rec.providers)
    env = {"PYTHONPATH": str(ROOT), "OTEL_TEST_SPANS": str(spans_path), "OTEL_TEST_METRICS": str(metrics_path)}
    changed: list[str] = []

    async def go() -> None:
        async with Client([sys.executable, str(OTEL_SERVER)], mode="legacy", env=env, elicitation=answer,
                          on_notification=lambda m, p: changed.append(m)) as client:
            await client.request("ping")
            await client.request("logging/setLevel", {"level": "info"})
            await client.request("resources/subscribe", {"uri": "test://readme"})
            assert (await client.call_tool("ask", {})).content[0].text == "hello Ada"  # type: ignore[union-attr]
            await client.call_tool("chatty", {}, progress=lambda *a: None)
            _wait_spans(spans_path, "notifications/tools/list_changed")

    run(go(), 60)
    server = _wait_spans(spans_path, "tools/call chatty")
    clients = {s.name: s for s in rec.finished(SpanKind.CLIENT)}
    version = clients["tools/call ask"].attributes[C.PROTOCOL_VERSION]
    assert version == clients["initialize"].attributes[C.PROTOCOL_VERSION] == "2025-11-25"
    # The session's own methods: SERVER spans, children of the client's spans.
    for name in ("initialize", "ping", "logging/setLevel", "resources/subscribe"):
        (served,) = _by_name(server, name, "SERVER")
        c = clients[name]
        assert _tid(served) == c.context.trace_id and _parent(served) == c.context.span_id, name
        a = served["attributes"]
        assert a[C.METHOD] == name and a[C.REQUEST_ID] and a[C.NETWORK_TRANSPORT] == "pipe"
        assert a[C.PROTOCOL_VERSION] == version
    assert _by_name(server, "resources/subscribe", "SERVER")[0]["attributes"][C.RESOURCE_URI] == "test://readme"
    # The client's notification: a CLIENT span here, a SERVER span there.
    note = clients["notifications/initialized"]
    (got,) = _by_name(server, "notifications/initialized", "SERVER")
    assert _parent(got) == note.context.span_id and C.REQUEST_ID not in got["attributes"]
    # The legacy elicitation: the server's CLIENT span under its tools/call span, the client's SERVER span under it.
    (call_ask,) = _by_name(server, "tools/call ask", "SERVER")
    (asked,) = _by_name(server, "elicitation/create", "CLIENT")
    assert _parent(asked) == _sid(call_ask) and asked["attributes"][C.REQUEST_ID]
    (answered,) = [s for s in rec.finished(SpanKind.SERVER) if s.name == "elicitation/create"]
    assert answered.parent is not None and answered.parent.span_id == _sid(asked)
    assert answered.context.trace_id == clients["tools/call ask"].context.trace_id == _tid(call_ask)
    # The handler's notifications (progress, log) and the session's pushed list change.
    (chatty,) = _by_name(server, "tools/call chatty", "SERVER")
    for name in ("notifications/progress", "notifications/message"):
        (sent,) = _by_name(server, name, "CLIENT")
        assert _parent(sent) == _sid(chatty)
        (recv,) = [s for s in rec.finished(SpanKind.SERVER) if s.name == name]
        assert recv.parent is not None and recv.parent.span_id == _sid(sent)
    (pushed,) = _by_name(server, "notifications/tools/list_changed", "CLIENT")
    assert pushed["attributes"][C.METHOD] == "notifications/tools/list_changed"
    assert "notifications/tools/list_changed" in changed
    assert any(s.name == "notifications/tools/list_changed" for s in rec.finished(SpanKind.SERVER))
    # Durations: the client's connection and the server's session, once each.
    (mine,) = rec.points(C.CLIENT_SESSION_DURATION)
    assert mine.count == 1 and dict(mine.attributes) == {C.PROTOCOL_VERSION: version, C.NETWORK_TRANSPORT: "pipe"}
    (theirs,) = _wait_metrics(metrics_path, C.SERVER_SESSION_DURATION)
    assert theirs["count"] == 1 and theirs["explicit_bounds"] == BUCKETS
    assert theirs["attributes"] == {C.PROTOCOL_VERSION: version, C.NETWORK_TRANSPORT: "pipe"}
    ops = _wait_metrics(metrics_path, C.SERVER_OPERATION_DURATION)
    assert {p["attributes"][C.METHOD] for p in ops} >= {"initialize", "ping", "notifications/initialized",
                                                         "logging/setLevel", "tools/call"}
    assert any(p["attributes"][C.METHOD] == "notifications/progress"
               for p in _wait_metrics(metrics_path, C.CLIENT_OPERATION_DURATION))


def _wait_metrics(path: Path, name: str, timeout: float = 15.0) -> list[dict[str, Any]]:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        points = _metric_points(path, name)
        if points:
            return points
        time.sleep(0.1)
    raise AssertionError(f"no {name} in {path.read_text() if path.exists() else 'nothing'}")


def test_legacy_session_over_http(rec: Recorder, tmp_path: Path) -> None:
    """One Mcp-Session-Id, initialize .. DELETE: mcp.server.session.duration over tcp/http."""
    spans_path, metrics_path = tmp_path / "spans.jsonl", tmp_path / "metrics.jsonl"
    instrument_clients(**rec.providers)
    port = free_port()
    with otel_http_server(port, OTEL_TEST_SPANS=str(spans_path), OTEL_TEST_METRICS=str(metrics_path)) as proc:
        async def go() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", elicitation=answer) as client:
                await client.request("ping")
                await client.call_tool("ask", {})

        run(go(), 60)
        server = _wait_spans(spans_path, "tools/call ask")
        clients = {s.name: s for s in rec.finished(SpanKind.CLIENT)}
        (ping,) = _by_name(server, "ping", "SERVER")
        assert _parent(ping) == clients["ping"].context.span_id
        assert ping["attributes"][C.NETWORK_TRANSPORT] == "tcp" and ping["attributes"][C.NETWORK_PROTOCOL_NAME] == "http"
        (asked,) = _by_name(server, "elicitation/create", "CLIENT")
        assert _tid(asked) == clients["tools/call ask"].context.trace_id
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        (point,) = _wait_metrics(metrics_path, C.SERVER_SESSION_DURATION)
        assert point["count"] == 1
        assert point["attributes"][C.NETWORK_TRANSPORT] == "tcp" and point["attributes"][C.NETWORK_PROTOCOL_NAME] == "http"
        assert point["attributes"][C.PROTOCOL_VERSION] == clients["ping"].attributes[C.PROTOCOL_VERSION]
        (mine,) = rec.points(C.CLIENT_SESSION_DURATION)
        assert mine.attributes[C.SERVER_PORT] == port and mine.attributes[C.SERVER_ADDRESS] == "127.0.0.1"
        assert C.SESSION_ID not in mine.attributes  # a metric attribute it is not


# ====================================================================== notifications, modern era
def test_modern_notifications_both_ways_in_memory(rec: Recorder) -> None:
    server = Server("s")

    @server.tool()
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.info("half way")
        return "ok"

    instrument_server(server, **rec.providers)
    instrument_clients(**rec.providers)
    seen: list[Any] = []

    async def go() -> None:
        async with Client(server) as client:
            await client.call_tool("work", {}, progress=lambda *a: seen.append(a), log_level="info", on_log=seen.append)

    run(go())
    call = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call work")
    handled = next(s for s in rec.finished(SpanKind.SERVER) if s.name == "tools/call work")
    for name in ("notifications/progress", "notifications/message"):
        sent = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == name)
        got = next(s for s in rec.finished(SpanKind.SERVER) if s.name == name)
        assert sent.parent is not None and sent.parent.span_id == handled.context.span_id
        assert got.parent is not None and got.parent.span_id == sent.context.span_id
        assert got.context.trace_id == call.context.trace_id
        assert sent.attributes[C.METHOD] == name and C.REQUEST_ID not in sent.attributes
        assert sent.attributes[C.PROTOCOL_VERSION] == "2026-07-28"
    assert len(seen) == 2
    sent_points = [p for p in rec.points(C.CLIENT_OPERATION_DURATION) if p.attributes[C.METHOD] == "notifications/progress"]
    assert sent_points and sent_points[0].count == 1


def test_modern_notifications_a_server_handles_itself(rec: Recorder, tmp_path: Path) -> None:
    """stdio: ``notifications/cancelled`` (the transport cancels the handler); HTTP: a
    notification POSTed to the stateless endpoint (accepted with 202): SERVER spans both."""
    import httpx

    from mcpkit.client._transport import NoAnswer

    spans_path = tmp_path / "spans.jsonl"
    env = {"PYTHONPATH": str(ROOT), "OTEL_TEST_SPANS": str(spans_path)}

    async def go() -> None:
        async with Client([sys.executable, str(OTEL_SERVER)], mode="modern", env=env) as client:
            await client.call_tool("add", {"a": 1, "b": 2})  # warm: nap starts before it is cancelled
            with pytest.raises(NoAnswer):
                await client.call_tool("nap", {"seconds": 30}, timeout=1.0)
            _wait_spans(spans_path, "notifications/cancelled")

    run(go(), 60)
    (cancelled,) = _by_name(_spans_file(spans_path), "notifications/cancelled", "SERVER")
    assert cancelled["attributes"] == {C.METHOD: "notifications/cancelled", C.NETWORK_TRANSPORT: "pipe"}
    (napped,) = _by_name(_wait_spans(spans_path, "tools/call nap"), "tools/call nap", "SERVER")  # ends after
    assert napped["attributes"][C.ERROR_TYPE] == "cancelled"

    port = free_port()
    http_spans = tmp_path / "http.jsonl"
    with otel_http_server(port, OTEL_TEST_SPANS=str(http_spans)):
        parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed",
                "params": {"_meta": {"traceparent": parent, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json=note, timeout=10,
                       headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"})
        assert r.status_code == 202, r.text
        (got,) = _by_name(_wait_spans(http_spans, "notifications/roots/list_changed"),
                          "notifications/roots/list_changed", "SERVER")
        assert _tid(got) == 0x4bf92f3577b34da6a3ce929d0e0e4736 and _parent(got) == 0x00f067aa0ba902b7
        assert got["attributes"][C.PROTOCOL_VERSION] == "2026-07-28" and got["attributes"][C.NETWORK_TRANSPORT] == "tcp"


# ====================================================================== MRTR and tasks
def test_one_span_and_one_trace_across_mrtr_rounds(rec: Recorder) -> None:
    server = Server("s")

    @server.tool()
    async def ask(ctx: Context) -> str:
        first = await ctx.elicit("Name?", NAME_SCHEMA, key="first")
        second = await ctx.elicit("Again?", NAME_SCHEMA, key="second")
        return f"{(first.content or {}).get('name')} {(second.content or {}).get('name')}"

    instrument_server(server, **rec.providers)
    instrument_clients(**rec.providers)

    async def go() -> None:
        async with Client(server, elicitation=answer) as client:
            assert (await client.call_tool("ask", {})).content[0].text == "Ada Ada"  # type: ignore[union-attr]

    run(go())
    (call,) = [s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call ask"]
    rounds = [s for s in rec.finished(SpanKind.SERVER) if s.name == "tools/call ask"]
    assert len(rounds) == 3  # two input_required rounds, then the answer
    for served in rounds:
        assert served.context.trace_id == call.context.trace_id
        assert served.parent is not None and served.parent.span_id == call.context.span_id
        assert served.status.status_code == StatusCode.UNSET
    assert [e.name for e in rounds[0].events] == ["mcp.input_required"]
    events = [(e.name, e.attributes.get("mcp.round")) for e in call.events]
    assert events == [("mcp.input_required", 1), ("mcp.retry", 2), ("mcp.input_required", 2), ("mcp.retry", 3)]
    assert call.status.status_code == StatusCode.UNSET and C.ERROR_TYPE not in call.attributes
    (point,) = [p for p in rec.points(C.CLIENT_OPERATION_DURATION) if p.attributes.get(C.TOOL_NAME) == "ask"]
    assert point.count == 1  # one logical operation
    assert sum(p.count for p in rec.points(C.SERVER_OPERATION_DURATION) if p.attributes.get(C.TOOL_NAME) == "ask") == 3


def test_mrtr_rounds_that_stop_end_the_span_with_the_error(rec: Recorder) -> None:
    server = Server("s")

    @server.tool()
    async def ask(ctx: Context) -> str:
        await ctx.elicit("Name?", NAME_SCHEMA)
        return "never"

    instrument_server(server, **rec.providers)
    instrument_clients(**rec.providers)

    def refuse(params: t.ElicitRequestParams) -> dict[str, Any]:
        raise RuntimeError("no user here")

    async def go() -> None:
        async with Client(server, elicitation=refuse) as client:
            with pytest.raises(RuntimeError):
                await client.call_tool("ask", {})
            await client.list_tools()  # the next call is a span of its own

    run(go())
    (call,) = [s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call ask"]
    assert call.attributes[C.ERROR_TYPE] == "RuntimeError" and call.status.status_code == StatusCode.ERROR
    listed = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/list")
    assert listed.context.trace_id != call.context.trace_id and not listed.events


@pytest.mark.parametrize("where", ["memory", "stdio"])
def test_a_task_is_one_trace_from_creation_to_result(rec: Recorder, tmp_path: Path, where: str) -> None:
    instrument_clients(**rec.providers)
    if where == "memory":
        server = TASKS.build()
        instrument_server(server, **rec.providers)
        target: Any = server
    else:
        target = [sys.executable, "-m", "mcpkit", "serve", str(TASKS_SERVER)]

    async def go() -> None:
        async with Client(target, env=subprocess_env() if where == "stdio" else None) as client:
            handle = await client.call_tool("slow", {"seconds": 0.2, "label": "job"}, task=True)
            assert (await handle.result()).content[0].text == "job done after 0.2s"  # type: ignore[union-attr]

    run(go(), 60)
    (created,) = [s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call slow"]
    follow = [s for s in rec.finished(SpanKind.CLIENT) if s.name in C.TASK_METHODS]
    assert {s.name for s in follow} >= {"tasks/get"} and any(s.name in ("tasks/result", "tasks/get") for s in follow)
    for s in follow:
        assert s.context.trace_id == created.context.trace_id
        assert s.parent is not None and s.parent.span_id == created.context.span_id
    if where == "memory":
        served = [s for s in rec.finished(SpanKind.SERVER) if s.name in C.TASK_METHODS or s.name == "tools/call slow"]
        assert len(served) == len(follow) + 1
        assert {s.context.trace_id for s in served} == {created.context.trace_id}


# ====================================================================== a proxy hop
def test_one_trace_through_mcpkit_proxy(rec: Recorder, tmp_path: Path) -> None:
    """client -> ``mcpkit proxy --http`` (under opentelemetry-instrument) -> backend (``mcpkit
    serve --http``): the proxy's SERVER span is the parent of its CLIENT span, one trace id."""
    bindir = Path(sys.executable).parent
    instrument = bindir / "opentelemetry-instrument"
    if not instrument.exists():
        pytest.skip("opentelemetry-instrument is not installed (opentelemetry-distro)")
    instrument_clients(**rec.providers)
    backend_spans = tmp_path / "backend.jsonl"
    bport, pport = free_port(), free_port()
    env = {**subprocess_env(), "OTEL_TEST_SPANS": str(backend_spans)}
    backend = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(bport), str(OTEL_SERVER)],
                               cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    proxy_env = {**subprocess_env(), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                 "OTEL_LOGS_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    out = tmp_path / "proxy.txt"
    with out.open("w") as sink:
        proxy = subprocess.Popen([str(instrument), "--traces_exporter", "console", "mcpkit", "proxy", "--http", "--port",
                                  str(pport), f"http://127.0.0.1:{bport}/mcp"],
                                 cwd=str(ROOT), env=proxy_env, stdin=subprocess.DEVNULL, stdout=sink,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_port(bport)
            _wait_port(pport)

            async def go() -> None:
                async with Client(f"http://127.0.0.1:{pport}/mcp") as client:
                    assert (await client.call_tool("add", {"a": 2, "b": 3})).structuredContent == {"result": 5}

            run(go(), 60)
            proxy.send_signal(signal.SIGTERM)  # the SDK flushes at exit
            proxy.wait(timeout=20)
        finally:
            for p in (proxy, backend):
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
    printed = [o for o in _json_objects(out.read_text()) if "context" in o]
    mine = next(s for s in rec.finished(SpanKind.CLIENT) if s.name == "tools/call add")
    (front,) = _by_name(printed, "tools/call add", "SERVER")
    (hop,) = _by_name(printed, "tools/call add", "CLIENT")
    (back,) = _by_name(_spans_file(backend_spans), "tools/call add", "SERVER")
    assert {_tid(front), _tid(hop), _tid(back)} == {mine.context.trace_id}
    assert _parent(front) == mine.context.span_id
    assert _parent(hop) == _sid(front)
    assert _parent(back) == _sid(hop)
    assert json.dumps(hop["attributes"]).count(str(bport)) == 1  # server.port: the backend's
