"""The stdio server, byte for byte over a real subprocess pipe.

The must-have table: each malformed input gets exactly the right answer, and the next
valid request is still answered. Every line the server writes is checked against the
2026-07-28 wire types by the ``StdioPeer`` helper (tests/helpers/wire.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.helpers.messages import META, VERSION, line, params, request
from tests.helpers.paths import TEST_SERVER, subprocess_env


# ====================================================================== the must-have table
def test_truncated_json_line_is_parse_error_without_id(demo):
    demo.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"server/dis\n')
    reply = demo.recv()
    assert reply["error"]["code"] == -32700
    assert "id" not in reply  # not even "id": null
    demo.assert_alive()


def test_empty_array_is_invalid_request(demo):
    demo.send(b"[]")
    reply = demo.recv()
    assert reply["error"]["code"] == -32600
    assert "id" not in reply
    demo.assert_alive()


def test_batch_of_requests_is_refused_not_executed(demo):
    demo.send(line([request(1, "server/discover"), request(2, "tools/list")]))
    reply = demo.recv()
    assert reply["error"]["code"] == -32600
    assert "id" not in reply
    demo.assert_silent()
    demo.assert_alive()


def test_request_without_params_meta_is_invalid_params(demo):
    reply = demo.ask({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})
    assert reply["error"]["code"] == -32602
    demo.assert_alive()


def test_request_without_params_at_all_is_invalid_params(demo):
    reply = demo.ask(request(7, "server/discover", None))
    assert reply["error"]["code"] == -32602
    demo.assert_alive()


def test_meta_without_client_capabilities_is_invalid_params(demo):
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION}
    reply = demo.ask(request(8, "server/discover", {"_meta": meta}))
    assert reply["error"]["code"] == -32602
    assert "clientCapabilities" in reply["error"]["message"]
    demo.assert_alive()


def test_meta_without_protocol_version_is_invalid_params(demo):
    meta = {"io.modelcontextprotocol/clientCapabilities": {}}
    reply = demo.ask(request(8, "server/discover", {"_meta": meta}))
    assert reply["error"]["code"] == -32602
    assert "protocolVersion" in reply["error"]["message"]
    demo.assert_alive()


def test_unsupported_protocol_version(demo):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}
    reply = demo.ask(request(9, "server/discover", {"_meta": meta}))
    err = reply["error"]
    assert err["code"] == -32022
    assert VERSION in err["data"]["supported"]
    assert err["data"]["requested"] == "1900-01-01"
    demo.assert_alive()


def test_unknown_method(demo):
    reply = demo.ask(request(10, "tools/frobnicate"))
    assert reply["error"]["code"] == -32601
    demo.assert_alive()


def test_unknown_tool(demo):
    reply = demo.ask(request(11, "tools/call", name="no_such_tool", arguments={}))
    assert reply["error"]["code"] == -32602
    assert "no_such_tool" in reply["error"]["message"]
    demo.assert_alive()


@pytest.mark.parametrize("arguments", [
    {"a": "one", "b": 2},      # a string for an int
    {"a": 1.5, "b": 2},        # a float for an int
    {"a": True, "b": 2},       # a bool for an int
    {"a": 1},                  # a required argument missing
])
def test_tool_called_with_wrong_argument_types_is_error_result(demo, arguments):
    reply = demo.ask(request(12, "tools/call", name="add", arguments=arguments))
    result = reply["result"]
    assert result["isError"] is True
    assert result["content"][0]["type"] == "text"
    assert "add" in result["content"][0]["text"]
    demo.assert_alive()


def test_hundred_pipelined_requests_all_answered_with_matching_ids(demo):
    reqs = [request(i, "tools/call", name="add", arguments={"a": i, "b": 1000}) for i in range(100)]
    demo.send_raw(b"".join(line(r) + b"\n" for r in reqs))  # one write: truly pipelined
    replies = [demo.recv() for _ in range(100)]
    by_id = {r["id"]: r for r in replies}
    assert sorted(by_id) == list(range(100))
    for i, r in by_id.items():
        assert r["result"]["structuredContent"] == {"result": i + 1000}
    demo.assert_silent()
    demo.assert_alive()


# ====================================================================== ids
def test_string_and_integer_ids_are_preserved_and_distinct(demo):
    demo.send(
        request(1, "tools/call", name="add", arguments={"a": 1, "b": 1}),
        request("1", "tools/call", name="add", arguments={"a": 2, "b": 2}),
    )
    replies = [demo.recv(), demo.recv()]
    by_key = {(type(r["id"]), r["id"]): r["result"]["structuredContent"]["result"] for r in replies}
    assert by_key == {(int, 1): 2, (str, "1"): 4}


@pytest.mark.parametrize("rid", ["abc", "", "ünï-κώδ", 0, -5, 2**53 + 1])
def test_id_round_trips_exactly(demo, rid):
    reply = demo.ask(request(rid, "server/discover"))
    assert reply["id"] == rid and type(reply["id"]) is type(rid)


@pytest.mark.parametrize("rid", [1.5, None, True, [1], {"a": 1}])
def test_id_neither_string_nor_integer_is_invalid_request(demo, rid):
    demo.send(request(rid, "server/discover"))
    reply = demo.recv()
    assert reply["error"]["code"] == -32600
    assert "id" not in reply
    demo.assert_alive()


def test_duplicate_in_flight_id_is_refused(testserver):
    testserver.send(request("dup", "tools/call", name="sleep", arguments={"seconds": 0.5}))
    testserver.send(request("dup", "tools/call", name="echo", arguments={"text": "second"}))
    first = testserver.recv()
    assert first["id"] == "dup" and first["error"]["code"] == -32600
    second = testserver.recv()
    assert second["id"] == "dup" and second["result"]["content"][0]["text"] == "slept 0.5"


# ====================================================================== other garbage
@pytest.mark.parametrize("garbage", [
    b"hello world", b"{", b"\xff\xfe\x00", b'{"jsonrpc":"2.0","id":1,"method":"x"} trailing', b"}{",
])
def test_non_json_lines_are_parse_errors(demo, garbage):
    demo.send(garbage)
    reply = demo.recv()
    assert reply["error"]["code"] == -32700
    assert "id" not in reply
    demo.assert_alive()


@pytest.mark.parametrize("garbage", [b"42", b'"a string"', b"null", b"true", b"[1, 2]"])
def test_json_that_is_not_an_object_is_invalid_request(demo, garbage):
    demo.send(garbage)
    reply = demo.recv()
    assert reply["error"]["code"] == -32600
    assert "id" not in reply
    demo.assert_alive()


@pytest.mark.parametrize("garbage", [b"[1,", b"123abc", b'["unterminated'])
def test_invalid_json_starting_like_a_non_object_is_still_a_parse_error(demo, garbage):
    demo.send(garbage)
    reply = demo.recv()
    assert reply["error"]["code"] == -32700
    demo.assert_alive()


@pytest.mark.parametrize("bad_params", [[1, 2], "text", 3, True])
def test_params_that_is_not_an_object(demo, bad_params):
    demo.send(request(21, "server/discover", bad_params))
    reply = demo.recv()
    assert reply["error"]["code"] == -32600
    assert reply["id"] == 21  # the id was readable, so it is echoed
    demo.assert_alive()


def test_null_params_is_missing_meta(demo):
    reply = demo.ask(request(22, "server/discover", None) | {"params": None})
    assert reply["error"]["code"] == -32602
    demo.assert_alive()


def test_wrong_jsonrpc_version_is_invalid_request_with_id(demo):
    demo.send({"jsonrpc": "1.0", "id": 23, "method": "server/discover", "params": params()})
    reply = demo.recv()
    assert reply["error"]["code"] == -32600 and reply["id"] == 23
    demo.send({"id": 24, "method": "server/discover", "params": params()})
    reply = demo.recv()
    assert reply["error"]["code"] == -32600 and reply["id"] == 24
    demo.assert_alive()


def test_object_that_is_no_message_is_invalid_request(demo):
    demo.send({"jsonrpc": "2.0", "id": 25})
    reply = demo.recv()
    assert reply["error"]["code"] == -32600 and reply["id"] == 25
    demo.assert_alive()


def test_blank_and_whitespace_lines_are_ignored(demo):
    demo.send_raw(b"\n   \n\t\r\n\n")
    demo.assert_silent()
    demo.assert_alive()


def test_crlf_line_endings_are_accepted(demo):
    demo.send_raw(line(request(26, "server/discover")) + b"\r\n")
    assert demo.recv()["id"] == 26


def test_every_garbage_line_gets_its_own_answer(demo):
    demo.send(b"{", b"[]", b"nope", request(27, "server/discover"))
    codes = [demo.recv().get("error", {}).get("code") for _ in range(3)]
    assert codes == [-32700, -32600, -32700]
    assert demo.recv()["id"] == 27


def test_notifications_and_responses_from_the_client_get_no_reply(demo):
    demo.send(
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"nonsense": True}},
        {"jsonrpc": "2.0", "id": 5, "result": {}},
    )
    demo.assert_silent()
    demo.assert_alive()


def test_oversized_line_is_refused_and_server_keeps_serving(spawn):
    peer = spawn(TEST_SERVER, MCPKIT_TEST_MAX_LINE="4096")
    big = request(30, "tools/call", name="echo", arguments={"text": "x" * 20_000})
    peer.send(big, request(31, "tools/call", name="echo", arguments={"text": "small"}))
    err = peer.recv()
    assert err["error"]["code"] == -32600
    assert "id" not in err
    ok = peer.recv()
    assert ok["id"] == 31 and ok["result"]["content"][0]["text"] == "small"
    peer.assert_alive()


def test_large_line_under_the_default_limit_is_served(testserver):
    text = "y" * 1_000_000
    reply = testserver.ask(request(32, "tools/call", name="echo", arguments={"text": text}), timeout=10)
    assert reply["result"]["content"][0]["text"] == text


# ====================================================================== lifecycle
def test_modern_request_may_be_the_very_first_line(fresh_demo):
    reply = fresh_demo.ask(request(1, "server/discover"))
    result = reply["result"]
    assert result["supportedVersions"] == [VERSION]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "mcpkit-demo", "version": "1.0.0", "title": "mcpkit demo",
    }


def test_initialize_on_a_modern_only_server_names_supported_versions(tmp_path):
    # A legacy client's very first line, to a server built with legacy=False.
    src = tmp_path / "modern_only.py"
    src.write_text("from mcpkit import Server\nserver = Server('m', '1', legacy=False)\n"
                   "@server.tool()\ndef echo(text: str) -> str:\n    return text\n"
                   "if __name__ == '__main__':\n    server.run()\n")
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
    out = subprocess.run([sys.executable, str(src)], input=line + "\n", capture_output=True, text=True,
                         timeout=20, env=subprocess_env()).stdout
    err = json.loads(out.splitlines()[0])["error"]
    assert err["code"] == -32022
    assert VERSION in err["message"]
    assert err["data"]["supported"] == [VERSION]
    assert err["data"]["requested"] == "2025-11-25"


def test_initialize_without_params_is_refused_cleanly(fresh_demo):
    reply = fresh_demo.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize"})
    assert reply["error"]["code"] == -32602
    assert "initialize" in reply["error"]["message"]
    fresh_demo.assert_alive()


def test_stdin_eof_exits_promptly(fresh_demo):
    fresh_demo.assert_alive()
    t0 = time.monotonic()
    fresh_demo.close_stdin()
    assert fresh_demo.proc.wait(timeout=2) == 0
    assert time.monotonic() - t0 < 2


def test_in_flight_requests_are_answered_before_exit(fresh_demo):
    fresh_demo.send(request(40, "tools/call", name="add", arguments={"a": 2, "b": 3}))
    out = fresh_demo.rest()
    assert [m["id"] for m in out] == [40]
    assert fresh_demo.proc.wait(timeout=2) == 0


def test_last_line_without_newline_counts_at_eof(fresh_demo):
    fresh_demo.send_raw(line(request(41, "server/discover")))
    out = fresh_demo.rest()
    assert [m["id"] for m in out] == [41]


def test_request_reusing_a_finished_listen_id_is_still_answered_at_eof(fresh_testserver):
    peer = fresh_testserver
    peer.send(request(5, "subscriptions/listen", notifications={"toolsListChanged": True}))
    assert peer.recv()["method"] == "notifications/subscriptions/acknowledged"
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    assert peer.ask(request(6, "server/discover"))["id"] == 6  # the cancellation was processed
    peer.send(request(5, "tools/call", name="sleep", arguments={"seconds": 0.2}))
    out = peer.rest()
    assert [m.get("id") for m in out] == [5]


def test_stray_print_goes_to_stderr_not_stdout(fresh_testserver):
    reply = fresh_testserver.ask(request(50, "tools/call", name="noisy", arguments={"text": "hi"}))
    assert reply["result"]["content"] == [{"type": "text", "text": "HI"}]
    fresh_testserver.assert_silent()
    stderr = fresh_testserver.wait_stderr("STRAY-FD1")
    assert "STRAY-PRINT hi" in stderr
    assert "STRAY-FD1" in stderr
    assert fresh_testserver.rest() == []


# ====================================================================== concurrency and cancellation
def test_requests_are_handled_concurrently(testserver):
    testserver.send(request("slow", "tools/call", name="sleep", arguments={"seconds": 1.0}),
                    request("fast", "server/discover"))
    assert testserver.recv(timeout=0.9)["id"] == "fast"
    assert testserver.recv(timeout=3)["id"] == "slow"


def test_cancelled_request_gets_no_reply_and_server_keeps_serving(fresh_testserver):
    fresh_testserver.send(request("slow", "tools/call", name="sleep", arguments={"seconds": 30}))
    fresh_testserver.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "slow", "reason": "changed my mind"}})
    assert fresh_testserver.ask(request(2, "server/discover"))["id"] == 2
    t0 = time.monotonic()
    out = fresh_testserver.rest()  # the cancelled handler no longer holds the process open
    assert time.monotonic() - t0 < 2
    assert out == []
    assert fresh_testserver.proc.wait(timeout=2) == 0


def test_cancellation_matches_id_type(testserver):
    testserver.send(request("7", "tools/call", name="sleep", arguments={"seconds": 0.3}))
    testserver.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    reply = testserver.recv(timeout=3)
    assert reply["id"] == "7" and reply["result"]["content"][0]["text"] == "slept 0.3"


def test_malformed_cancellation_with_boolean_request_id_is_ignored(testserver):
    testserver.send(request(1, "tools/call", name="sleep", arguments={"seconds": 0.3}))
    testserver.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}})
    reply = testserver.recv(timeout=1.5)
    assert reply["id"] == 1


def test_progress_notifications_precede_the_result(demo):
    p = params(name="count_down", arguments={"start": 3})
    p["_meta"]["progressToken"] = "tok"
    demo.send(request(60, "tools/call", p))
    notes = []
    while True:
        msg = demo.recv()
        if "id" in msg:
            break
        notes.append(msg)
    assert msg["result"]["content"][0]["text"] == "liftoff"
    assert [n["method"] for n in notes] == ["notifications/progress"] * 4
    assert [n["params"]["progress"] for n in notes] == [0, 1, 2, 3]
    assert all(n["params"]["progressToken"] == "tok" and n["params"]["total"] == 3 for n in notes)


# ====================================================================== errors keep the server alive
def test_handler_exception_is_internal_error_with_safe_message(testserver):
    reply = testserver.ask(request(70, "resources/read", uri="test://broken"))
    err = reply["error"]
    assert err["code"] == -32603
    assert "secret-token-123" not in json.dumps(err)
    testserver.assert_alive()


def test_tool_exception_is_error_result(testserver):
    reply = testserver.ask(request(71, "tools/call", name="boom"))
    assert reply["result"]["isError"] is True
    # the exception's text stays on the server (issue 18, item 16): a generic message
    assert reply["result"]["content"][0]["text"] == "Error executing tool boom"
    testserver.assert_alive()


def test_resource_not_found_carries_uri(demo):
    reply = demo.ask(request(72, "resources/read", uri="notes://missing"))
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["uri"] == "notes://missing"
    demo.assert_alive()


def test_unknown_prompt(demo):
    reply = demo.ask(request(73, "prompts/get", name="nope"))
    assert reply["error"]["code"] == -32602
    demo.assert_alive()


def test_invalid_cursor(demo):
    reply = demo.ask(request(74, "tools/list", cursor="not-a-cursor"))
    assert reply["error"]["code"] == -32602
    demo.assert_alive()


# ====================================================================== every method over the pipe
@pytest.mark.parametrize("method,extra", [
    ("server/discover", {}),
    ("tools/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("prompts/list", {}),
    ("resources/read", {"uri": "notes://groceries"}),
    ("resources/read", {"uri": "demo://clock"}),
    ("tools/call", {"name": "convert_temperature", "arguments": {"value": 212, "to": "celsius"}}),
    ("prompts/get", {"name": "summarize", "arguments": {"name": "ideas"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "summarize"},
                             "argument": {"name": "name", "value": "gr"}}),
])
def test_every_method_answers_with_its_wire_type(demo, method, extra):
    reply = demo.ask(request(80, method, **extra))
    assert "result" in reply, reply  # the peer decoded it into RESULT_TYPES[method]


def test_paginated_lists_over_stdio(testserver):
    names, cursor, pages = [], None, 0
    while True:
        extra = {"cursor": cursor} if cursor is not None else {}
        result = testserver.ask(request(f"page{pages}", "tools/list", **extra))["result"]
        pages += 1
        assert len(result["tools"]) <= 2
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert names == ["sleep", "echo", "noisy", "boom", "refuse", "whoami", "multiline"]
    assert pages == 4


# ---------------------------------------------------------------- the synchronous opening
# A stdio server answers its opening discover/list requests before starting the event loop
# (cold start); the first request that may need the loop hands over without losing order,
# era or bytes.
def test_opening_discover_then_tool_call_in_one_write(spawn):
    peer = spawn()
    peer.send(request(1, "server/discover"), request(2, "tools/list"),
              request(3, "tools/call", name="add", arguments={"a": 2, "b": 3}), request(4, "tools/list"))
    got = {m["id"]: m for m in (peer.recv(), peer.recv(), peer.recv(), peer.recv())}
    assert got[1]["result"]["supportedVersions"] == [VERSION]
    assert got[3]["result"]["structuredContent"] == {"result": 5}
    assert got[2]["result"]["tools"] == got[4]["result"]["tools"]
    peer.assert_alive()


def test_opening_then_initialize_is_cross_era(spawn):
    peer = spawn()
    assert "result" in peer.ask(request(1, "server/discover"))
    reply = peer.ask({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
    assert reply["error"]["code"] == -32600
    assert "2026-07-28" in reply["error"]["message"]


def test_opening_answers_then_exits_at_eof(spawn):
    peer = spawn()
    peer.send(request(1, "server/discover"), request(2, "prompts/list"))
    assert peer.recv()["id"] == 1 and peer.recv()["id"] == 2
    peer.close_stdin()
    assert peer.proc.wait(timeout=5) == 0


def test_opening_garbage_then_legacy_handshake(spawn):
    # Garbage is answered in the opening; it decides no era, so initialize still works.
    peer = spawn()
    peer.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method"\n')
    assert peer.recv()["error"]["code"] == -32700
    reply = peer.ask({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_opening_last_line_without_newline_is_answered(spawn):
    peer = spawn()
    peer.send_raw(line(request(1, "server/discover")))
    peer.close_stdin()
    assert peer.recv()["id"] == 1
