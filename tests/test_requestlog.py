"""Structured request logs (``mcpkit serve --log-format json``, ``RequestLog``): the lines are
parsed; a protected HTTP server logs the subject and never the token; argument values only
with ``--log-arguments``; stdio in both eras; a 2025-11-25 session's own methods and the
notifications, over stdio and HTTP; trace and span ids when tracing is on."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from mcpkit import Client, Server
from mcpkit.server.ratelimit import RATE_LIMITED
from mcpkit.server.requestlog import RequestLog
from tests.helpers.aio import run
from tests.helpers.cli import Served
from tests.helpers.issuer import http_issuer
from tests.helpers.messages import LEGACY, body, headers_for, init_msg, note, params, req, request
from tests.helpers.paths import SERVERS, subprocess_env

OPS = SERVERS / "ops_server.py"
SECRET = "hunter2-do-not-log"


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_http_lines_name_the_request_and_the_subject_never_the_token() -> None:
    with http_issuer() as issuer:
        srv = Served("--auth-issuer", issuer.issuer, "--log-format", "json", "--rate-limit", "tools/call:echo:2/m", OPS)
        try:
            srv.startup()
            token = issuer.token(srv.url)
            auth = {"authorization": f"Bearer {token}"}
            with httpx.Client(timeout=10, trust_env=False) as http:
                def call(name: str, arguments: dict[str, Any], id: int) -> httpx.Response:
                    msg = body("tools/call", {"name": name, "arguments": arguments}, id=id)
                    return http.post(srv.url, json=msg, headers=headers_for(msg) | auth)

                assert call("echo", {"text": SECRET}, 1).status_code == 200
                failed = call("fail", {}, 2)
                assert failed.json()["result"]["isError"] is True, (failed, failed.headers, failed.text)
                assert call("echo", {"text": SECRET}, 3).status_code == 200
                assert call("echo", {"text": SECRET}, 4).status_code == 429
                assert http.post(srv.url, json=body("tools/list"), headers=headers_for(body("tools/list"))).status_code == 401
            lines: list[dict[str, Any]] = []
            while len(lines) < 4:  # (the failing tool's exception is logged in between, as text)
                line = srv.read_line()
                if line.startswith("{"):
                    lines.append(json.loads(line))
        finally:
            everything = srv.rest()  # every line it wrote (it is stopped)
    assert token not in everything and SECRET not in everything and "Bearer" not in everything
    ok, tool_error, _, refused = lines
    assert set(ok) == {"time", "level", "method", "target", "id", "duration_ms", "outcome", "era", "protocol_version",
                       "transport", "peer", "principal"}
    assert ok["method"] == "tools/call" and ok["target"] == "echo" and ok["id"] == 1 and ok["outcome"] == "ok"
    assert ok["era"] == "modern" and ok["protocol_version"] == "2026-07-28" and ok["transport"] == "http"
    assert ok["principal"] == "alice" and ok["peer"] == "127.0.0.1" and ok["level"] == "info"
    assert isinstance(ok["duration_ms"], float) and ok["time"].endswith("Z")
    assert tool_error["outcome"] == "tool_error" and tool_error["target"] == "fail"
    assert refused["outcome"] == "error" and refused["error_code"] == RATE_LIMITED and refused["level"] == "warning"


def stdio_session(*flags: str, lines: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    stdin = "".join(json.dumps(m) + "\n" for m in lines)
    return subprocess.run([sys.executable, "-m", "mcpkit", "serve", *flags, str(OPS)], input=stdin, text=True,
                          capture_output=True, env=subprocess_env(), timeout=60)


def test_stdio_lines_in_both_eras_and_arguments_only_when_asked() -> None:
    modern = [request(1, "tools/call", name="echo", arguments={"text": SECRET}), request(2, "tools/call", name="nope")]
    out = stdio_session("--log-format", "json", lines=modern)
    first, second = json_lines(out.stderr)
    assert first["transport"] == "stdio" and first["outcome"] == "ok" and "peer" not in first and "principal" not in first
    assert second["outcome"] == "error" and second["error_code"] == -32602 and second["target"] == "nope"
    assert SECRET not in out.stderr
    out = stdio_session("--log-format", "json", "--log-arguments", lines=modern[:1])
    assert json_lines(out.stderr)[0]["arguments"] == {"text": SECRET}
    legacy = [init_msg(LEGACY), note("notifications/initialized"), req(2, "tools/call", {"name": "echo",
                                                                                          "arguments": {"text": "hi"}})]
    out = stdio_session("--log-format", "json", lines=legacy)
    logged = json_lines(out.stderr)
    assert [(x["method"], x["era"]) for x in logged if x["method"] == "tools/call"] == [("tools/call", "legacy")]
    assert {x["method"] for x in logged} == {"initialize", "notifications/initialized", "tools/call"}, out.stderr
    bad = stdio_session("--log-arguments", lines=[])
    assert bad.returncode == 2 and bad.stderr.strip() == "mcpkit serve: --log-arguments needs --log-format json"


#: A 2025-11-25 session: initialize, the client's notifications, the methods the session answers
#: itself (one refused), then a tool call.
SESSION = [init_msg(LEGACY), note("notifications/initialized"), req(2, "ping"),
           req(3, "logging/setLevel", {"level": "debug"}), req(4, "logging/setLevel", {"level": "loud"}),
           req(5, "resources/subscribe", {"uri": "ops://status"}), note("notifications/roots/list_changed"),
           req(6, "tools/call", {"name": "echo", "arguments": {"text": SECRET}})]


def check_session_lines(logged: list[dict[str, Any]], transport: str) -> None:
    by = {(x["method"], x.get("id")): x for x in logged}
    assert sorted(by, key=str) == sorted([("initialize", 1), ("notifications/initialized", None), ("ping", 2),
                                          ("logging/setLevel", 3), ("logging/setLevel", 4),
                                          ("resources/subscribe", 5), ("notifications/roots/list_changed", None),
                                          ("tools/call", 6)], key=str), logged
    for x in logged:
        assert x["era"] == "legacy" and x["transport"] == transport, x
        # (over stdio a notification may be read before the initialize before it is answered)
        assert x.get("protocol_version", "" if "id" not in x and transport == "stdio" else None) in (LEGACY, ""), x
        assert isinstance(x["duration_ms"], float) and x["time"].endswith("Z"), x
        assert ("peer" in x) == (transport == "http") and "arguments" not in x, x
    for method in ("notifications/initialized", "notifications/roots/list_changed"):
        assert "id" not in by[(method, None)] and by[(method, None)]["outcome"] == "ok"
    assert by[("initialize", 1)]["outcome"] == "ok" and by[("ping", 2)]["level"] == "info"
    assert by[("logging/setLevel", 3)]["outcome"] == "ok" and "error_code" not in by[("logging/setLevel", 3)]
    refused = by[("logging/setLevel", 4)]
    assert refused["outcome"] == "error" and refused["error_code"] == -32602 and refused["level"] == "warning"
    assert by[("resources/subscribe", 5)]["target"] == "ops://status" and by[("resources/subscribe", 5)]["outcome"] == "ok"
    assert by[("tools/call", 6)]["target"] == "echo" and by[("tools/call", 6)]["outcome"] == "ok"


def test_a_legacy_session_logs_its_own_methods_and_the_notifications_over_stdio() -> None:
    out = stdio_session("--log-format", "json", lines=SESSION)
    check_session_lines(json_lines(out.stderr), "stdio")
    assert SECRET not in out.stderr
    # A 2026-07-28 client's notifications/cancelled (no session): one line, no id, the era from its _meta.
    out = stdio_session("--log-format", "json", lines=[note("notifications/cancelled", params(requestId=99))])
    (line,) = json_lines(out.stderr)
    assert line["method"] == "notifications/cancelled" and "id" not in line and line["outcome"] == "ok", line
    assert line["era"] == "modern" and line["transport"] == "stdio"


def test_a_legacy_session_logs_its_own_methods_and_the_notifications_over_http() -> None:
    srv = Served("--log-format", "json", OPS)
    try:
        srv.startup()
        with httpx.Client(timeout=10, trust_env=False) as http:
            accept = {"accept": "application/json, text/event-stream"}
            opened = http.post(srv.url, json=SESSION[0], headers=accept)
            assert opened.status_code == 200, opened.text
            session = accept | {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
            for msg in SESSION[1:]:
                answer = http.post(srv.url, json=msg, headers=session)
                assert answer.status_code == (200 if "id" in msg else 202), (msg, answer.text)
        logged: list[dict[str, Any]] = []
        while len(logged) < len(SESSION):
            line = srv.read_line()
            if line.startswith("{"):
                logged.append(json.loads(line))
    finally:
        everything = srv.rest()
    check_session_lines(logged, "http")
    assert all(x["peer"] == "127.0.0.1" for x in logged) and SECRET not in everything


def test_lines_carry_the_trace_when_tracing_is_on() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpkit.observability import instrument_server

    server = Server("traced")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    stream = io.StringIO()
    RequestLog(stream, transport="memory").install(server)  # inside the span: installed before telemetry
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    instrument_server(server, tracer_provider=provider)

    async def go() -> None:
        async with Client(server) as client:
            await client.call_tool("add", {"a": 1, "b": 2})

    run(go())
    (line,) = json_lines(stream.getvalue())
    span = next(s for s in spans.get_finished_spans() if s.name == "tools/call add")
    assert line["trace_id"] == f"{span.context.trace_id:032x}" and line["span_id"] == f"{span.context.span_id:016x}"
    assert line["transport"] == "memory"


def test_a_legacy_sessions_own_lines_are_inside_its_spans() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpkit.observability import instrument_server
    from mcpkit.protocol import codec

    server = Server("traced")
    stream = io.StringIO()
    RequestLog(stream).install(server)
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    instrument_server(server, tracer_provider=provider)  # both observe the session: telemetry outside

    out: list[dict[str, Any]] = []

    async def go() -> None:
        async def sent(data: bytes) -> None:
            msg = json.loads(data)
            out.append(msg)
            if "id" in msg:  # the client answers the server's request
                session.handle_response(codec.Response(msg["id"], {"roots": []}))

        session = server.open_legacy_session(send=sent)
        init = init_msg(LEGACY)
        assert (await session.handle(codec.Request(1, "initialize", init["params"]))).error_code is None
        session.handle_notification(codec.Notification("notifications/initialized", None))
        assert (await session.handle(codec.Request(2, "ping", None))).error_code is None
        # The server's own request and push go through both observers (not logged: not the client's).
        assert await session.request("roots/list", None) == {"roots": []}
        await session.notify("notifications/tools/list_changed")
        session.close()

    run(go())
    lines = {x["method"]: x for x in json_lines(stream.getvalue())}
    assert set(lines) == {"initialize", "notifications/initialized", "ping"}
    traced = {s.name: f"{s.context.span_id:016x}" for s in spans.get_finished_spans() if s.name in lines}
    assert traced == {name: x["span_id"] for name, x in lines.items()}
    assert [m["method"] for m in out] == ["roots/list", "notifications/tools/list_changed"]
    assert all("traceparent" in m["params"]["_meta"] for m in out)  # telemetry still carries the context
    assert {"roots/list", "notifications/tools/list_changed"} <= {s.name for s in spans.get_finished_spans()}


def test_nothing_is_loaded_or_installed_when_the_log_is_off() -> None:
    code = ("import sys\nfrom mcpkit import Server\nfrom mcpkit._operating import operate\n"
            "s = Server('x')\noperate(s, 'stdio')\nprint('mcpkit.server.requestlog' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=60)
    assert out.stdout.strip() == "False", out.stderr
