"""The era and session routing of both transports, as pure functions and a state machine.

``mcpkit.protocol.routing`` does no I/O, so almost everything here runs without a process,
a socket or an event loop. The last section runs tiny scripts to check that
``Server.run()`` returns (and ``fast_exit=True`` does not).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from mcpkit.protocol import codec, routing
from mcpkit.protocol.routing import (
    ACCEPT,
    ANSWER_PING,
    IGNORE,
    IGNORE_RESPONSE,
    OPEN_LEGACY,
    OPEN_SESSION,
    SERVE_MODERN,
    AnswerLegacy,
    CancelRequest,
    EndSession,
    NotifyLegacy,
    Refuse,
    RefuseHttp,
    RoutingError,
    ServeLegacy,
    SessionStream,
    StdioRouter,
    StdioState,
    ToSession,
)

ROOT = Path(__file__).resolve().parent.parent
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}


def wire(obj: dict[str, Any]) -> codec.Message:
    """Decode as a transport does (params stay raw)."""
    return codec.decode(json.dumps({"jsonrpc": "2.0", **obj}).encode())


def req(method: str, params: dict[str, Any] | None = None, id: Any = 1) -> codec.Request:
    msg = wire({"id": id, "method": method, **({"params": params} if params is not None else {})})
    assert type(msg) is codec.Request
    return msg


def modern(method: str, id: Any = 1, **params: Any) -> codec.Request:
    return req(method, {**params, "_meta": META}, id)


def note(method: str, params: dict[str, Any] | None = None) -> codec.Notification:
    msg = wire({"method": method, **({"params": params} if params is not None else {})})
    assert type(msg) is codec.Notification
    return msg


def resp(id: Any = 1) -> codec.Response:
    msg = wire({"id": id, "result": {}})
    assert type(msg) is codec.Response
    return msg


class Peer:
    """Stands in for a legacy session: the router never looks inside it."""


def legacy_router() -> tuple[StdioRouter[Peer], Peer]:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(req("initialize", INIT_PARAMS)) is OPEN_LEGACY
    peer = Peer()
    assert router.bind_legacy(peer) == ServeLegacy(peer)
    return router, peer


# ====================================================================== stdio: deciding the era
def test_a_request_with_meta_makes_the_stream_modern() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.state is StdioState.AWAITING
    assert router.receive(modern("server/discover")) is SERVE_MODERN
    assert router.state is StdioState.MODERN
    # From now on: no second look at params, even for a request without _meta.
    assert router.receive(req("tools/list", id=2)) is SERVE_MODERN
    assert router.state is StdioState.MODERN


def test_initialize_on_a_modern_stream_is_refused_by_name() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    router.receive(modern("tools/list"))
    action = router.receive(req("initialize", INIT_PARAMS, id=2))
    assert isinstance(action, Refuse)
    assert action.error.code == -32600
    assert "initialize" in action.error.message and MODERN in action.error.message
    assert router.state is StdioState.MODERN
    # An initialize that carries _meta is a modern request (the ladder says method not found).
    assert router.receive(req("initialize", {**INIT_PARAMS, "_meta": META}, id=3)) is SERVE_MODERN


def test_a_valid_initialize_opens_the_legacy_session() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(req("initialize", INIT_PARAMS)) is OPEN_LEGACY
    assert router.state is StdioState.LEGACY_INITIALIZING
    assert router.legacy_version == "2025-06-18"
    peer = Peer()
    serve = router.bind_legacy(peer)
    assert isinstance(serve, ServeLegacy) and serve.peer is peer


@pytest.mark.parametrize("requested, negotiated", [("2025-11-25", "2025-11-25"), ("2024-11-05", "2024-11-05"),
                                                   (MODERN, "2025-11-25"), ("banana", "2025-11-25")])
def test_the_legacy_version_is_negotiated_like_the_session_does(requested: str, negotiated: str) -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    router.receive(req("initialize", {**INIT_PARAMS, "protocolVersion": requested}))
    assert router.legacy_version == negotiated


def test_legacy_messages_go_to_the_session_without_allocating() -> None:
    router, peer = legacy_router()
    first = router.receive(req("tools/list", {}, id=2))
    assert first == ServeLegacy(peer)
    assert router.receive(req("tools/call", {"name": "x"}, id=3)) is first  # one action object per session
    assert router.receive(req("ping", id=4)) is first  # the session answers its own pings
    assert router.receive(note("notifications/cancelled", {"requestId": 2})) == NotifyLegacy(peer)
    assert router.receive(resp(7)) == AnswerLegacy(peer)


def test_notifications_initialized_makes_the_session_ready() -> None:
    router, peer = legacy_router()
    assert router.receive(note("notifications/roots/list_changed")) == NotifyLegacy(peer)
    assert router.state is StdioState.LEGACY_INITIALIZING
    assert router.receive(note("notifications/initialized")) == NotifyLegacy(peer)
    assert router.state is StdioState.LEGACY_READY
    assert router.receive(req("tools/list", {}, id=2)) == ServeLegacy(peer)


def test_a_modern_request_on_a_legacy_stream_is_refused_with_the_version() -> None:
    router, _ = legacy_router()
    action = router.receive(modern("tools/list", id=2))
    assert isinstance(action, Refuse)
    assert action.error.code == -32600
    assert "2025-06-18" in action.error.message and MODERN in action.error.message
    assert router.state is StdioState.LEGACY_INITIALIZING


def test_ping_before_initialize_is_answered_and_decides_nothing() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(req("ping")) is ANSWER_PING
    assert router.state is StdioState.AWAITING
    assert router.receive(req("initialize", INIT_PARAMS, id=2)) is OPEN_LEGACY


@pytest.mark.parametrize("breakage", ["protocolVersion", "capabilities", "clientInfo"])
def test_a_broken_initialize_is_refused_and_decides_nothing(breakage: str) -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    params = {k: v for k, v in INIT_PARAMS.items() if k != breakage}
    action = router.receive(req("initialize", params))
    assert isinstance(action, Refuse) and action.error.code == -32602
    assert router.state is StdioState.AWAITING
    assert router.legacy_version is None
    assert router.receive(req("initialize", INIT_PARAMS, id=2)) is OPEN_LEGACY


def test_initialize_without_params_is_refused() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    action = router.receive(req("initialize"))
    assert isinstance(action, Refuse) and action.error.code == -32602
    assert router.state is StdioState.AWAITING


def test_an_undecided_request_goes_to_the_modern_ladder_and_decides_nothing() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(req("tools/list")) is SERVE_MODERN  # it names the missing _meta
    assert router.state is StdioState.AWAITING
    assert router.receive(req("initialize", INIT_PARAMS, id=2)) is OPEN_LEGACY


def test_a_modern_only_server_never_opens_a_session() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=False)
    assert router.receive(req("ping")) is SERVE_MODERN
    assert router.receive(req("initialize", INIT_PARAMS, id=2)) is SERVE_MODERN  # the ladder names our versions
    assert router.state is StdioState.AWAITING
    assert router.receive(modern("tools/list", id=3)) is SERVE_MODERN
    assert router.state is StdioState.MODERN


# ====================================================================== stdio: notifications and responses
@pytest.mark.parametrize("rid", [5, "abc", 0, ""])
def test_stateless_cancellation_names_the_request(rid: Any) -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(note("notifications/cancelled", {"requestId": rid, "reason": "x"})) == CancelRequest(rid)
    router.receive(modern("tools/list"))
    assert router.receive(note("notifications/cancelled", {"requestId": rid})) == CancelRequest(rid)


@pytest.mark.parametrize("params", [None, {}, {"requestId": True}, {"requestId": 1.5}, {"requestId": None},
                                    {"requestId": [1]}, {"reason": "no id"}])
def test_malformed_cancellation_is_ignored(params: dict[str, Any] | None) -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(note("notifications/cancelled", params)) is IGNORE


def test_other_notifications_and_responses_are_ignored_without_a_session() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(note("notifications/initialized")) is IGNORE
    assert router.state is StdioState.AWAITING  # initialized without initialize decides nothing
    assert router.receive(resp()) is IGNORE_RESPONSE
    assert "response" in IGNORE_RESPONSE.warning
    router.receive(modern("tools/list"))
    assert router.receive(note("notifications/progress", {"progressToken": 1, "progress": 1})) is IGNORE
    assert router.receive(resp(2)) is IGNORE_RESPONSE


def test_typed_receivers_agree_with_receive() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive_request(modern("tools/list")) is SERVE_MODERN
    assert router.receive_notification(note("notifications/cancelled", {"requestId": 1})) == CancelRequest(1)
    assert router.receive_response(resp()) is IGNORE_RESPONSE


def test_cancelled_request_id_reads_raw_and_parsed_params() -> None:
    raw = note("notifications/cancelled", {"requestId": "r1"}).params
    assert routing.cancelled_request_id(raw) == "r1"
    assert routing.cancelled_request_id({"requestId": 3}) == 3
    assert routing.cancelled_request_id({"requestId": False}) is None
    assert routing.cancelled_request_id(None) is None


# ====================================================================== stdio: closing and the error state
def test_close_hands_back_the_session_once() -> None:
    router, peer = legacy_router()
    assert router.close() is peer
    assert router.state is StdioState.CLOSED
    assert router.close() is None
    modern_router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert modern_router.close() is None


@pytest.mark.parametrize("msg", [modern("tools/list"), note("notifications/initialized"), resp()])
def test_a_message_after_close_is_an_error_and_the_error_sticks(msg: codec.Message) -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    router.receive(modern("tools/list"))
    router.close()
    with pytest.raises(RoutingError):
        router.receive(msg)
    assert router.state is StdioState.ERROR
    for again in (modern("tools/list", id=9), note("notifications/cancelled", {"requestId": 1}), resp()):
        with pytest.raises(RoutingError):
            router.receive(again)
    router.close()
    assert router.state is StdioState.ERROR  # close() does not clear it either


def test_a_legacy_message_before_bind_legacy_is_an_error() -> None:
    router: StdioRouter[Peer] = StdioRouter(legacy=True)
    assert router.receive(req("initialize", INIT_PARAMS)) is OPEN_LEGACY
    with pytest.raises(RoutingError):
        router.receive(req("tools/list", {}, id=2))
    assert router.state is StdioState.ERROR
    with pytest.raises(RoutingError):
        router.bind_legacy(Peer())
    with pytest.raises(RoutingError):
        router.receive(req("tools/list", {}, id=3))


@pytest.mark.parametrize("setup", ["fresh", "modern", "bound"])
def test_bind_legacy_only_right_after_open_legacy(setup: str) -> None:
    if setup == "bound":
        router, _ = legacy_router()
    else:
        router = StdioRouter(legacy=True)
        if setup == "modern":
            router.receive(modern("tools/list"))
    with pytest.raises(RoutingError):
        router.bind_legacy(Peer())
    assert router.state is StdioState.ERROR


def test_actions_compare_by_value_and_show_their_fields() -> None:
    peer = Peer()
    assert ServeLegacy(peer) == ServeLegacy(peer) and ServeLegacy(peer) != NotifyLegacy(peer)
    assert CancelRequest(1) == CancelRequest(1) != CancelRequest("1")
    assert hash(CancelRequest("a")) == hash(CancelRequest("a"))
    assert repr(CancelRequest(7)) == "CancelRequest(request_id=7)"
    assert repr(SERVE_MODERN) == "ServeModern()"


# ====================================================================== HTTP: routing one POST
def H(**headers: str) -> dict[str, str]:
    return {k.replace("_", "-"): v for k, v in headers.items()}


@pytest.mark.parametrize("legacy", [True, False])
def test_a_modern_request_is_served_statelessly(legacy: bool) -> None:
    assert routing.route_request(modern("tools/call", name="x"), H(mcp_protocol_version=MODERN), legacy) is SERVE_MODERN
    assert routing.route_request(modern("tools/call", name="x"), H(), legacy) is SERVE_MODERN  # the body decides


def test_a_modern_version_header_outranks_a_session_shaped_body() -> None:
    # Never legacy: the modern ladder answers (and names the missing _meta).
    hdrs = H(mcp_protocol_version=f" {MODERN} ", mcp_session_id="s1")
    assert routing.route_request(req("tools/list", {}), hdrs, True) is SERVE_MODERN
    assert routing.route_notification(note("notifications/initialized"), hdrs, True) is ACCEPT
    refused = routing.route_response(resp(), hdrs, True)
    assert isinstance(refused, RefuseHttp) and refused.status == 400


def test_a_modern_only_server_routes_nothing_to_sessions() -> None:
    hdrs = H(mcp_session_id="s1")
    assert routing.route_request(req("initialize", INIT_PARAMS), H(), False) is SERVE_MODERN
    assert routing.route_request(req("tools/list", {}), hdrs, False) is SERVE_MODERN
    assert routing.route_notification(note("notifications/initialized"), hdrs, False) is ACCEPT
    assert isinstance(routing.route_response(resp(), hdrs, False), RefuseHttp)
    refused = routing.route_method("GET", hdrs, False)
    assert isinstance(refused, RefuseHttp) and refused.status == 405


def test_initialize_without_a_session_opens_one() -> None:
    assert routing.route_request(req("initialize", INIT_PARAMS), H(), True) is OPEN_SESSION
    assert routing.route_request(req("initialize", INIT_PARAMS), H(mcp_protocol_version="2025-06-18"), True) is OPEN_SESSION


def test_a_broken_initialize_is_refused_before_any_session_exists() -> None:
    route = routing.route_request(req("initialize", {"protocolVersion": 1}, id="i"), H(), True)
    assert isinstance(route, RefuseHttp)
    assert (route.status, route.error.code, route.request_id) == (400, -32602, "i")


def test_initialize_inside_a_session_goes_to_the_session() -> None:
    # ... which answers that it is initialized already.
    assert routing.route_request(req("initialize", INIT_PARAMS), H(mcp_session_id="s1"), True) == ToSession("s1")


def test_a_session_request_without_a_session_id_is_400() -> None:
    route = routing.route_request(req("tools/list", {}, id=4), H(), True)
    assert isinstance(route, RefuseHttp)
    assert (route.status, route.error.code, route.request_id) == (400, -32600, 4)
    assert "Mcp-Session-Id" in route.error.message


def test_session_messages_carry_the_stripped_session_id() -> None:
    hdrs = H(mcp_session_id=" s1 ", mcp_protocol_version="2025-11-25")
    assert routing.route_request(req("tools/list", {}), hdrs, True) == ToSession("s1")
    assert routing.route_notification(note("notifications/cancelled", {"requestId": 1}), hdrs, True) == ToSession("s1")
    assert routing.route_response(resp(), hdrs, True) == ToSession("s1")


def test_an_unknown_version_header_on_the_session_wire_is_400() -> None:
    hdrs = H(mcp_session_id="s1", mcp_protocol_version="banana")
    routes = [(routing.route_request(req("tools/list", {}, id=5), hdrs, True), 5),
              (routing.route_notification(note("notifications/initialized"), hdrs, True), None),
              (routing.route_response(resp(6), hdrs, True), 6)]
    for route, rid in routes:
        assert isinstance(route, RefuseHttp), route
        assert (route.status, route.error.code, route.request_id) == (400, -32600, rid)
        assert "banana" in route.error.message
    # Without a session id, the same header still refuses an initialize.
    assert isinstance(routing.route_request(req("initialize", INIT_PARAMS), H(mcp_protocol_version="banana"), True),
                      RefuseHttp)


def test_notifications_without_a_session_are_accepted_and_dropped() -> None:
    assert routing.route_notification(note("notifications/cancelled", {"requestId": 1}), H(), True) is ACCEPT
    assert routing.route_notification(note("notifications/initialized"), H(mcp_protocol_version=MODERN), True) is ACCEPT


def test_a_response_without_a_session_is_400() -> None:
    route = routing.route_response(resp(3), H(), True)
    assert isinstance(route, RefuseHttp)
    assert (route.status, route.error.code, route.request_id) == (400, -32600, None)
    assert "responses" in route.error.message


@pytest.mark.parametrize("method, expected", [("GET", SessionStream("s1")), ("DELETE", EndSession("s1"))])
def test_get_and_delete_with_a_session(method: str, expected: Any) -> None:
    assert routing.route_method(method, H(mcp_session_id=" s1"), True) == expected


@pytest.mark.parametrize("method, hdrs", [("GET", {}), ("DELETE", {}), ("PUT", {"mcp-session-id": "s1"}),
                                          ("PATCH", {})])
def test_anything_else_is_405_allowing_post(method: str, hdrs: dict[str, str]) -> None:
    route = routing.route_method(method, hdrs, True)
    assert isinstance(route, RefuseHttp)
    assert (route.status, route.allow, route.error.code) == (405, "POST", -32600)
    assert method in route.error.message


# ====================================================================== purity and layering
def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def test_routing_is_pure() -> None:
    allowed_stdlib = {"__future__", "enum", "collections.abc", "typing"}
    for name in _imports(ROOT / "mcpkit" / "protocol" / "routing.py"):
        assert name in allowed_stdlib or name.startswith("."), name


def test_transports_never_import_the_server() -> None:
    for path in sorted((ROOT / "mcpkit" / "transports").glob("*.py")):
        for name in _imports(path):
            assert "server" not in name.split("."), f"{path.name} imports {name}"


def test_the_stdio_opening_does_not_import_asyncio() -> None:
    code = "import sys, mcpkit.transports._stdio_main; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "False", out


# ====================================================================== Server.run() returns
SCRIPT = textwrap.dedent("""
    import atexit, sys, time
    from mcpkit import Server

    server = Server("after", "1.0.0")

    @server.tool()
    def hello() -> str:
        return "hi"

    marker = sys.argv[1]
    atexit.register(lambda: open(marker + ".atexit", "w").write("atexit"))
    server.run({kwargs})
    print("printed after run")  # fd 1 still points at stderr: the client never sees this
    open(marker, "w").write("after run")
    time.sleep({linger})
""")


def _run_script(tmp_path: Path, lines: list[dict[str, Any]], kwargs: str = "",
                linger: float = 0.0) -> tuple[subprocess.Popen[bytes], list[bytes], float | None]:
    script = tmp_path / "server.py"
    script.write_text(SCRIPT.format(kwargs=kwargs, linger=linger))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "marker")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in lines))
    proc.stdin.close()
    out = proc.stdout.read().splitlines()  # until EOF on the MCP stream
    alive_at_eof = time.monotonic() if proc.poll() is None else None
    proc.wait(timeout=30)
    return proc, out, alive_at_eof


DISCOVER = {"id": 1, "method": "server/discover", "params": {"_meta": META}}
CALL = {"id": 2, "method": "tools/call", "params": {"name": "hello", "arguments": {}, "_meta": META}}


@pytest.mark.parametrize("lines", [[DISCOVER], [DISCOVER, CALL]], ids=["opening-only", "event-loop"])
def test_code_after_server_run_runs(tmp_path: Path, lines: list[dict[str, Any]]) -> None:
    proc, out, _ = _run_script(tmp_path, lines)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else None
    assert [json.loads(x)["id"] for x in out] == [m["id"] for m in lines]
    assert (tmp_path / "marker").read_text() == "after run"
    assert (tmp_path / "marker.atexit").read_text() == "atexit"
    assert proc.stderr is not None and b"printed after run" in proc.stderr.read()


def test_the_mcp_stream_closes_when_run_returns(tmp_path: Path) -> None:
    # The client sees EOF as soon as the server is done, even while the script lingers.
    proc, out, alive_at_eof = _run_script(tmp_path, [DISCOVER, CALL], linger=3.0)
    assert alive_at_eof is not None, "stdout reached EOF only when the process ended"
    assert len(out) == 2 and proc.returncode == 0


def test_fast_exit_skips_what_follows_but_runs_atexit(tmp_path: Path) -> None:
    for lines in ([DISCOVER], [DISCOVER, CALL]):
        proc, out, _ = _run_script(tmp_path, lines, kwargs="fast_exit=True")
        assert proc.returncode == 0
        assert len(out) == len(lines)
        assert not (tmp_path / "marker").exists()
        assert (tmp_path / "marker.atexit").read_text() == "atexit"
        (tmp_path / "marker.atexit").unlink()
