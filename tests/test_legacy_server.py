"""Our server's 2025-11-25 face: ``initialize`` sessions beside the stateless 2026-07-28 wire.

Everything runs over real transports: stdio servers are subprocesses spoken to in raw
lines, HTTP servers are ``python -m mcpkit serve --http`` (or, for the session cap, idle
expiry and the flood test, ``tests/interop/legacy_test_server.py --http`` which calls
``uvicorn.run(server.http_app(max_sessions=..., session_idle_timeout=...))``). Every test
that sends something wrong then proves the same server still serves.

Spec: 2025-11-25 basic/lifecycle (handshake, version negotiation, pings before the
initialize response) and basic/transports (Mcp-Session-Id: 400 without, 404 for an unknown
or ended one, visible ASCII; DELETE ends a session; server requests on the POST's SSE
stream, the client's answer POSTed back and acknowledged with 202).
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.legacy import GetStream, LegacyHttp, assert_endpoint_serves, messages_of
from tests.helpers.messages import (
    JSON_ACCEPT,
    META_CAPS,
    META_VERSION,
    MODERN,
    MODERN_ONLY_RESULT_FIELDS,
    call,
    check_legacy_message,
    init_msg,
    iter_sse,
    note,
    req,
    structured,
)
from tests.helpers.messages import (
    LEGACY as LATEST_LEGACY,
)
from tests.helpers.paths import DEMO, LEGACY_SERVER, load_module
from tests.helpers.servers import ASGI_URL, ServerProcess, asgi_client, mcpkit_serve_argv, running_server
from tests.helpers.wire import LegacyStdioPeer
from tests.interop import legacy_test_server

MODERN_META = {META_VERSION: MODERN, META_CAPS: {}}
ALL_INPUT_CAPS = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}


# ============================================================================ stdio
@pytest.fixture
def stdio() -> Iterator[Callable[[Path], LegacyStdioPeer]]:
    """``stdio(path)`` starts a fresh stdio server process of this test's own."""
    procs: list[LegacyStdioPeer] = []

    def start(path: Path = LEGACY_SERVER) -> LegacyStdioPeer:
        p = LegacyStdioPeer.python(path)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.close()


# ---------------------------------------------------------------- stdio: handshake and era
def test_stdio_initialize_twice_second_gets_error(stdio) -> None:
    s = stdio(DEMO)
    s.handshake()
    resp = s.ask(init_msg(id=2))
    assert resp["error"]["code"] == -32600, resp
    assert "initialize" in resp["error"]["message"], resp
    # The session keeps its first negotiation and keeps serving.
    s.assert_alive()


def test_stdio_modern_envelope_on_legacy_process_is_refused_clearly(stdio) -> None:
    s = stdio(DEMO)
    s.handshake("2025-06-18")
    resp = s.ask(req(2, "tools/list", {"_meta": MODERN_META}))
    err = resp["error"]
    assert err["code"] == -32600, resp
    assert "2025-06-18" in err["message"] and MODERN in err["message"], err
    s.assert_alive()


def test_stdio_initialize_on_modern_process_is_refused_clearly(stdio) -> None:
    s = stdio(DEMO)
    s.assert_alive_modern()  # the first _meta-carrying request makes it a modern process
    resp = s.ask(init_msg(id=2))
    err = resp["error"]
    assert err["code"] == -32600, resp
    assert "initialize" in err["message"] and MODERN in err["message"], err
    s.assert_alive_modern()


def test_stdio_broken_initialize_decides_nothing(stdio) -> None:
    """An initialize that fails validation does not make the process legacy (or modern)."""
    s = stdio(DEMO)
    bad = init_msg(id=1)
    del bad["params"]["clientInfo"]
    resp = s.ask(bad)
    assert resp["error"]["code"] == -32602, resp
    s.handshake()
    s.assert_alive()


@pytest.mark.parametrize("requested", ["2024-01-01", MODERN, "banana"])
def test_stdio_unknown_version_gets_newest_legacy(stdio, requested: str) -> None:
    s = stdio(DEMO)
    result = s.handshake(requested)
    assert result["protocolVersion"] == LATEST_LEGACY
    assert result["serverInfo"]["name"] == "mcpkit-demo"
    s.assert_alive()


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_stdio_supported_version_is_echoed(stdio, version: str) -> None:
    s = stdio(DEMO)
    result = s.handshake(version)
    assert result["protocolVersion"] == version
    assert result["capabilities"]["tools"] == {"listChanged": True}
    s.assert_alive()


def test_stdio_request_before_initialize_names_what_is_missing(stdio) -> None:
    """A bare tools/list on an undecided process is an error, and decides nothing."""
    s = stdio(DEMO)
    resp = s.ask(req(1, "tools/list"))
    assert "error" in resp, resp
    s.handshake()
    s.assert_alive()


def test_stdio_ping_before_initialize_is_answered(stdio) -> None:
    s = stdio(DEMO)
    resp = s.ask(req("early", "ping"))
    s.handshake()  # the early ping decided nothing either way
    s.assert_alive()
    assert resp == {"jsonrpc": "2.0", "id": "early", "result": {}}, resp


# ---------------------------------------------------------------- stdio: legacy methods
def test_stdio_ping_and_set_level_then_log_messages(stdio) -> None:
    s = stdio()
    s.handshake()
    assert s.ask(req(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert s.ask(req(2, "logging/setLevel", {"level": "info"}))["result"] == {}
    s.send(call(3, "log_steps", steps=2))
    resp, before = s.until(lambda m: m.get("id") == 3)
    assert structured(resp["result"]) == "logged 2"
    logs = [m["params"] for m in before if m.get("method") == "notifications/message"]
    assert [(p["level"], p["data"]) for p in logs] == [("info", "step 1 of 2"), ("info", "step 2 of 2")], before
    # A stricter level filters them out.
    assert s.ask(req(4, "logging/setLevel", {"level": "warning"}))["result"] == {}
    s.send(call(5, "log_steps", steps=2))
    resp, before = s.until(lambda m: m.get("id") == 5)
    assert not [m for m in before if m.get("method") == "notifications/message"], before
    # An unknown level is invalid params.
    assert s.ask(req(6, "logging/setLevel", {"level": "chatty"}))["error"]["code"] == -32602
    s.assert_alive()


def test_stdio_subscribe_then_resource_updated_on_stdout(stdio) -> None:
    s = stdio()
    s.handshake()
    assert s.ask(req(1, "resources/subscribe", {"uri": "mem://counter"}))["result"] == {}
    s.send(call(2, "touch", uri="mem://counter"))
    resp, upd = s.both(2, "notifications/resources/updated")
    assert upd == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "mem://counter"}}
    assert structured(resp["result"]) == 1
    # An update of a URI nobody subscribed to is not sent; unsubscribe stops updates.
    s.ask(call(3, "touch", uri="mem://other"))
    assert s.ask(req(4, "resources/unsubscribe", {"uri": "mem://counter"}))["result"] == {}
    s.ask(call(5, "touch", uri="mem://counter"))
    s.assert_silent(0.3)
    s.assert_alive()


def test_stdio_list_changed_when_a_tool_is_added(stdio) -> None:
    s = stdio()
    s.handshake()
    s.send(call(1, "add_tool", name="late_tool"))
    resp, changed = s.both(1, "notifications/tools/list_changed")
    assert "id" not in changed and structured(resp["result"]) == "added late_tool"
    tools = s.ask(req(2, "tools/list"))["result"]["tools"]
    assert "late_tool" in {t["name"] for t in tools}
    assert s.ask(call(3, "late_tool"))["result"]["content"][0]["text"] == "I am late_tool"
    s.assert_alive()


def test_stdio_progress_and_cancellation(stdio) -> None:
    """``_meta.progressToken`` gets notifications/progress; notifications/cancelled stops a request
    and suppresses its response."""
    s = stdio(DEMO)
    s.handshake()
    s.send(req("cd", "tools/call", {"name": "count_down", "arguments": {"start": 2}, "_meta": {"progressToken": "tok"}}))
    resp, before = s.until(lambda m: m.get("id") == "cd")
    progress = [m["params"] for m in before if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [("tok", 0, 2), ("tok", 1, 2), ("tok", 2, 2)]
    assert structured(resp["result"]) == "liftoff"
    slow = stdio()
    slow.handshake()
    slow.send(call("long", "slow", seconds=30))
    time.sleep(0.3)
    slow.send(note("notifications/cancelled", {"requestId": "long", "reason": "user gave up"}))
    slow.assert_alive()
    slow.assert_silent(0.5)  # nothing is ever sent for the cancelled id
    s.assert_alive()


# ---------------------------------------------------------------- stdio: server-initiated requests
def _answer_stdio_request(s: LegacyStdioPeer, method: str, answer: dict) -> dict:
    request, _ = s.until(lambda m: "id" in m and m.get("method") is not None)
    assert request["method"] == method, request
    assert isinstance(request["id"], (int, str)), request
    s.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
    return request


def test_stdio_elicitation_is_a_real_request(stdio) -> None:
    s = stdio()
    s.handshake(caps=ALL_INPUT_CAPS)
    s.send(call("t1", "ask_name"))
    request = _answer_stdio_request(s, "elicitation/create", {"action": "accept", "content": {"name": "Ada"}})
    assert request["params"]["message"] == "What is your name?"
    assert request["params"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    resp, _ = s.until(lambda m: m.get("id") == "t1")
    assert resp["result"]["structuredContent"] == {"action": "accept", "content": {"name": "Ada"}}
    s.assert_alive()


def test_stdio_sampling_is_a_real_request(stdio) -> None:
    s = stdio()
    s.handshake(caps=ALL_INPUT_CAPS)
    s.send(call("t2", "ask_model", prompt="2+2?"))
    request = _answer_stdio_request(s, "sampling/createMessage", {
        "role": "assistant", "content": {"type": "text", "text": "4"}, "model": "test-model"})
    assert request["params"]["maxTokens"] == 50
    assert request["params"]["messages"][0]["content"] == {"type": "text", "text": "2+2?"}
    resp, _ = s.until(lambda m: m.get("id") == "t2")
    assert structured(resp["result"]) == "model said: 4"
    s.assert_alive()


def test_stdio_roots_is_a_real_request(stdio) -> None:
    s = stdio()
    s.handshake(caps=ALL_INPUT_CAPS)
    s.send(call("t3", "list_client_roots"))
    _answer_stdio_request(s, "roots/list", {"roots": [{"uri": "file:///projects/a", "name": "a"}, {"uri": "file:///b"}]})
    resp, _ = s.until(lambda m: m.get("id") == "t3")
    assert structured(resp["result"]) == {"roots": ["file:///projects/a", "file:///b"]}
    s.assert_alive()


def test_stdio_client_error_answer_and_missing_capability(stdio) -> None:
    """A client that answers with an error fails the tool; a client without the capability is
    never asked (the tool fails with the missing-capability error)."""
    s = stdio()
    s.handshake(caps={"elicitation": {}})
    s.send(call("t4", "ask_name"))
    request, _ = s.until(lambda m: "id" in m and m.get("method") == "elicitation/create")
    s.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "user went away"}})
    resp, _ = s.until(lambda m: m.get("id") == "t4")
    assert "error" in resp or resp["result"].get("isError"), resp
    s.send(call("t5", "ask_model", prompt="hi"))
    resp, before = s.until(lambda m: m.get("id") == "t5")
    assert not [m for m in before if m.get("method") == "sampling/createMessage"], before
    assert "error" in resp or resp["result"].get("isError"), resp
    s.assert_alive()


# ---------------------------------------------------------------- stdio: errors and result shapes
def test_stdio_missing_resource_is_32002_legacy_and_32602_modern(stdio) -> None:
    legacy = stdio()
    legacy.handshake()
    for i, uri in enumerate(["mem://nope", "mem://items/zzz"]):
        err = legacy.ask(req(i, "resources/read", {"uri": uri}))["error"]
        assert err["code"] == -32002, err
        assert uri in err["message"]
    legacy.assert_alive()
    modern = stdio()
    for i, uri in enumerate(["mem://nope", "mem://items/zzz"]):
        err = modern.ask(req(i, "resources/read", {"uri": uri, "_meta": MODERN_META}))["error"]
        assert err["code"] == -32602, err
    modern.assert_alive_modern()


def _legacy_result_calls() -> list[dict]:
    return [
        req(10, "tools/list"),
        req(11, "resources/list"),
        req(12, "resources/templates/list"),
        req(13, "resources/read", {"uri": "notes://groceries"}),
        req(14, "resources/read", {"uri": "demo://clock"}),
        req(15, "prompts/list"),
        req(16, "prompts/get", {"name": "summarize", "arguments": {"name": "ideas"}}),
        req(17, "completion/complete", {"ref": {"type": "ref/resource", "uri": "notes://{name}"},
                                        "argument": {"name": "name", "value": "g"}}),
        call(18, "add", a=1, b=2),
        call(19, "convert_temperature", value=212, to="celsius"),
    ]


def test_stdio_legacy_results_carry_no_modern_fields(stdio) -> None:
    s = stdio(DEMO)  # the demo sets ttl_ms and cache_scope: a modern result would carry them
    init = s.handshake()
    for field in MODERN_ONLY_RESULT_FIELDS:
        assert field not in init
    for msg in _legacy_result_calls():
        resp = s.ask(msg)
        assert "result" in resp, resp  # check_legacy_message checked the fields on receipt
    assert s.ask(req(20, "completion/complete", {"ref": {"type": "ref/resource", "uri": "notes://{name}"},
                                                 "argument": {"name": "name", "value": "g"}}))[
        "result"]["completion"]["values"] == ["groceries"]
    s.assert_alive()


def test_stdio_modern_only_methods_are_not_found_on_legacy(stdio) -> None:
    s = stdio(DEMO)
    s.handshake()
    for i, method in enumerate(["server/discover", "subscriptions/listen"]):
        assert s.ask(req(i, method, {}))["error"]["code"] == -32601
    s.assert_alive()


# ============================================================================ HTTP
@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    """``python -m mcpkit serve --http examples/demo.py``."""
    with running_server(mcpkit_serve_argv(DEMO)) as url:
        yield url


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    """``python -m mcpkit serve --http tests/interop/legacy_test_server.py``."""
    with running_server(mcpkit_serve_argv(LEGACY_SERVER)) as url:
        yield url


def own_server(*args: str):
    """``legacy_test_server.py --http PORT ARGS...``: its own uvicorn.run(server.http_app(...))."""
    return lambda port: [sys.executable, str(LEGACY_SERVER), "--http", str(port), *args]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=15) as c:
        yield c


@pytest.fixture(scope="module")
def demo_app() -> Iterator[tuple[httpx.Client, str]]:
    """``examples/demo.py``'s ``http_app()`` in-process: (client, url)."""
    with asgi_client(load_module(DEMO, "mcpkit_demo_example").server.http_app(), timeout=15) as c:
        yield c, ASGI_URL


@pytest.fixture(scope="module")
def legacy_app() -> Iterator[tuple[httpx.Client, str]]:
    """``tests/interop/legacy_test_server.py``'s ``http_app()`` in-process: (client, url)."""
    with own_app() as app:
        yield app


@contextlib.contextmanager
def own_app(**options: Any) -> Iterator[tuple[httpx.Client, str]]:
    """``legacy_test_server.server.http_app(**options)`` in-process: (client, url)."""
    with asgi_client(legacy_test_server.server.http_app(**options), timeout=15) as c:
        yield c, ASGI_URL


# ---------------------------------------------------------------- HTTP: session ids
def test_http_request_without_session_id_is_400(demo_app) -> None:
    http, demo_url = demo_app
    for msg in (req(1, "ping"), req(2, "tools/list"), call(3, "add", a=1, b=2)):
        r = http.post(demo_url, json=msg, headers={**JSON_ACCEPT, "MCP-Protocol-Version": LATEST_LEGACY})
        assert r.status_code == 400, (r.status_code, r.text)
        body = r.json()
        assert body["id"] == msg["id"] and body["error"]["code"] == -32600, body
        assert "Mcp-Session-Id" in body["error"]["message"], body
    assert_endpoint_serves(demo_url, http)


def test_http_unknown_session_id_is_404(demo_app) -> None:
    http, demo_url = demo_app
    for sid in ("made-up", "A" * 32, "x"):
        r = http.post(demo_url, json=req(1, "ping"), headers={**JSON_ACCEPT, "Mcp-Session-Id": sid})
        assert r.status_code == 404, (r.status_code, r.text)
        assert r.json()["error"]["code"] == -32600
        assert http.get(demo_url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid}).status_code == 404
        assert http.delete(demo_url, headers={"Mcp-Session-Id": sid}).status_code == 404
    # initialize with an unknown session id is not a new session either.
    r = http.post(demo_url, json=init_msg(), headers={**JSON_ACCEPT, "Mcp-Session-Id": "made-up"})
    assert r.status_code == 404 and "mcp-session-id" not in r.headers, r.text
    assert_endpoint_serves(demo_url, http)


def test_http_unsupported_protocol_version_header_is_400(demo_app) -> None:
    http, demo_url = demo_app
    s = LegacyHttp(demo_url, http)
    s.initialize()
    r = s.post(req(1, "ping"), **{"MCP-Protocol-Version": "1999-01-01"})
    assert r.status_code == 400, r.text
    s.assert_alive()


def test_http_session_ids_are_visible_ascii_and_distinct(demo_app) -> None:
    http, demo_url = demo_app
    sids = set()
    for _ in range(20):
        s = LegacyHttp(demo_url, http)
        s.initialize()  # asserts the id is visible ASCII (0x21-0x7E)
        sids.add(s.sid)
        assert s.delete().status_code == 200
    assert len(sids) == 20
    assert all(len(sid) >= 16 for sid in sids), sids  # not guessable


# ---------------------------------------------------------------- HTTP: handshake
def test_http_initialize_twice(demo_app) -> None:
    http, demo_url = demo_app
    first = LegacyHttp(demo_url, http)
    first.initialize("2025-06-18")
    # With the session id: an error, and no new session.
    r = first.post(init_msg("2025-03-26", id=2))
    assert r.status_code in (200, 400), r.text
    (msg,) = messages_of(r)
    assert msg["error"]["code"] == -32600 and "initialize" in msg["error"]["message"], msg
    assert "mcp-session-id" not in r.headers
    # Without: a second, independent session.
    second = LegacyHttp(demo_url, http)
    second.initialize("2025-03-26")
    assert second.sid != first.sid
    assert (first.version, second.version) == ("2025-06-18", "2025-03-26")
    second.delete()
    first.assert_alive()  # ending the second session leaves the first one alone
    assert_endpoint_serves(demo_url, http)


@pytest.mark.parametrize("requested", ["2024-01-01", MODERN, "banana"])
def test_http_unknown_version_gets_newest_legacy(demo_app, requested: str) -> None:
    http, demo_url = demo_app
    s = LegacyHttp(demo_url, http)
    result = s.initialize(requested)
    assert result["protocolVersion"] == LATEST_LEGACY
    s.assert_alive()


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_http_supported_version_is_echoed(demo_app, version: str) -> None:
    http, demo_url = demo_app
    s = LegacyHttp(demo_url, http)
    result = s.initialize(version)
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "mcpkit-demo"
    s.assert_alive()


@pytest.mark.parametrize("breakage", ["no-params", "no-clientInfo", "version-not-string", "caps-not-object"])
def test_http_invalid_initialize_is_400_without_session(demo_app, breakage: str) -> None:
    http, demo_url = demo_app
    msg = init_msg()
    if breakage == "no-params":
        del msg["params"]
    elif breakage == "no-clientInfo":
        del msg["params"]["clientInfo"]
    elif breakage == "version-not-string":
        msg["params"]["protocolVersion"] = 20251125
    else:
        msg["params"]["capabilities"] = []
    r = http.post(demo_url, json=msg, headers=JSON_ACCEPT)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32602
    assert "mcp-session-id" not in r.headers
    assert_endpoint_serves(demo_url, http)


# ---------------------------------------------------------------- HTTP: legacy methods
def test_http_ping_set_level_and_log_messages_on_the_post_stream(legacy_app) -> None:
    http, legacy_url = legacy_app
    s = LegacyHttp(legacy_url, http)
    s.initialize()
    pong, _ = s.ask(req(1, "ping"))
    assert pong["result"] == {}
    level, _ = s.ask(req(2, "logging/setLevel", {"level": "info"}))
    assert level["result"] == {}
    resp = s.post(call(3, "log_steps", steps=3))
    assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
    msgs = messages_of(resp)
    logs = [m["params"]["data"] for m in msgs if m.get("method") == "notifications/message"]
    assert logs == ["step 1 of 3", "step 2 of 3", "step 3 of 3"], msgs
    assert structured(msgs[-1]["result"]) == "logged 3"
    # Level is per session: another session without setLevel gets no log messages.
    other = LegacyHttp(legacy_url, http)
    other.initialize()
    resp, before = other.ask(call(4, "log_steps", steps=2))
    assert before == [] and structured(resp["result"]) == "logged 2"
    other.delete()
    s.assert_alive()


def test_http_subscribe_and_list_changed_on_the_get_stream(legacy_url, http) -> None:
    s = LegacyHttp(legacy_url, http)
    s.initialize()
    stream = GetStream(legacy_url, s.headers())
    try:
        assert stream.status == 200
        sub, _ = s.ask(req(1, "resources/subscribe", {"uri": "mem://counter"}))
        assert sub["result"] == {}
        s.ask(call(2, "touch", uri="mem://counter"))
        upd = stream.next()
        assert upd == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                       "params": {"uri": "mem://counter"}}, upd
        s.ask(call(3, "add_tool", name="http_late_tool"))
        changed = stream.next()
        assert changed["method"] == "notifications/tools/list_changed", changed
        listed, _ = s.ask(req(4, "tools/list"))
        assert "http_late_tool" in {t["name"] for t in listed["result"]["tools"]}
        s.assert_alive()
    finally:
        stream.close()
        s.delete()


def test_http_progress_and_cancellation(legacy_url, demo_url, http) -> None:
    s = LegacyHttp(demo_url, http)
    s.initialize()
    resp = s.post(req("cd", "tools/call", {"name": "count_down", "arguments": {"start": 2}, "_meta": {"progressToken": 7}}))
    msgs = messages_of(resp)
    assert [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"] == [0, 1, 2]
    assert structured(msgs[-1]["result"]) == "liftoff"
    s.delete()
    # Cancelling a session request ends its POST promptly, with no response to the request.
    slow = LegacyHttp(legacy_url, http)
    slow.initialize()
    done: dict[str, Any] = {}

    def long_call() -> None:
        t0 = time.monotonic()
        with httpx.Client(timeout=30) as c:
            r = c.post(legacy_url, json=call("long", "slow", seconds=20), headers=slow.headers())
        done["status"], done["body"], done["secs"] = r.status_code, r.text, time.monotonic() - t0

    th = threading.Thread(target=long_call)
    th.start()
    time.sleep(0.5)
    ack = slow.post(note("notifications/cancelled", {"requestId": "long", "reason": "user gave up"}))
    assert ack.status_code == 202
    th.join(15)
    assert done and done["secs"] < 10, done
    assert '"result"' not in done["body"], done
    slow.assert_alive()
    slow.delete()


# ---------------------------------------------------------------- HTTP: server-initiated requests
def _tool_with_answers(s: LegacyHttp, msg: dict, answers: dict[str, dict]) -> tuple[dict, list[dict]]:
    """POST a tool call, answer each server request from its POST's SSE stream (the answer is
    POSTed back with the session id and must get 202), return (response, server requests)."""
    asked: list[dict] = []
    with httpx.Client(timeout=15) as answerer:
        with s.client.stream("POST", s.url, json=msg, headers=s.headers()) as resp:
            assert resp.status_code == 200, resp.read()
            assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
            for m in iter_sse(resp.iter_lines()):
                check_legacy_message(m)
                if m.get("id") == msg["id"]:
                    return m, asked
                if "id" in m and "method" in m:
                    asked.append(m)
                    ack = answerer.post(s.url, json={"jsonrpc": "2.0", "id": m["id"], "result": answers[m["method"]]},
                                        headers=s.headers())
                    assert ack.status_code == 202, (ack.status_code, ack.text)
    raise AssertionError(f"the stream ended without the response; asked: {asked}")


ANSWERS = {
    "elicitation/create": {"action": "accept", "content": {"name": "Grace"}},
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
    "roots/list": {"roots": [{"uri": "file:///projects/x"}]},
}


@pytest.mark.parametrize("tool, args, method, expected", [
    ("ask_name", {}, "elicitation/create", {"action": "accept", "content": {"name": "Grace"}}),
    ("ask_model", {"prompt": "hi"}, "sampling/createMessage", "model said: hello"),
    ("list_client_roots", {}, "roots/list", {"roots": ["file:///projects/x"]}),
])
def test_http_server_request_on_the_post_stream(legacy_url, http, tool, args, method, expected) -> None:
    s = LegacyHttp(legacy_url, http)
    s.initialize(caps=ALL_INPUT_CAPS)
    resp, asked = _tool_with_answers(s, call("q", tool, **args), ANSWERS)
    assert [a["method"] for a in asked] == [method], asked
    assert structured(resp["result"]) == expected, resp
    s.assert_alive()
    s.delete()


def test_http_three_server_requests_in_one_call(legacy_url, http) -> None:
    s = LegacyHttp(legacy_url, http)
    s.initialize(caps=ALL_INPUT_CAPS)
    resp, asked = _tool_with_answers(s, call("all", "ask_all"), ANSWERS)
    assert [a["method"] for a in asked] == ["elicitation/create", "sampling/createMessage", "roots/list"]
    assert len({a["id"] for a in asked}) == 3
    assert resp["result"]["structuredContent"] == {"name": "Grace", "sample": "hello", "roots": ["file:///projects/x"]}
    s.assert_alive()
    s.delete()


def test_http_answer_to_an_unknown_request_is_harmless(legacy_app) -> None:
    http, legacy_url = legacy_app
    s = LegacyHttp(legacy_url, http)
    s.initialize()
    r = s.post({"jsonrpc": "2.0", "id": 999_999, "result": {"action": "accept"}})
    assert r.status_code == 202, r.text
    s.assert_alive()
    s.delete()


def test_http_answer_from_another_session_is_not_taken(legacy_url, http) -> None:
    """A server request belongs to its session: the same id answered under another session's id
    is ignored, and the right session's answer completes the tool."""
    s = LegacyHttp(legacy_url, http)
    s.initialize(caps=ALL_INPUT_CAPS)
    intruder = LegacyHttp(legacy_url, http)
    intruder.initialize(caps=ALL_INPUT_CAPS)
    with httpx.Client(timeout=15) as answerer, s.client.stream("POST", s.url, json=call("x", "ask_name"),
                                                                headers=s.headers()) as resp:
        for m in iter_sse(resp.iter_lines()):
            if m.get("method") == "elicitation/create":
                wrong = {"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept", "content": {"name": "Mallory"}}}
                assert answerer.post(s.url, json=wrong, headers=intruder.headers()).status_code == 202
                right = {"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept", "content": {"name": "Alice"}}}
                assert answerer.post(s.url, json=right, headers=s.headers()).status_code == 202
            elif m.get("id") == "x":
                assert m["result"]["structuredContent"]["content"] == {"name": "Alice"}, m
                break
        else:
            raise AssertionError("no response")
    intruder.assert_alive()
    s.assert_alive()
    intruder.delete()
    s.delete()


# ---------------------------------------------------------------- HTTP: errors and result shapes
def test_http_missing_resource_is_32002_legacy_and_32602_modern(legacy_app) -> None:
    http, legacy_url = legacy_app
    s = LegacyHttp(legacy_url, http)
    s.initialize()
    for i, uri in enumerate(["mem://nope", "mem://items/zzz"]):
        resp, _ = s.ask(req(i, "resources/read", {"uri": uri}))
        assert resp["error"]["code"] == -32002, resp
    for i, uri in enumerate(["mem://nope", "mem://items/zzz"]):
        msg = req(i, "resources/read", {"uri": uri, "_meta": MODERN_META})
        r = http.post(legacy_url, json=msg, headers={**JSON_ACCEPT, "MCP-Protocol-Version": MODERN,
                                                    "Mcp-Method": "resources/read", "Mcp-Name": uri})
        assert r.json()["error"]["code"] == -32602, r.text
    s.assert_alive()
    s.delete()


def test_http_legacy_results_carry_no_modern_fields(demo_app) -> None:
    http, demo_url = demo_app
    s = LegacyHttp(demo_url, http)
    init = s.initialize()
    for field in MODERN_ONLY_RESULT_FIELDS:
        assert field not in init
    for msg in _legacy_result_calls():
        resp, _ = s.ask(msg)  # every message is checked by messages_of
        assert "result" in resp, resp
    s.assert_alive()
    s.delete()


# ---------------------------------------------------------------- HTTP: session hygiene
def test_http_delete_ends_the_session(legacy_url, http) -> None:
    s = LegacyHttp(legacy_url, http)
    s.initialize()
    stream = GetStream(legacy_url, s.headers())
    try:
        r = s.delete()
        assert r.status_code == 200, r.text
        assert stream.ended.wait(10), "DELETE left the session's GET stream open"
    finally:
        stream.close()
    r = s.post(req(1, "ping"))
    assert r.status_code == 404, r.text
    assert s.delete().status_code == 404
    assert http.get(legacy_url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": s.sid}).status_code == 404
    assert_endpoint_serves(legacy_url)


def test_http_session_cap_then_503() -> None:
    with own_app(max_sessions=3) as (http, url):
        sessions = []
        for _ in range(3):
            s = LegacyHttp(url, http)
            s.initialize()
            sessions.append(s)
        r = http.post(url, json=init_msg(), headers=JSON_ACCEPT)
        assert r.status_code == 503, (r.status_code, r.text)
        assert "mcp-session-id" not in r.headers
        assert "error" in r.json(), r.text
        for s in sessions:
            s.assert_alive()  # the open sessions are untouched
        # Stateless requests are not capped.
        r = http.post(url, json=call("m", "add", a=1, b=1) | {"params": {"name": "add", "arguments": {"a": 1, "b": 1},
                                                                          "_meta": MODERN_META}},
                      headers={**JSON_ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                               "Mcp-Name": "add"})
        assert r.status_code == 200 and r.json()["result"]["structuredContent"] == {"result": 2}, r.text
        # Ending one frees a slot.
        assert sessions[0].delete().status_code == 200
        again = LegacyHttp(url, http)
        again.initialize()
        again.assert_alive()


def test_http_idle_session_expires_to_404() -> None:
    with own_app(session_idle_timeout=1) as (http, url):
        s = LegacyHttp(url, http)
        s.initialize()
        kept = LegacyHttp(url, http)
        kept.initialize()
        for _ in range(4):  # activity keeps a session alive
            time.sleep(0.4)
            kept.assert_alive()
        r = s.post(req(1, "ping"))
        assert r.status_code == 404, (r.status_code, r.text)
        assert "expired" in r.json()["error"]["message"]
        time.sleep(1.3)
        assert kept.post(req(2, "ping")).status_code == 404
        assert_endpoint_serves(url, http)


def test_http_expired_sessions_are_swept_at_the_cap() -> None:
    """Idle sessions do not block new ones forever: at the cap, expired ones are swept."""
    with own_app(max_sessions=2, session_idle_timeout=1) as (http, url):
        for _ in range(2):
            LegacyHttp(url, http).initialize()
        assert http.post(url, json=init_msg(), headers=JSON_ACCEPT).status_code == 503
        time.sleep(1.3)
        s = LegacyHttp(url, http)
        s.initialize()
        s.assert_alive()


def test_http_open_get_stream_keeps_the_session_and_expiry_follows_its_close(http) -> None:
    # A client listening on its GET stream is alive: the session does not expire under it.
    # Once the stream is gone, idle expiry applies as usual.
    with running_server(own_server("--idle", "1", "--keepalive", "0.3")) as url:
        s = LegacyHttp(url, http)
        s.initialize()
        stream = GetStream(url, s.headers())
        try:
            time.sleep(1.5)
            assert s.post(req(1, "ping")).status_code == 200
        finally:
            stream.close()
        time.sleep(1.5)
        assert s.post(req(2, "ping")).status_code == 404


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc for the server's RSS")
def test_http_flood_of_rejected_initializes_keeps_memory_flat(http) -> None:
    """5,000 invalid initializes (and 2,000 over the cap), loopback only: no session, no growth."""
    with running_server(own_server("--max-sessions", "2")) as url:
        probe = LegacyHttp(url, http)
        probe.initialize()
        pid_msg, _ = probe.ask(call("pid", "pid"))
        pid = structured(pid_msg["result"])
        bad_bodies = []
        for i in range(5):
            m = init_msg(id=i)
            if i == 0:
                del m["params"]["clientInfo"]
            elif i == 1:
                m["params"]["capabilities"] = "all"
            elif i == 2:
                m["params"]["protocolVersion"] = None
            elif i == 3:
                m["params"] = ["initialize"]
            else:
                m["params"]["clientInfo"] = {"name": 1}
            bad_bodies.append(json.dumps(m).encode())

        def flood(n: int) -> None:
            with httpx.Client(timeout=15) as c:
                for i in range(n):
                    r = c.post(url, content=bad_bodies[i % len(bad_bodies)], headers=JSON_ACCEPT)
                    assert r.status_code == 400 and "mcp-session-id" not in r.headers, (r.status_code, r.text)

        flood(500)  # warm up allocator and caches
        before = _rss_kib(pid)
        deadline = time.monotonic() + 120
        flood(5000)
        assert time.monotonic() < deadline
        count, _ = probe.ask(call("count", "session_count"))
        assert structured(count["result"]) == 1  # only the probe's session exists
        # Valid initializes over the cap are refused just as cheaply.
        second = LegacyHttp(url, http)
        second.initialize()
        with httpx.Client(timeout=15) as c:
            body = json.dumps(init_msg()).encode()
            for _ in range(2000):
                assert c.post(url, content=body, headers=JSON_ACCEPT).status_code == 503
        after = _rss_kib(pid)
        count, _ = probe.ask(call("count", "session_count"))
        assert structured(count["result"]) == 2
        growth_mib = (after - before) / 1024
        assert growth_mib < 4, f"server RSS grew by {growth_mib:.1f} MiB ({before} -> {after} KiB)"
        for sid in ("made-up", probe.sid + "x"):
            assert http.post(url, json=req(1, "ping"), headers={**JSON_ACCEPT, "Mcp-Session-Id": sid}).status_code == 404
        probe.assert_alive()
        second.assert_alive()


def test_http_sigterm_with_open_legacy_streams_exits_promptly() -> None:
    """``mcpkit serve --http``: a legacy GET stream and a POST waiting for the client's answer do
    not hold up shutdown."""
    srv = ServerProcess(mcpkit_serve_argv(LEGACY_SERVER))
    proc, url = srv.proc, srv.url
    try:
        assert srv.wait_ready(), f"the server did not start:\n{srv.output()}"
        s = LegacyHttp(url)
        s.initialize(caps=ALL_INPUT_CAPS)
        stream = GetStream(url, s.headers())
        held = threading.Thread(target=lambda: _swallow(lambda: httpx.post(
            url, json=call("held", "ask_name"), headers=s.headers(), timeout=30)), daemon=True)
        held.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        assert time.monotonic() - t0 < 5
        assert stream.ended.wait(5), "the GET stream was not ended by shutdown"
        stream.close()
    finally:
        srv.stop()


def _swallow(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except httpx.HTTPError:
        pass


# ---------------------------------------------------------------- HTTP: both eras on one endpoint
def test_http_modern_requests_work_concurrently_with_a_legacy_session(legacy_url) -> None:
    """While a legacy session has its GET stream open and a server request pending on a POST
    stream, stateless 2026-07-28 requests on the same endpoint keep being answered."""
    import concurrent.futures

    with httpx.Client(timeout=15) as c:
        s = LegacyHttp(legacy_url, c)
        s.initialize(caps=ALL_INPUT_CAPS)
        stream = GetStream(legacy_url, s.headers())
        pending: queue.Queue[dict] = queue.Queue()
        release = threading.Event()

        def legacy_call() -> dict:
            with httpx.Client(timeout=30) as lc, lc.stream("POST", legacy_url, json=call("held", "ask_name"),
                                                          headers=s.headers()) as resp:
                for m in iter_sse(resp.iter_lines()):
                    if m.get("id") == "held":
                        return m
                    pending.put(m)
                    release.wait(20)
                    lc2 = httpx.post(legacy_url, json={"jsonrpc": "2.0", "id": m["id"], "result": ANSWERS[m["method"]]},
                                     headers=s.headers(), timeout=15)
                    assert lc2.status_code == 202
            raise AssertionError("no response")

        try:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                fut = pool.submit(legacy_call)
                asked = pending.get(timeout=10)
                assert asked["method"] == "elicitation/create"

                def modern(i: int) -> Any:
                    msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": "add", "arguments": {"a": i, "b": 1}, "_meta": MODERN_META}}
                    r = c.post(legacy_url, json=msg, headers={**JSON_ACCEPT, "MCP-Protocol-Version": MODERN,
                                                              "Mcp-Method": "tools/call", "Mcp-Name": "add"})
                    assert r.status_code == 200, r.text
                    body = r.json()
                    assert body["result"]["resultType"] == "complete", body
                    assert "mcp-session-id" not in r.headers
                    return body["result"]["structuredContent"]["result"]

                assert [modern(i) for i in range(10)] == [i + 1 for i in range(10)]
                # A legacy request on the same session is not blocked by the pending one either.
                s.assert_alive()
                release.set()
                held = fut.result(timeout=20)
            assert held["result"]["structuredContent"] == {"action": "accept", "content": {"name": "Grace"}}
            # And a modern request cannot use the legacy session's id to become legacy.
            msg = {"jsonrpc": "2.0", "id": "mx", "method": "tools/list", "params": {"_meta": MODERN_META}}
            r = c.post(legacy_url, json=msg, headers={**s.headers(), "MCP-Protocol-Version": MODERN,
                                                      "Mcp-Method": "tools/list"})
            assert r.status_code == 200 and r.json()["result"]["resultType"] == "complete", r.text
        finally:
            release.set()
            stream.close()
            s.delete()


@pytest.mark.parametrize("bad", [1.5, [1], True, "x"])
def test_non_object_meta_in_a_session_is_invalid_params(bad: Any) -> None:
    """A legacy request whose _meta is not an object gets -32602, and the session goes on."""
    peer = LegacyStdioPeer([sys.executable, str(DEMO)])
    try:
        peer.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}})
        assert "result" in peer.recv_response()
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # (raw: the harness's own send reads _meta as an object)
        peer.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": bad}}).encode() + b"\n")
        reply = peer.recv_response()
        assert reply["id"] == 1 and reply["error"]["code"] == -32602, reply
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert peer.recv_response()["result"]["tools"]
    finally:
        peer.close()
