"""Property tests (Hypothesis) for the pure protocol core: every input gets an answer of the
documented kind, never another exception.

- ``codec.decode``: any bytes or text -> a message, or ``codec.InvalidMessage`` whose error
  encodes (with an int/str/None id); a returned request's params decode.
- ``inbound.check_request``: any JSON params -> ``Checked`` or ``errors.MCPError``.
- ``headers``: any header dict/values -> a result or ``errors.MCPError`` (``ValueError``
  where the function documents it).

Example counts are fixed and the runs derandomized so the file takes a few seconds and CI
sees the same cases each time; set ``MCPKIT_PROPERTY_EXAMPLES=5000`` (and optionally
``MCPKIT_PROPERTY_RANDOM=1``) to explore further.
"""

from __future__ import annotations

import json
import os
from typing import Any

import msgspec
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mcpkit.protocol import codec, errors, headers, inbound, versions  # noqa: E402
from mcpkit.protocol.codec import MAX_NESTING_DEPTH  # noqa: E402

SCALE = int(os.environ.get("MCPKIT_PROPERTY_EXAMPLES", "0"))


def examples(n: int) -> Any:
    return settings(max_examples=SCALE or n, deadline=None, database=None,
                    derandomize=not os.environ.get("MCPKIT_PROPERTY_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


VERSION = versions.MODERN_VERSIONS[0]
METHODS = [*inbound.METHOD_CAPABILITY, "initialize", "ping", "notifications/cancelled", "tasks/get", "x/unknown", ""]
CAPABILITIES = ["tools", "resources", "prompts", "completions"]

# ------------------------------------------------------------------ strategies
text = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["", "a", "\u00e9", "\u2603", "\U0001f600", "[", "]}", '"', "\\", "\x00", "\ufeff", "=?base64?QQ==?="])
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | text
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                           max_leaves=20)
ids = st.integers(-(2**63), 2**63) | text | st.none() | st.booleans() | st.floats(allow_nan=False) | st.just([]) | st.just({})


@st.composite
def metas(draw: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if draw(st.booleans()):
        version = st.sampled_from([VERSION, "2025-11-25", "1999-01-01"]) | json_values
        meta["io.modelcontextprotocol/protocolVersion"] = draw(version)
    if draw(st.booleans()):
        meta["io.modelcontextprotocol/clientCapabilities"] = draw(
            st.just({}) | st.just({"elicitation": {"form": {}}, "sampling": {}}) | json_values)
    if draw(st.booleans()):
        meta["io.modelcontextprotocol/clientInfo"] = draw(st.just({"name": "p", "version": "1"}) | json_values)
    if draw(st.booleans()):
        meta["io.modelcontextprotocol/logLevel"] = draw(st.sampled_from(["debug", "loud"]) | json_values)
    if draw(st.booleans()):
        meta["progressToken"] = draw(json_values)
    meta.update(draw(st.dictionaries(text, json_values, max_size=2)))
    return meta


@st.composite
def params_objects(draw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        params["_meta"] = draw(metas() | json_values)
    for key in draw(st.lists(st.sampled_from(["name", "arguments", "uri", "cursor", "ref", "argument", "requestState",
                                              "inputResponses", "taskId", "context"]), max_size=4)):
        params[key] = draw(json_values | st.just("greet") | st.just({"a": 1}))
    params.update(draw(st.dictionaries(text, json_values, max_size=2)))
    return params


@st.composite
def frames(draw: Any) -> bytes:
    """JSON-RPC-shaped frames, valid or not, then sometimes mutated at the byte level."""
    msg: dict[str, Any] = {}
    for key, values in (("jsonrpc", st.just("2.0") | json_values), ("id", ids),
                        ("method", st.sampled_from(METHODS) | json_values), ("params", params_objects() | json_values),
                        ("result", json_values), ("error", json_values)):
        if draw(st.integers(0, 3)):
            msg[key] = draw(values)
    data = json.dumps(msg, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["insert", "delete", "truncate", "bom", "surrogate", "nan", "deep", "bad-utf8"]))
        at = draw(st.integers(0, len(data)))
        if op == "insert":
            piece = st.binary(min_size=1, max_size=4) | st.sampled_from([b"[", b"{", b'"', b"\\", b",", b"}"])
            data = data[:at] + draw(piece) + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 4)):]
        elif op == "truncate":
            data = data[:at]
        elif op == "bom":
            data = b"\xef\xbb\xbf" + data if draw(st.booleans()) else data[:at] + b"\xef\xbb\xbf" + data[at:]
        elif op == "surrogate":
            data = data.replace(b'"2.0"', b'"\\ud800"', 1) if draw(st.booleans()) else data[:at] + b'"\\udc00"' + data[at:]
        elif op == "nan":
            data = data.replace(b"null", b"NaN", 1)
        elif op == "deep":
            depth = draw(st.integers(MAX_NESTING_DEPTH - 4, MAX_NESTING_DEPTH + 4) | st.integers(0, 3000))
            opener = draw(st.sampled_from([b"[", b'{"a":']))
            closer = b"]" if opener == b"[" else b"}"
            data = data.replace(b"null", opener * depth + b"0" + closer * depth, 1)
        else:
            data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])) + data[at:]
    return data


# ------------------------------------------------------------------ codec
def check_decode(data: bytes | str) -> None:
    try:
        msg = codec.decode(data)
    except codec.InvalidMessage as exc:
        assert exc.error.code in (errors.PARSE_ERROR, errors.INVALID_REQUEST), exc.error
        assert exc.id is None or type(exc.id) in (int, str), exc.id
        reply = json.loads(codec.encode_error(exc.id, exc.error))  # the answer can always be sent
        assert reply.get("id") == exc.id
        return
    assert type(msg) in (codec.Request, codec.Notification, codec.Response)
    if type(msg) is not codec.Response:
        params = codec.params_dict(msg.params)  # what decode hands out decodes again
        assert params is None or type(params) is dict
    if type(msg) is codec.Request:
        assert type(msg.id) in (int, str)
        codec.encode_result(msg.id, {})


@examples(600)
@given(st.binary(max_size=300))
def test_decode_any_bytes(data: bytes) -> None:
    check_decode(data)


@examples(300)
@given(st.text(max_size=200))
def test_decode_any_text(data: str) -> None:
    check_decode(data)


@examples(400)
@given(frames())
def test_decode_mutated_frames(data: bytes) -> None:
    check_decode(data)
    check_decode(data.decode("utf-8", "surrogateescape"))


@examples(300)
@given(st.integers(0, 3000), st.sampled_from(["[", "{", "mixed"]), st.booleans())
def test_decode_deep_nesting(depth: int, kind: str, closed: bool) -> None:
    if kind == "mixed":
        opens, closes = b'[{"k":' * (depth // 2), b"}]" * (depth // 2)
    elif kind == "[":
        opens, closes = b"[" * depth, b"]" * depth
    else:
        opens, closes = b'{"k":' * depth, b"}" * depth
    value = opens + b"1" + (closes if closed else b"")
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"v":' + value + b"}}"
    check_decode(data)
    nesting = 2 + (depth // 2) * 2 if kind == "mixed" else 2 + depth
    if closed and nesting > MAX_NESTING_DEPTH:
        with pytest.raises(codec.InvalidMessage) as info:
            codec.decode(data)
        assert info.value.error.code == errors.INVALID_REQUEST and info.value.id == 1


@examples(200)
@given(st.integers(-(2**63), 2**63) | text, st.sampled_from(METHODS), params_objects())
def test_valid_requests_round_trip(rid: Any, method: str, params: dict[str, Any]) -> None:
    try:
        data = codec.encode_request(rid, method, params)
    except UnicodeEncodeError:
        return  # a lone surrogate has no UTF-8 form: not a frame anyone can send
    msg = codec.decode(data)
    assert type(msg) is codec.Request and msg.id == rid and type(msg.id) is type(rid) and msg.method == method
    assert codec.params_dict(msg.params) == msgspec.json.decode(msgspec.json.encode(params))


# ------------------------------------------------------------------ the validation ladder
@examples(300)
@given(st.sampled_from(METHODS) | text, params_objects() | json_values, st.booleans(),
       st.lists(st.sampled_from(CAPABILITIES), unique=True))
def test_check_request_answers_checked_or_mcp_error(method: str, params: Any, as_raw: bool, caps: list[str]) -> None:
    if as_raw:
        try:
            raw: Any = msgspec.Raw(msgspec.json.encode(params))
        except UnicodeEncodeError:
            return
        if not isinstance(params, dict) and params is not None:
            return  # decode() hands out only object params
    else:
        raw = params if isinstance(params, dict) else None
    try:
        checked = inbound.check_request(method, raw, versions.MODERN_VERSIONS, caps)
    except errors.MCPError as exc:
        assert isinstance(exc.code, int) and isinstance(exc.message, str)
        json.loads(codec.encode_error(1, exc))
        return
    assert isinstance(checked, inbound.Checked) and checked.method == method
    assert checked.meta.protocolVersion in versions.MODERN_VERSIONS


# ------------------------------------------------------------------ header rules
header_names = st.sampled_from(["mcp-protocol-version", "mcp-method", "mcp-name", "mcp-param-region", "mcp-param-n",
                                "MCP-Protocol-Version", "Mcp-Name", "host"]) | st.text(max_size=12)
header_values = (st.text(max_size=30) | st.sampled_from([VERSION, "tools/call", "greet", " greet ", "=?base64?Z3JlZXQ=?=",
                                                        "=?base64?!!?=", "=?base64?/w==?=", "\x7f", "caf\u00e9", "1", "true"]))
annotation_maps = st.none() | st.dictionaries(st.text(max_size=8), st.lists(st.text(max_size=6), min_size=1, max_size=3)
                                              .map(tuple), max_size=3)


@examples(300)
@given(st.dictionaries(header_names, header_values, max_size=6), st.sampled_from(METHODS) | text,
       st.none() | params_objects() | json_values, st.none() | st.sampled_from([VERSION, "2025-11-25"]) | text,
       annotation_maps, st.booleans(), st.booleans())
def test_check_request_headers_answers_none_or_mcp_error(hdrs: dict[str, str], method: str, params: Any,
                                                        body_version: str | None, annotations: Any,
                                                        notification: bool, lowered: bool) -> None:
    if lowered:
        hdrs = {k.lower(): v for k, v in hdrs.items()}
    try:
        result = headers.check_request_headers(hdrs, method, params, body_version, annotations,
                                               notification=notification, lowered=lowered)
    except errors.MCPError as exc:
        assert exc.code == errors.HEADER_MISMATCH
        json.loads(codec.encode_error(1, exc))
        return
    assert result is None


@examples(800)
@given(header_values | st.text(max_size=60))
def test_decode_value_answers_text_or_value_error(raw: str) -> None:
    try:
        value = headers.decode_value(raw)
    except ValueError:
        return
    assert isinstance(value, str)


@examples(500)
@given(st.integers(-(2**60), 2**60) | st.booleans() | st.text(max_size=40))
def test_encode_value_round_trips_through_decode_value(value: Any) -> None:
    try:
        wire = headers.encode_value(value)
    except ValueError:
        assert isinstance(value, int) and abs(value) > headers.MAX_SAFE_INTEGER
        return
    except UnicodeEncodeError:
        return  # lone surrogates: no UTF-8 form
    expected = ("true" if value else "false") if isinstance(value, bool) else str(value)
    assert headers.decode_value(wire) == expected


@examples(250)
@given(st.sampled_from(METHODS) | text, st.none() | params_objects() | json_values, annotation_maps,
       st.sampled_from([VERSION]) | text)
def test_client_headers_answer_a_dict_or_value_error(method: str, params: Any, annotations: Any, version: str) -> None:
    try:
        out = headers.client_headers(method, params, version, annotations)
    except ValueError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


property_schemas = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean", "object", "number"])},
                                         optional={"x-mcp-header": text | json_values})


@examples(250)
@given(json_values | st.builds(lambda props: {"type": "object", "properties": props},
                               st.dictionaries(text, property_schemas, max_size=4)))
def test_header_annotations_answer_a_map_or_invalid_annotation(schema: Any) -> None:
    try:
        out = headers.header_annotations(schema)
    except headers.InvalidHeaderAnnotation:
        return
    assert isinstance(out, dict)
