"""The JSON-RPC codec: bytes in, one typed message or a precise error out; and back."""

from __future__ import annotations

import json

import msgspec
import pytest

from mcpkit.protocol import codec, errors
from mcpkit.protocol import types as t


def decode_error(data: bytes | str) -> codec.InvalidMessage:
    with pytest.raises(codec.InvalidMessage) as info:
        codec.decode(data)
    return info.value


# ---------------------------------------------------------------- requests and notifications
def test_request_decodes_with_raw_params():
    msg = codec.decode(b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}}')
    assert type(msg) is codec.Request
    assert (msg.id, msg.method) == (7, "tools/list")
    assert codec.params_dict(msg.params) == {"cursor": "x"}


def test_request_params_parsed_on_demand():
    msg = codec.decode('{"jsonrpc":"2.0","id":"a","method":"m","params":{"k":[1,2]}}', parse_params=True)
    assert msg.params == {"k": [1, 2]}


@pytest.mark.parametrize("rid", [0, -1, 2**62, "", "1", "ümlaut"])
def test_id_type_and_value_preserved(rid):
    msg = codec.decode(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "m"}))
    assert msg.id == rid and type(msg.id) is type(rid)


def test_request_without_params_has_none():
    msg = codec.decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    assert msg.params is None
    msg = codec.decode(b'{"jsonrpc":"2.0","id":1,"method":"m","params":null}')
    assert msg.params is None


def test_notification_has_no_id():
    msg = codec.decode(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}')
    assert type(msg) is codec.Notification
    assert codec.params_dict(msg.params) == {"requestId": 3}


def test_result_and_error_responses():
    ok = codec.decode(b'{"jsonrpc":"2.0","id":"x","result":{"a":1}}')
    assert type(ok) is codec.Response and ok.id == "x" and ok.result == {"a": 1} and ok.error is None
    bad = codec.decode(b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}')
    assert bad.id == 2 and bad.error == {"code": -32601, "message": "nope"}


def test_error_response_with_null_id_is_accepted():
    msg = codec.decode(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
    assert type(msg) is codec.Response and msg.id is None


# ---------------------------------------------------------------- -32700
@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","id":1,', b"{", b"", b"   ", b"hello", b"\xff\xfe", b'{"a":1} {"b":2}',
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":}', '{"unterminated',
])
def test_parse_errors(data):
    exc = decode_error(data)
    assert exc.error.code == errors.PARSE_ERROR == -32700
    assert exc.id is None
    assert exc.error.message.startswith("Parse error")


def test_parse_error_is_encoded_without_id():
    exc = decode_error(b"{")
    wire = json.loads(codec.encode_error(exc.id, exc.error))
    assert wire == {"jsonrpc": "2.0", "error": {"code": -32700, "message": exc.error.message}}
    msgspec.json.decode(codec.encode_error(exc.id, exc.error), type=t.JSONRPCErrorResponse)


@pytest.mark.parametrize("data", [b"[1,", b"123abc", b"[{]", b"[1] x"])
def test_invalid_json_of_any_shape_is_a_parse_error(data):
    assert decode_error(data).error.code == -32700


# ---------------------------------------------------------------- -32600
@pytest.mark.parametrize("data", [b"[]", b'[{"jsonrpc":"2.0","id":1,"method":"m"}]', b"1", b'"s"', b"null", b"true"])
def test_non_objects_are_invalid_requests(data):
    exc = decode_error(data)
    assert exc.error.code == errors.INVALID_REQUEST == -32600
    assert exc.id is None


def test_batch_error_says_batching_is_gone():
    assert "batch" in decode_error(b"[]").error.message.lower()


@pytest.mark.parametrize("rid", [1.5, 1.0, None, True, False, [], {}])
def test_id_that_is_neither_string_nor_integer(rid):
    exc = decode_error(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "m"}))
    assert exc.error.code == -32600
    assert exc.id is None


@pytest.mark.parametrize("params", [[], [1], "x", 1, True])
def test_params_must_be_an_object_and_the_id_is_kept(params):
    for parse in (False, True):
        with pytest.raises(codec.InvalidMessage) as info:
            codec.decode(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "m", "params": params}), parse_params=parse)
        assert info.value.error.code == -32600
        assert info.value.id == 9


@pytest.mark.parametrize("msg", [
    {"id": 1, "method": "m"},
    {"jsonrpc": "1.0", "id": 1, "method": "m"},
    {"jsonrpc": 2.0, "id": 1, "method": "m"},
])
def test_jsonrpc_must_be_2_0(msg):
    exc = decode_error(json.dumps(msg))
    assert exc.error.code == -32600 and exc.id == 1


def test_method_must_be_a_string():
    exc = decode_error(b'{"jsonrpc":"2.0","id":4,"method":5}')
    assert exc.error.code == -32600 and exc.id == 4


def test_object_without_method_result_or_error():
    exc = decode_error(b'{"jsonrpc":"2.0","id":4}')
    assert exc.error.code == -32600 and exc.id == 4


@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","result":{}}',
    b'{"jsonrpc":"2.0","id":1,"error":"bad"}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}',
])
def test_malformed_responses(data):
    assert decode_error(data).error.code == -32600


# ---------------------------------------------------------------- encoding
def test_encoders_produce_wire_types():
    r = codec.encode_result(3, {"resultType": "complete"})
    assert msgspec.json.decode(r, type=t.JSONRPCResultResponse).id == 3
    e = codec.encode_error("x", errors.method_not_found("nope"))
    err = msgspec.json.decode(e, type=t.JSONRPCErrorResponse)
    assert err.id == "x" and err.error.code == -32601
    q = codec.encode_request(1, "tools/list", {"_meta": {}})
    assert msgspec.json.decode(q, type=t.JSONRPCRequest).method == "tools/list"
    n = codec.encode_notification("notifications/cancelled", {"requestId": 1})
    assert msgspec.json.decode(n, type=t.JSONRPCNotification).params == {"requestId": 1}
    assert json.loads(codec.encode_notification("x")) == {"jsonrpc": "2.0", "method": "x"}


def test_encoded_messages_are_single_lines():
    out = codec.encode_result(1, {"text": "a\nb\r\nc"})
    assert b"\n" not in out and b"\r" not in out


def test_round_trip():
    data = codec.encode_request("id-1", "tools/call", {"name": "x", "arguments": {"a": [1, {"b": None}]}})
    msg = codec.decode(data, parse_params=True)
    assert msg == codec.Request("id-1", "tools/call", {"name": "x", "arguments": {"a": [1, {"b": None}]}})


# ---------------------------------------------------------------- the error model
def test_error_codes():
    assert (errors.PARSE_ERROR, errors.INVALID_REQUEST, errors.METHOD_NOT_FOUND, errors.INVALID_PARAMS,
            errors.INTERNAL_ERROR) == (-32700, -32600, -32601, -32602, -32603)
    assert (errors.HEADER_MISMATCH, errors.MISSING_REQUIRED_CLIENT_CAPABILITY,
            errors.UNSUPPORTED_PROTOCOL_VERSION) == (-32020, -32021, -32022)


def test_unsupported_version_shape():
    exc = errors.unsupported_version("1900-01-01", ("2026-07-28",))
    assert exc.code == -32022
    assert exc.to_error()["data"] == {"supported": ["2026-07-28"], "requested": "1900-01-01"}
    assert "2026-07-28" in exc.message


def test_missing_capability_shape():
    exc = errors.missing_capability({"elicitation": {"form": {}}})
    assert exc.code == -32021
    assert exc.to_error()["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert "elicitation" in exc.message


def test_header_mismatch_and_others():
    assert errors.header_mismatch("x").code == -32020
    assert errors.method_not_found("a/b").code == -32601 and "a/b" in errors.method_not_found("a/b").message
    assert errors.invalid_params("bad", {"k": 1}).to_error() == {"code": -32602, "message": "bad", "data": {"k": 1}}
    assert errors.internal_error().to_error() == {"code": -32603, "message": "Internal error"}


def test_error_without_data_omits_the_key():
    assert "data" not in errors.method_not_found("x").to_error()


def test_mcp_error_is_an_exception_with_code_message_data():
    exc = errors.MCPError(-32602, "bad", {"uri": "x://"})
    assert isinstance(exc, Exception)
    assert (exc.code, exc.message, exc.data, str(exc)) == (-32602, "bad", {"uri": "x://"}, "bad")
    assert "-32602" in repr(exc)
