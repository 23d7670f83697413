"""Streamable HTTP (2026-07-28) server transport: the app's answers, and the transport itself.

Most checks run in-process: ``server.http_app()`` of ``tests/servers/http_test_server.py``
behind ``httpx.ASGITransport``, with requests built by hand so that every bad input reaches the
app exactly as written. Each failure case is followed by a valid request to show the app keeps
serving. The transport itself (startup, real streaming, bytes httpx would refuse to send,
chunked bodies on a socket, client disconnects) is checked against a real uvicorn server in a
subprocess (``python -m mcpkit serve --http``); a few checks run on both.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers.markers import wait_for
from tests.helpers.messages import VERSION, body, headers_for, sse_events
from tests.helpers.paths import HTTP_TEST_SERVER
from tests.helpers.servers import ASGI_URL, asgi_client, mcpkit_serve_argv, running_server
from tests.helpers.wire import post, raw_http, raw_post_bytes
from tests.servers.http_test_server import server

SMALL_LIMIT = 1024


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """The test server's app, in-process."""
    with asgi_client(server.http_app()) as c:
        yield c


@pytest.fixture(scope="module")
def url() -> str:
    return ASGI_URL


@pytest.fixture(scope="module")
def small() -> Iterator[tuple[httpx.Client, str]]:
    """The same server behind a 1 KiB body limit, in-process: (client, url)."""
    with asgi_client(server.http_app(max_body_bytes=SMALL_LIMIT)) as c:
        yield c, ASGI_URL


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[httpx.Client, str]]:
    """The test server on real uvicorn (``python -m mcpkit serve --http``): (client, url)."""
    with running_server(mcpkit_serve_argv(HTTP_TEST_SERVER)) as u, httpx.Client(timeout=10.0) as c:
        yield c, u


@pytest.fixture(params=["in-process", "uvicorn"])
def either(request: pytest.FixtureRequest, http: httpx.Client, url: str) -> tuple[httpx.Client, str]:
    """In-process and on real uvicorn: (client, url)."""
    if request.param == "in-process":
        return http, url
    return request.getfixturevalue("live")


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def rpc_error(resp: httpx.Response, status: int, code: int, id=1) -> dict:
    """Assert a JSON-RPC error answer with the given HTTP status and code; return the error."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    data = resp.json()
    assert data["jsonrpc"] == "2.0"
    assert set(data) <= {"jsonrpc", "id", "error"}
    if id is not None:
        assert data["id"] == id
    err = data["error"]
    assert err["code"] == code, err
    assert isinstance(err["message"], str) and err["message"]
    return err


def result_of(resp: httpx.Response, id=1) -> dict:
    assert resp.status_code == 200, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    data = resp.json()
    assert data["jsonrpc"] == "2.0" and data["id"] == id, data
    assert "error" not in data, data
    return data["result"]


def still_ok(http: httpx.Client, url: str) -> None:
    """A valid request right after a failure still succeeds."""
    msg = body("tools/call", {"name": "echo", "arguments": {"text": "still alive"}}, id="after")
    res = result_of(post(http, url, msg), id="after")
    assert res["content"][0]["text"] == "still alive"
    assert not res.get("isError")


def echo_call(text: str = "hi", **kw) -> dict:
    return body("tools/call", {"name": "echo", "arguments": {"text": text}}, **kw)


def weather_call(arguments: dict) -> dict:
    return body("tools/call", {"name": "weather", "arguments": arguments})


# ============================================================================ baseline


def test_valid_requests_succeed(either):
    http, url = either
    res = result_of(post(http, url, body("server/discover")))
    assert VERSION in res["supportedVersions"]
    tools = result_of(post(http, url, body("tools/list")))["tools"]
    assert {"echo", "weather", "bad_header_tool"} <= {t["name"] for t in tools}
    res = result_of(post(http, url, echo_call("hello")))
    assert res["content"][0]["text"] == "hello"
    res = result_of(post(http, url, body("resources/read", {"uri": "test://hello"})))
    assert res["contents"][0]["text"] == "hello world"
    res = result_of(post(http, url, body("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})))
    assert "Hello, Ada!" in json.dumps(res)
    still_ok(http, url)


# ============================================================================ missing headers


@pytest.mark.parametrize("drop", ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"])
def test_missing_required_header_on_tools_call(http, url, drop):
    msg = echo_call()
    err = rpc_error(post(http, url, msg, headers_for(msg, **{drop: None})), 400, -32020)
    assert drop.lower() in err["message"].lower()
    still_ok(http, url)


@pytest.mark.parametrize("msg", [
    body("prompts/get", {"name": "greet", "arguments": {"name": "x"}}),
    body("resources/read", {"uri": "test://hello"}),
], ids=["prompts/get", "resources/read"])
def test_missing_mcp_name_on_other_named_methods(http, url, msg):
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Name=None)), 400, -32020)
    still_ok(http, url)


@pytest.mark.parametrize("drop", ["MCP-Protocol-Version", "Mcp-Method"])
def test_missing_header_on_unnamed_method(http, url, drop):
    msg = body("tools/list")
    rpc_error(post(http, url, msg, headers_for(msg, **{drop: None})), 400, -32020)
    still_ok(http, url)


# ============================================================================ mismatches


def test_header_version_differs_from_body_version(http, url):
    msg = echo_call()
    err = rpc_error(post(http, url, msg, headers_for(msg, version="2025-11-25")), 400, -32020)
    assert "2025-11-25" in err["message"]
    still_ok(http, url)


def test_header_version_differs_from_unsupported_body_version(http, url):
    # The header/body disagreement is reported, not the unsupported body version.
    msg = body("tools/list", version="2099-01-01")
    rpc_error(post(http, url, msg, headers_for(msg, version=VERSION)), 400, -32020)
    still_ok(http, url)


@pytest.mark.parametrize("value", ["tools/call", "TOOLS/LIST", "Tools/List", "tools/list/"])
def test_mcp_method_mismatch(http, url, value):
    msg = body("tools/list")
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Method=value)), 400, -32020)
    still_ok(http, url)


@pytest.mark.parametrize("msg,value", [
    (echo_call(), "weather"),
    (echo_call(), "ECHO"),
    (body("prompts/get", {"name": "greet", "arguments": {"name": "x"}}), "greeting"),
    (body("resources/read", {"uri": "test://hello"}), "test://other"),
], ids=["tools/call", "tools/call-case", "prompts/get", "resources/read"])
def test_mcp_name_mismatch(http, url, msg, value):
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Name=value)), 400, -32020)
    still_ok(http, url)


@pytest.mark.parametrize("value", [
    "=?base64?not*base64!?=",   # bad alphabet
    "=?base64?ZWNobw?=",        # missing padding
    "=?base64?/w==?=",          # decodes to invalid UTF-8
])
def test_malformed_base64_sentinel(http, url, value):
    msg = echo_call()
    err = rpc_error(post(http, url, msg, headers_for(msg, Mcp_Name=value)), 400, -32020)
    assert "Mcp-Name" in err["message"]
    still_ok(http, url)


def test_base64_sentinel_of_other_name_mismatches(http, url):
    msg = echo_call()
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Name=b64("weather"))), 400, -32020)
    still_ok(http, url)


def test_valid_base64_sentinel_accepted(http, url):
    msg = echo_call("sentinel")
    res = result_of(post(http, url, msg, headers_for(msg, Mcp_Name=b64("echo"))))
    assert res["content"][0]["text"] == "sentinel"
    # A URI that cannot travel as a plain header value.
    uri = "test://caf\u00e9 menu"
    msg = body("resources/read", {"uri": uri})
    res = result_of(post(http, url, msg, headers_for(msg, Mcp_Name=b64(uri))))
    assert res["contents"][0]["text"] == "espresso"
    still_ok(http, url)


def test_uppercase_base64_marker_is_a_literal(http, url):
    msg = echo_call()
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Name="=?BASE64?ZWNobw==?=")), 400, -32020)
    still_ok(http, url)


# ============================================================================ Mcp-Param-*


def test_mcp_param_headers_accepted(http, url):
    msg = weather_call({"region": "eu-west", "count": 7})
    res = result_of(post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu-west", Mcp_Param_Count="7")))
    assert res["content"][0]["text"] == "eu-west:7"
    still_ok(http, url)


def test_mcp_param_header_missing(http, url):
    msg = weather_call({"region": "eu-west"})
    err = rpc_error(post(http, url, msg, headers_for(msg)), 400, -32020)
    assert "Mcp-Param-Region" in err["message"]
    # The optional one too, once the body has a value for it.
    msg = weather_call({"region": "eu", "count": 2})
    err = rpc_error(post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu")), 400, -32020)
    assert "Mcp-Param-Count" in err["message"]
    still_ok(http, url)


@pytest.mark.parametrize("hdr,args", [
    ({"Mcp-Param-Region": "us-east"}, {"region": "eu-west"}),
    ({"Mcp-Param-Region": "EU-WEST"}, {"region": "eu-west"}),
    ({"Mcp-Param-Region": "eu", "Mcp-Param-Count": "43"}, {"region": "eu", "count": 42}),
    ({"Mcp-Param-Region": "eu", "Mcp-Param-Count": "forty-two"}, {"region": "eu", "count": 42}),
    ({"Mcp-Param-Region": "eu", "Mcp-Param-Count": "42.5"}, {"region": "eu", "count": 42}),
], ids=["string", "string-case", "int", "int-not-a-number", "int-fraction"])
def test_mcp_param_header_mismatch(http, url, hdr, args):
    msg = weather_call(args)
    rpc_error(post(http, url, msg, {**headers_for(msg), **hdr}), 400, -32020)
    still_ok(http, url)


@pytest.mark.parametrize("header,body_value", [("42", 42.0), ("42.0", 42), ("042", 42), ("4.2e1", 42), ("+42", 42)])
def test_mcp_param_numeric_comparison(http, url, header, body_value):
    # Integers are compared numerically: the header check passes (no -32020, HTTP 200).
    msg = weather_call({"region": "eu", "count": body_value})
    resp = post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu", Mcp_Param_Count=header))
    res = result_of(resp)
    if type(body_value) is int:
        assert res["content"][0]["text"] == "eu:42", res
    still_ok(http, url)


def test_integral_float_argument_reaches_integer_parameter(http, url):
    # JSON Schema: 42.0 is an integer. The header layer already treats it as 42.
    msg = weather_call({"region": "eu", "count": 42.0})
    res = result_of(post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu", Mcp_Param_Count="42")))
    assert not res.get("isError"), res
    assert res["content"][0]["text"] == "eu:42"


def test_mcp_param_present_but_body_null(http, url):
    msg = weather_call({"region": "eu", "count": None})
    err = rpc_error(post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu", Mcp_Param_Count="1")), 400, -32020)
    assert "Mcp-Param-Count" in err["message"]
    still_ok(http, url)


def test_mcp_param_present_but_body_missing(http, url):
    msg = weather_call({"region": "eu"})
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu", Mcp_Param_Count="1")), 400, -32020)
    still_ok(http, url)


def test_mcp_param_absent_for_null_passes_header_check(http, url):
    # Null means "no header": the header check passes and the tool itself judges the null.
    msg = weather_call({"region": "eu", "count": None})
    resp = post(http, url, msg, headers_for(msg, Mcp_Param_Region="eu"))
    assert resp.status_code == 200, resp.text
    assert "error" not in resp.json() or resp.json()["error"]["code"] != -32020
    still_ok(http, url)


def test_mcp_param_base64_value(http, url):
    region = "z\u00fcrich "
    msg = weather_call({"region": region})
    res = result_of(post(http, url, msg, headers_for(msg, Mcp_Param_Region=b64(region))))
    assert res["content"][0]["text"] == f"{region}:1"
    still_ok(http, url)


def test_unannotated_mcp_param_header_is_ignored(http, url):
    msg = echo_call("x")
    result_of(post(http, url, msg, headers_for(msg, Mcp_Param_Text="something else")))
    still_ok(http, url)


# ============================================================================ header syntax


def test_header_names_in_odd_case(http, url):
    msg = weather_call({"region": "eu", "count": 3})
    hdrs = {
        "content-type": "application/json",
        "mcp-PROTOCOL-version": VERSION,
        "MCP-METHOD": "tools/call",
        "mCp-NaMe": "weather",
        "MCP-PARAM-REGION": "eu",
        "mcp-param-count": "3",
    }
    assert result_of(post(http, url, msg, hdrs))["content"][0]["text"] == "eu:3"
    still_ok(http, url)


def test_whitespace_around_mcp_name_accepted(live):
    http, url = live
    # httpx refuses to send surrounding whitespace, so write the request by hand.
    msg = echo_call("ws")
    payload = json.dumps(msg).encode()
    raw = raw_post_bytes(url, payload, [
        "Content-Type: application/json",
        f"MCP-Protocol-Version: {VERSION}",
        "Mcp-Method: tools/call",
        "Mcp-Name: \t echo \t",
        "Mcp-Param-Unused:  x ",
    ])
    status, hdrs, data = raw_http(url, raw)
    assert status == 200, data
    assert json.loads(data)["result"]["content"][0]["text"] == "ws"
    still_ok(http, url)


def test_session_id_and_last_event_id_are_ignored(http, url):
    msg = echo_call("stateless")
    resp = post(http, url, msg, headers_for(msg, Mcp_Session_Id="abc-123", Last_Event_ID="42"))
    assert result_of(resp)["content"][0]["text"] == "stateless"
    assert "mcp-session-id" not in resp.headers
    still_ok(http, url)


# ============================================================================ version / method / _meta


def test_unsupported_version_header_equals_body(http, url):
    msg = body("tools/list", version="2099-01-01")
    err = rpc_error(post(http, url, msg, headers_for(msg)), 400, -32022)
    assert err["data"]["requested"] == "2099-01-01"
    assert VERSION in err["data"]["supported"]
    still_ok(http, url)


def test_legacy_version_is_unsupported(http, url):
    msg = body("tools/list", version="2025-11-25")
    err = rpc_error(post(http, url, msg, headers_for(msg)), 400, -32022)
    assert err["data"]["requested"] == "2025-11-25"
    still_ok(http, url)


def test_unknown_method_is_404(http, url):
    msg = body("foo/bar")
    rpc_error(post(http, url, msg), 404, -32601)
    still_ok(http, url)


def test_header_mismatch_outranks_unknown_method(http, url):
    msg = body("foo/bar")
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Method="tools/list")), 400, -32020)
    rpc_error(post(http, url, msg, headers_for(msg, Mcp_Method=None)), 400, -32020)
    still_ok(http, url)


def test_non_string_tool_name_is_400_invalid_params(http, url):
    msg = body("tools/call", {"name": 5})
    rpc_error(post(http, url, msg, headers_for(body("tools/call"))), 400, -32602)
    still_ok(http, url)


def test_missing_meta_is_400_invalid_params(http, url):
    msg = body("tools/list", with_meta=False)
    rpc_error(post(http, url, msg, headers_for(msg, version=VERSION)), 400, -32602)
    still_ok(http, url)


def test_missing_client_capability_is_400(http, url):
    msg = body("tools/call", {"name": "needs_sampling", "arguments": {}})
    err = rpc_error(post(http, url, msg), 400, -32021)
    assert "sampling" in err["data"]["requiredCapabilities"]
    still_ok(http, url)


def test_unknown_tool_is_200_invalid_params(http, url):
    msg = body("tools/call", {"name": "no_such_tool", "arguments": {}})
    rpc_error(post(http, url, msg), 200, -32602)
    still_ok(http, url)


def test_tool_error_result_is_200(http, url):
    msg = body("tools/call", {"name": "fail", "arguments": {}})
    res = result_of(post(http, url, msg))
    assert res["isError"] is True
    still_ok(http, url)


def test_invalid_tool_arguments_is_200_iserror(http, url):
    msg = echo_call()
    msg["params"]["arguments"] = {"text": 5}
    res = result_of(post(http, url, msg))
    assert res["isError"] is True
    still_ok(http, url)


def test_unknown_resource_is_not_a_400(http, url):
    msg = body("resources/read", {"uri": "test://nope"})
    resp = post(http, url, msg)
    assert resp.status_code == 200
    assert "error" in resp.json()
    still_ok(http, url)


# ============================================================================ HTTP shape


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_non_post_methods_are_405(either, method):
    http, url = either
    # Without a legacy session, GET and DELETE mean nothing on the stateless wire.
    resp = http.request(method, url, headers={"Accept": "text/event-stream"})
    err = rpc_error(resp, 405, -32600, id=None)
    assert "id" not in resp.json() or resp.json()["id"] is None
    assert resp.headers.get("allow") == "POST"
    assert method in err["message"]
    still_ok(http, url)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_with_an_unknown_session_are_404(http, url, method):
    resp = http.request(method, url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "no-such-session"})
    rpc_error(resp, 404, -32600, id=None)
    still_ok(http, url)


def test_json_array_is_invalid_request(http, url):
    msg = echo_call()
    resp = post(http, url, [msg], headers_for(msg))
    err = rpc_error(resp, 400, -32600, id=None)
    assert "batch" in err["message"].lower()
    still_ok(http, url)


@pytest.mark.parametrize("content", [b'{"jsonrpc": "2.0", "id": 1, "method": ', b"not json", b""])
def test_invalid_json_is_parse_error(http, url, content):
    resp = post(http, url, None, headers_for(echo_call()), content=content)
    rpc_error(resp, 400, -32700, id=None)
    still_ok(http, url)


def test_json_rpc_response_from_client_is_400(http, url):
    resp = post(http, url, {"jsonrpc": "2.0", "id": 1, "result": {}},
                {"Content-Type": "application/json", "MCP-Protocol-Version": VERSION, "Mcp-Method": "x"})
    rpc_error(resp, 400, -32600, id=None)
    still_ok(http, url)


def test_wrong_jsonrpc_version_is_400(http, url):
    msg = echo_call()
    msg["jsonrpc"] = "1.0"
    rpc_error(post(http, url, msg, headers_for(echo_call())), 400, -32600)
    still_ok(http, url)


def test_null_id_is_invalid_request(http, url):
    msg = echo_call()
    msg["id"] = None
    rpc_error(post(http, url, msg, headers_for(echo_call())), 400, -32600, id=None)
    still_ok(http, url)


def test_params_array_is_invalid_request(http, url):
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []}
    rpc_error(post(http, url, msg, headers_for(msg)), 400, -32600)
    still_ok(http, url)


def test_repeated_mcp_method_header_is_a_mismatch(http, url):
    msg = echo_call()
    hdrs = list(headers_for(msg).items()) + [("Mcp-Method", "tools/call")]
    resp = http.post(url, content=json.dumps(msg).encode(), headers=hdrs)
    rpc_error(resp, 400, -32020)
    still_ok(http, url)


def test_legacy_initialize_opens_a_session(http, url):
    # Dual-era: a 2025-11-25 initialize gets a legacy session beside the stateless wire.
    msg = body("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "old", "version": "1"}}, with_meta=False)
    resp = post(http, url, msg, headers={"Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 200
    sid = resp.headers["mcp-session-id"]
    assert sid and all(0x21 <= ord(c) <= 0x7E for c in sid)
    assert resp.json()["result"]["protocolVersion"] == "2025-11-25"
    still_ok(http, url)


def test_initialize_with_modern_meta_is_a_removed_method(http, url):
    # A 2026-07-28 request for a method this revision removed: 404 -32601 (server-stateless).
    msg = body("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "old", "version": "1"}})
    rpc_error(post(http, url, msg), 404, -32601)
    still_ok(http, url)


def test_other_path_is_404(http, url):
    msg = echo_call()
    resp = post(http, url.replace("/mcp", "/elsewhere"), msg)
    assert resp.status_code == 404
    still_ok(http, url)


def _oversized(n: int) -> dict:
    return echo_call("x" * n)


def test_oversized_body_with_content_length(small):
    http, small_url = small
    msg = _oversized(2000)
    err = rpc_error(post(http, small_url, msg), 413, -32600, id=None)
    assert str(SMALL_LIMIT) in err["message"]
    still_ok(http, small_url)


def test_oversized_chunked_body(small):
    http, small_url = small
    msg = _oversized(4000)
    data = json.dumps(msg).encode()

    def chunks():
        for i in range(0, len(data), 500):
            yield data[i:i + 500]

    resp = http.post(small_url, content=chunks(), headers=headers_for(msg))
    assert "content-length" not in {k.lower() for k in resp.request.headers}
    rpc_error(resp, 413, -32600, id=None)
    still_ok(http, small_url)


def test_oversized_chunked_body_on_a_socket(live):
    """Transfer-Encoding: chunked on a real socket: the default 4 MiB limit holds without a Content-Length."""
    http, url = live
    msg = _oversized(4 * 1024 * 1024 + 10)
    data = json.dumps(msg).encode()

    def chunks():
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]

    resp = http.post(url, content=chunks(), headers=headers_for(msg))
    assert "content-length" not in {k.lower() for k in resp.request.headers}
    assert resp.request.headers["transfer-encoding"] == "chunked"
    rpc_error(resp, 413, -32600, id=None)
    still_ok(http, url)


def test_body_just_under_small_limit_is_served(small):
    http, small_url = small
    msg = _oversized(10)
    size = len(json.dumps(msg).encode())
    msg = _oversized(10 + SMALL_LIMIT - size)
    assert len(json.dumps(msg).encode()) == SMALL_LIMIT
    assert result_of(post(http, small_url, msg))["content"][0]["text"] == "x" * (10 + SMALL_LIMIT - size)
    still_ok(http, small_url)


def test_default_limit_accepts_larger_bodies(http, url):
    text = "y" * 100_000
    assert result_of(post(http, url, echo_call(text)))["content"][0]["text"] == text
    still_ok(http, url)


def test_oversized_body_default_limit(either):
    http, url = either
    msg = _oversized(4 * 1024 * 1024 + 10)
    rpc_error(post(http, url, msg), 413, -32600, id=None)
    still_ok(http, url)


# ============================================================================ Origin / Host


def test_foreign_origin_forbidden(http, url):
    msg = echo_call()
    resp = post(http, url, msg, headers_for(msg, Origin="http://evil.example"))
    rpc_error(resp, 403, -32600, id=None)
    assert "id" not in resp.json()
    still_ok(http, url)


def test_foreign_host_and_origin_forbidden(http, url):
    msg = echo_call()
    resp = post(http, url, msg, headers_for(msg, Host="evil.example", Origin="http://evil.example"))
    rpc_error(resp, 403, -32600, id=None)
    assert "id" not in resp.json()
    still_ok(http, url)


def test_foreign_host_without_origin_forbidden(http, url):
    msg = echo_call()
    resp = post(http, url, msg, headers_for(msg, Host="attacker.example:80"))
    rpc_error(resp, 403, -32600, id=None)
    still_ok(http, url)


def test_foreign_origin_on_get_forbidden(http, url):
    resp = http.get(url, headers={"Origin": "https://evil.example"})
    rpc_error(resp, 403, -32600, id=None)
    still_ok(http, url)


@pytest.mark.parametrize("origin", ["http://localhost:{port}", "http://127.0.0.1:{port}", "http://localhost"])
def test_localhost_origin_allowed(http, url, origin):
    port = httpx.URL(url).port
    msg = echo_call("local")
    resp = post(http, url, msg, headers_for(msg, Origin=origin.format(port=port)))
    assert result_of(resp)["content"][0]["text"] == "local"
    still_ok(http, url)


def test_localhost_lookalike_origin_forbidden(http, url):
    msg = echo_call()
    resp = post(http, url, msg, headers_for(msg, Origin="http://localhost.evil.example"))
    rpc_error(resp, 403, -32600, id=None)
    still_ok(http, url)


@pytest.mark.parametrize("origins", [("http://localhost", "http://evil.example"),
                                     ("http://evil.example", "http://localhost")])
def test_a_second_origin_or_host_header_is_not_taken_alone(http, url, origins):
    # A repeated header's values are joined (never the first or the last alone), so an allowed
    # value beside a foreign one is refused, in either order.
    msg = echo_call()
    base = [(k, v) for k, v in headers_for(msg).items() if k.lower() != "origin"]
    resp = http.post(url, content=json.dumps(msg).encode(), headers=base + [("Origin", o) for o in origins])
    rpc_error(resp, 403, -32600, id=None)
    port = httpx.URL(url).port
    hosts = [("Host", f"127.0.0.1:{port}"), ("Host", "evil.example")]
    resp = http.post(url, content=json.dumps(msg).encode(), headers=base + hosts)
    rpc_error(resp, 403, -32600, id=None)
    still_ok(http, url)


def test_null_origin_forbidden(http, url):
    msg = echo_call()
    rpc_error(post(http, url, msg, headers_for(msg, Origin="null")), 403, -32600, id=None)
    still_ok(http, url)


def test_origin_with_userinfo_naming_foreign_host_forbidden(http, url):
    msg = echo_call()
    resp = post(http, url, msg, headers_for(msg, Origin="http://localhost:1@evil.example"))
    assert resp.status_code == 403, resp.text


# ============================================================================ notifications


def test_notification_gets_202(either):
    http, url = either
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "test", "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}}}
    hdrs = {"Content-Type": "application/json", "MCP-Protocol-Version": VERSION, "Mcp-Method": "notifications/cancelled"}
    resp = post(http, url, note, hdrs)
    assert resp.status_code == 202
    assert resp.content == b""
    still_ok(http, url)


def test_notification_without_mcp_headers_gets_202(http, url):
    resp = post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"Content-Type": "application/json"})
    assert resp.status_code == 202
    assert resp.content == b""
    still_ok(http, url)


# ============================================================================ SSE progress


def test_progress_streams_sse_before_result(either):
    http, url = either
    msg = body("tools/call", {"name": "progress_steps", "arguments": {"steps": 3},
                              "_meta": {"progressToken": "tok-1"}}, id=77)
    with http.stream("POST", url, content=json.dumps(msg).encode(), headers=headers_for(msg)) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["x-accel-buffering"] == "no"
        text = resp.read().decode()
    events = sse_events(text)
    assert len(events) == 4, events
    progress, final = events[:-1], events[-1]
    assert [e["method"] for e in progress] == ["notifications/progress"] * 3
    assert [e["params"]["progress"] for e in progress] == [1, 2, 3]
    assert all(e["params"]["progressToken"] == "tok-1" and e["params"]["total"] == 3 for e in progress)
    assert "id" not in progress[0]
    assert final["id"] == 77
    assert final["result"]["content"][0]["text"] == "finished 3"
    still_ok(http, url)


def test_no_progress_token_means_plain_json(http, url):
    msg = body("tools/call", {"name": "progress_steps", "arguments": {"steps": 2}})
    assert result_of(post(http, url, msg))["content"][0]["text"] == "finished 2"
    still_ok(http, url)


def test_progress_without_sse_accept_gets_json(http, url):
    msg = body("tools/call", {"name": "progress_steps", "arguments": {"steps": 2},
                              "_meta": {"progressToken": 5}})
    resp = post(http, url, msg, headers_for(msg, Accept="application/json"))
    assert result_of(resp)["content"][0]["text"] == "finished 2"
    still_ok(http, url)


# ============================================================================ cancellation


def test_client_disconnect_cancels_handler(live, tmp_path):
    http, url = live
    marker = tmp_path / "sleepy.marker"
    msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker), "seconds": 20}}, id=9)
    raw = raw_post_bytes(url, json.dumps(msg).encode(), [
        f"{k}: {v}" for k, v in headers_for(msg).items()])
    u = httpx.URL(url)
    sock = socket.create_connection((u.host, u.port), timeout=5)
    try:
        sock.sendall(raw)
        assert wait_for(marker, "started") == "started"
    finally:
        sock.close()  # the client goes away mid-handler
    assert wait_for(marker, "cancelled") == "cancelled"
    still_ok(http, url)


def test_completed_handler_is_not_marked_cancelled(either, tmp_path):
    http, url = either
    marker = tmp_path / "quick.marker"
    msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker), "seconds": 0.01}})
    assert result_of(post(http, url, msg))["content"][0]["text"] == "woke up"
    assert marker.read_text() == "completed"
    still_ok(http, url)


def test_disconnect_while_streaming_cancels_handler(live, tmp_path):
    http, url = live
    marker = tmp_path / "stream.marker"
    msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker), "seconds": 20},
                              "_meta": {"progressToken": "s"}}, id=10)
    raw = raw_post_bytes(url, json.dumps(msg).encode(), [f"{k}: {v}" for k, v in headers_for(msg).items()])
    u = httpx.URL(url)
    sock = socket.create_connection((u.host, u.port), timeout=5)
    try:
        sock.sendall(raw)
        got = b""
        while b"notifications/progress" not in got:  # the stream has started
            chunk = sock.recv(4096)
            assert chunk, got
            got += chunk
        assert b"text/event-stream" in got.lower()
        assert wait_for(marker, "started") == "started"
    finally:
        sock.close()
    assert wait_for(marker, "cancelled") == "cancelled"
    still_ok(http, url)


def test_a_long_wait_gets_keep_alives_from_the_apps_one_timer(tmp_path):
    """A stateless handler that waits past the keep-alive interval gets its answer as an SSE
    stream with keep-alive comments first (the keep-alive is an entry on the app's schedule)."""
    with asgi_client(server.http_app(keepalive_interval=0.1)) as c:
        marker = tmp_path / "wait.marker"
        msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker), "seconds": 0.45}})
        r = c.post(ASGI_URL, content=json.dumps(msg), headers=headers_for(msg))
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        assert r.text.count(": keep-alive") >= 2, r.text
        assert '"woke up"' in r.text and marker.read_text() == "completed"
        app = server.http_app()  # (another app: its own schedule, nothing pending in it)
        assert app.timers is None


def test_a_client_gone_before_the_watcher_starts_still_cancels_the_handler(live, tmp_path):
    """The disconnect watcher starts only after the handler has waited a moment; a client that
    is gone by then is seen at once."""
    http, url = live
    marker = tmp_path / "early.marker"
    msg = body("tools/call", {"name": "sleepy", "arguments": {"marker": str(marker), "seconds": 20}}, id=11)
    raw = raw_post_bytes(url, json.dumps(msg).encode(), [f"{k}: {v}" for k, v in headers_for(msg).items()])
    u = httpx.URL(url)
    sock = socket.create_connection((u.host, u.port), timeout=5)
    sock.sendall(raw)
    sock.close()  # at once: before the handler has waited WATCH_AFTER
    assert wait_for(marker, "cancelled") == "cancelled"
    still_ok(http, url)
