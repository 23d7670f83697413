"""The inbound validation ladder, in order:

1. missing ``params._meta`` or one of its required keys -> -32602
2. unsupported protocol version                          -> -32022
3. unknown method, or one behind an unadvertised capability -> -32601
4. params that do not fit the method                     -> -32602
"""

from __future__ import annotations

import json

import msgspec
import pytest

from mcpkit import Server
from mcpkit.protocol import codec, errors, inbound
from mcpkit.protocol import types as t
from tests.helpers.aio import run
from tests.helpers.messages import META, VERSION

SUPPORTED = ("2026-07-28",)
ALL_CAPS = frozenset({"tools", "resources", "prompts", "completions"})
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"


def ladder(method, params, caps=ALL_CAPS):
    raw = msgspec.Raw(json.dumps(params).encode()) if params is not None else None
    return inbound.check_request(method, raw, SUPPORTED, caps)


def code_of(method, params, caps=ALL_CAPS):
    with pytest.raises(errors.MCPError) as info:
        ladder(method, params, caps)
    return info.value


def meta(**kw):
    m = dict(META)
    for k, v in kw.items():
        key = {"version": PV, "caps": CC}[k]
        if v is ...:
            m.pop(key)
        else:
            m[key] = v
    return m


# ---------------------------------------------------------------- passing requests
def test_valid_request_passes_with_typed_params_and_meta():
    checked = ladder("tools/call", {"_meta": {**META, "progressToken": 5}, "name": "x", "arguments": {"a": 1}})
    assert isinstance(checked.params, t.CallToolParams)
    assert checked.params.name == "x" and checked.params.arguments == {"a": 1}
    assert checked.meta.protocolVersion == VERSION
    assert checked.meta.progressToken == 5
    assert checked.params.meta["progressToken"] == 5  # the raw _meta keeps every key


def test_unknown_meta_keys_are_allowed():
    checked = ladder("server/discover", {"_meta": {**META, "com.example/x": {"y": 1}, "traceparent": "00-ab"}})
    assert checked.params.meta["com.example/x"] == {"y": 1}


def test_dict_params_work_as_well_as_raw():
    checked = inbound.check_request("server/discover", {"_meta": META}, SUPPORTED, ALL_CAPS)
    assert checked.method == "server/discover"


def test_discover_needs_no_capability():
    assert ladder("server/discover", {"_meta": META}, caps=frozenset()).method == "server/discover"


# ---------------------------------------------------------------- step 1
@pytest.mark.parametrize("params", [
    None, {}, {"_meta": None}, {"_meta": 5}, {"_meta": []},
    {"_meta": meta(caps=...)}, {"_meta": meta(version=...)}, {"_meta": {}},
    {"_meta": meta(version=20260728)}, {"_meta": meta(caps="all")}, {"_meta": meta(caps=None)},
    {"_meta": {**META, "io.modelcontextprotocol/logLevel": "loud"}},
    {"_meta": {**META, "io.modelcontextprotocol/clientInfo": "me"}},
])
def test_step1_bad_meta_is_invalid_params(params):
    assert code_of("tools/list", params).code == -32602


def test_step1_names_the_missing_key():
    assert CC in code_of("tools/list", {"_meta": meta(caps=...)}).message
    assert PV in code_of("tools/list", {"_meta": meta(version=...)}).message


def test_step1_comes_before_version_and_method():
    # a missing clientCapabilities on an unknown method with an unsupported version
    err = code_of("no/such", {"_meta": meta(caps=..., version="1900-01-01")})
    assert err.code == -32602


# ---------------------------------------------------------------- step 2
@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25", "2024-11-05", "", "2026-07-28 "])
def test_step2_unsupported_version(version):
    err = code_of("tools/list", {"_meta": meta(version=version)})
    assert err.code == -32022
    assert err.data == {"supported": ["2026-07-28"], "requested": version}


def test_step2_comes_before_method():
    assert code_of("no/such", {"_meta": meta(version="1900-01-01")}).code == -32022
    assert code_of("tools/list", {"_meta": meta(version="1900-01-01")}, caps=frozenset()).code == -32022


def test_step2_comes_before_params_shape():
    assert code_of("tools/call", {"_meta": meta(version="1900-01-01"), "name": 5}).code == -32022


# ---------------------------------------------------------------- step 3
@pytest.mark.parametrize("method", ["no/such", "initialize", "notifications/initialized", "logging/setLevel",
                                    "resources/subscribe", "tools/list/"])
def test_step3_unknown_method(method):
    err = code_of(method, {"_meta": META})
    assert err.code == -32601
    assert method in err.message


@pytest.mark.parametrize("method,cap", [
    ("tools/list", "tools"), ("tools/call", "tools"), ("resources/list", "resources"),
    ("resources/read", "resources"), ("resources/templates/list", "resources"),
    ("prompts/list", "prompts"), ("prompts/get", "prompts"), ("completion/complete", "completions"),
])
def test_step3_method_behind_unadvertised_capability(method, cap):
    err = code_of(method, {"_meta": META}, caps=ALL_CAPS - {cap})
    assert err.code == -32601


def test_step3_comes_before_params_shape():
    assert code_of("tools/call", {"_meta": META, "name": 5}, caps=frozenset()).code == -32601


# ---------------------------------------------------------------- step 4
@pytest.mark.parametrize("method,params", [
    ("tools/call", {}),                              # no name
    ("tools/call", {"name": 5}),
    ("tools/call", {"name": "x", "arguments": [1]}),
    ("tools/list", {"cursor": 5}),
    ("resources/read", {}),
    ("prompts/get", {"name": "x", "arguments": {"a": 1}}),  # prompt arguments are strings
    ("completion/complete", {"ref": {"type": "ref/nothing"}, "argument": {"name": "a", "value": "b"}}),
])
def test_step4_params_that_do_not_fit(method, params):
    assert code_of(method, {"_meta": META, **params}).code == -32602


# ---------------------------------------------------------------- the same ladder through Server.handle
def handle(server, method, params, rid=1):
    req = codec.Request(rid, method, msgspec.Raw(json.dumps(params).encode()) if params is not None else None)
    reply = run(server.handle(req))
    return json.loads(reply.body), reply.error_code


def tools_only():
    s = Server("tools-only")

    @s.tool()
    def ping() -> str:
        return "pong"

    return s


def test_server_ladder_order():
    s = tools_only()
    assert handle(s, "resources/list", None)[1] == -32602
    assert handle(s, "resources/list", {"_meta": meta(version="1900-01-01")})[1] == -32022
    assert handle(s, "resources/list", {"_meta": META})[1] == -32601
    assert handle(s, "prompts/get", {"_meta": META, "name": "x"})[1] == -32601
    assert handle(s, "completion/complete", {"_meta": META})[1] == -32601
    body, code = handle(s, "tools/call", {"_meta": META, "name": "ping"})
    assert code is None and body["result"]["content"] == [{"type": "text", "text": "pong"}]


def test_server_reply_error_code_and_body_agree():
    body, code = handle(tools_only(), "tools/list", {"_meta": meta(version="x")}, rid="r")
    assert code == body["error"]["code"] == -32022
    assert body["id"] == "r"
    msgspec.convert(body, t.JSONRPCErrorResponse)


def test_capability_follows_registrations():
    s = Server("grows")
    assert handle(s, "tools/list", {"_meta": META})[1] == -32601

    @s.tool()
    def late() -> str:
        return "here"

    body, code = handle(s, "tools/list", {"_meta": META})
    assert code is None and [tool["name"] for tool in body["result"]["tools"]] == ["late"]
    s.remove_tool("late")
    assert handle(s, "tools/list", {"_meta": META})[1] == -32601


def test_initialize_is_refused_with_supported_versions():
    body, code = handle(tools_only(), "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert code == -32022
    assert body["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}
    assert "2026-07-28" in body["error"]["message"]
