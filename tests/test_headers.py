"""Tests for mcpkit.protocol.headers: SEP-2243 header mirroring and validation."""

from __future__ import annotations

import base64

import pytest

from mcpkit.protocol import headers as h
from mcpkit.protocol.errors import HEADER_MISMATCH, MCPError
from mcpkit.protocol.headers import (
    InvalidHeaderAnnotation,
    argument_at,
    check_request_headers,
    client_headers,
    decode_value,
    encode_value,
    header_annotations,
    is_header_mismatch,
    needs_encoding,
)

V = "2026-07-28"


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def lower(hdrs: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in hdrs.items()}


def mismatch(fn, *args, **kwargs) -> MCPError:
    with pytest.raises(MCPError) as info:
        fn(*args, **kwargs)
    assert info.value.code == HEADER_MISMATCH == -32020
    assert info.value.message.startswith("Header mismatch: ")
    return info.value


# --------------------------------------------------------------------------- constants


def test_header_name_constants():
    assert h.PROTOCOL_VERSION_HEADER == "MCP-Protocol-Version"
    assert h.METHOD_HEADER == "Mcp-Method"
    assert h.NAME_HEADER == "Mcp-Name"
    assert h.PARAM_HEADER_PREFIX == "Mcp-Param-"
    assert h.param_header_name("Region") == "Mcp-Param-Region"
    assert h.MAX_SAFE_INTEGER == 9007199254740991
    assert dict(h.NAME_SOURCES) == {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                                    "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


# --------------------------------------------------------------------------- encode_value

SPEC_ENCODING_TABLE = [
    # streamable-http.mdx "Encoding examples"
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    # SEP-2243 "Value Encoding Edge Cases"
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    (" us-west1 ", "=?base64?IHVzLXdlc3QxIA==?="),
    ("us west 1", "us west 1"),
    ("日本語", "=?base64?5pel5pys6Kqe?="),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    ("", ""),
]


@pytest.mark.parametrize(("value", "expected"), SPEC_ENCODING_TABLE)
def test_encode_value_spec_vectors(value, expected):
    assert encode_value(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "true"), (False, "false"), (42, "42"), (-7, "-7"), (0, "0")],
)
def test_encode_value_non_strings(value, expected):
    assert encode_value(value) == expected


def test_encode_value_integer_safe_range():
    assert encode_value(2**53 - 1) == "9007199254740991"
    assert encode_value(-(2**53 - 1)) == "-9007199254740991"
    with pytest.raises(ValueError):
        encode_value(2**53)
    with pytest.raises(ValueError):
        encode_value(-(2**53))


@pytest.mark.parametrize("value", [1.5, None, [1], {"a": 1}, b"x"])
def test_encode_value_rejects_other_types(value):
    with pytest.raises(TypeError):
        encode_value(value)


@pytest.mark.parametrize(
    "value",
    [
        "trailing\t",  # trailing tab
        "in\tside",  # HTAB is a control character for the encoding rule
        "nul\x00",
        "del\x7f",
        "bell\x07",
        "café",
        "\u00a0nbsp",
        "emoji 🎉",
        " ",
        "\t",
        "=?base64?=",  # prefix and suffix overlap: still looks like a sentinel
        "=?base64?SGVsbG8=?=",  # a valid sentinel sent as a literal must be wrapped
        "=?base64??=",
    ],
)
def test_encode_value_wraps_unsafe_strings_and_round_trips(value):
    assert needs_encoding(value)
    encoded = encode_value(value)
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert decode_value(encoded) == value


@pytest.mark.parametrize(
    "value",
    [
        "us-west1",
        "file:///path/to/file%20name.txt",
        "https://example.com/resource?id=123",
        "my-tool-name",
        "my_tool_name",
        "a b",
        "=?BASE64?x?=",  # markers are case-sensitive: not a sentinel
        "=?base64?SGVsbG8=",  # no suffix
        "SGVsbG8=?=",  # no prefix
        "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./",
    ],
)
def test_encode_value_keeps_plain_strings(value):
    assert not needs_encoding(value)
    assert encode_value(value) == value
    assert decode_value(value) == value


# --------------------------------------------------------------------------- decode_value


def test_decode_value_valid_base64():
    assert decode_value("=?base64?SGVsbG8=?=") == "Hello"
    assert decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=") == "Hello, 世界"
    assert decode_value("=?base64??=") == ""


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # bad padding (SEP-2243 table)
        "=?base64?SGVs!!!bG8=?=",  # non-alphabet characters (SEP-2243 table)
        "=?base64?SGVs bG8=?=",  # inner space
        "=?base64?SGVsbG8=====?=",  # excess padding
        "=?base64?=SGVsbG8?=",  # leading padding
        "=?base64?-_8=?=",  # URL-safe alphabet is not standard Base64
        "=?base64?/w==?=",  # decodes to 0xFF: not UTF-8
        "=?base64?wyg=?=",  # truncated UTF-8 sequence
    ],
)
def test_decode_value_rejects_bad_sentinels(raw):
    with pytest.raises(ValueError):
        decode_value(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("SGVsbG8=", "SGVsbG8="),  # missing prefix: literal
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # missing suffix: literal
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # non-lowercase prefix: literal
        ("=?Base64?SGVsbG8=?=", "=?Base64?SGVsbG8=?="),
        ("=?base64?=", "=?base64?="),  # too short to be a sentinel
        ("  foo ", "foo"),  # OWS trimmed
        ("\tfoo\t", "foo"),
        (" =?base64?SGVsbG8=?= ", "Hello"),  # OWS trimmed before sentinel detection
        ("a\tb", "a\tb"),  # HTAB is a legal field-value character
        ("", ""),
    ],
)
def test_decode_value_literals_and_whitespace(raw, expected):
    assert decode_value(raw) == expected


@pytest.mark.parametrize("raw", ["a\nb", "a\rb", "a\x00b", "a\x7fb", "café", "Ã©"])
def test_decode_value_rejects_invalid_characters(raw):
    with pytest.raises(ValueError):
        decode_value(raw)


@pytest.mark.parametrize(
    "value",
    ["plain", " lead", "trail ", "多字节", "a\r\nb", "=?base64?x?=", "", "\x00", "tab\there", "x" * 5000],
)
def test_encode_decode_round_trip(value):
    assert decode_value(encode_value(value)) == value


# --------------------------------------------------------------------------- header_annotations


def schema(**props) -> dict:
    return {"type": "object", "properties": props}


def test_annotations_spec_example():
    s = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "The region", "x-mcp-header": "Region"},
            "query": {"type": "string"},
        },
        "required": ["region", "query"],
    }
    assert header_annotations(s) == {"Region": ("region",)}


def test_annotations_none_and_non_dict():
    assert header_annotations({"type": "object"}) == {}
    assert header_annotations({"type": "object", "additionalProperties": False}) == {}
    assert header_annotations(None) == {}
    assert header_annotations([]) == {}


def test_annotations_all_primitive_types_and_nested_properties():
    s = schema(
        s={"type": "string", "x-mcp-header": "S"},
        i={"type": "integer", "x-mcp-header": "I"},
        b={"type": "boolean", "x-mcp-header": "B"},
        ctx={
            "type": "object",
            "properties": {"deep": {"type": "object", "properties": {"label": {"type": "string", "x-mcp-header": "Nested-Label"}}}},
        },
    )
    assert header_annotations(s) == {"S": ("s",), "I": ("i",), "B": ("b",), "Nested-Label": ("ctx", "deep", "label")}


def test_annotations_property_names_that_look_like_keywords():
    # Keys of a `properties` map are property names, never keywords.
    s = schema(
        properties={"type": "string", "x-mcp-header": "Props"},
        items={"type": "object", "properties": {"x-mcp-header": {"type": "string"}}},
        **{"x-mcp-header": {"type": "integer", "x-mcp-header": "Weird"}},
    )
    assert header_annotations(s) == {"Props": ("properties",), "Weird": ("x-mcp-header",)}


def test_annotations_standard_header_like_names_allowed():
    # SEP-2243: "Method" produces Mcp-Param-Method, not Mcp-Method.
    s = schema(m={"type": "string", "x-mcp-header": "Method"}, n={"type": "string", "x-mcp-header": "Name"})
    assert header_annotations(s) == {"Method": ("m",), "Name": ("n",)}


def test_annotations_every_tchar_allowed():
    name = "!#$%&'*+-.^_`|~09AZaz"
    assert header_annotations(schema(p={"type": "string", "x-mcp-header": name})) == {name: ("p",)}


def test_annotations_ignore_instance_data_keywords():
    # An "x-mcp-header" key inside default/const/enum/examples is data, not an annotation.
    s = schema(
        obj={
            "type": "object",
            "default": {"x-mcp-header": "D"},
            "const": {"x-mcp-header": "C"},
            "enum": [{"x-mcp-header": "E"}],
            "examples": [{"x-mcp-header": "X"}],
        },
        r={"type": "string", "x-mcp-header": "Region"},
    )
    s["example"] = {"region": "us", "x-mcp-header": "noise"}
    assert header_annotations(s) == {"Region": ("r",)}


def invalid(s) -> str:
    with pytest.raises(InvalidHeaderAnnotation) as info:
        header_annotations(s)
    assert isinstance(info.value, ValueError)
    assert info.value.reason == str(info.value)
    assert "x-mcp-header" in info.value.reason
    return info.value.reason


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "empty"),
        ("My Region", "token"),  # SEP-2243: contains space
        ("Region:Primary", "token"),  # contains colon
        ("Région", "token"),  # non-ASCII
        ("Region\t1", "control"),  # control character
        ("Region\r\nX-Evil: 1", "control"),
        ("Region\n", "control"),
        ("Reg\x7fion", "control"),
        ("Reg\x00", "control"),
        ("(Region)", "token"),
        ("Region/1", "token"),
        ('"Region"', "token"),
        ("Reg,ion", "token"),
        ("Reg@ion", "token"),
    ],
)
def test_annotations_reject_bad_names(value, fragment):
    assert fragment in invalid(schema(p={"type": "string", "x-mcp-header": value}))


@pytest.mark.parametrize("value", [None, 5, True, ["Region"], {"n": "Region"}])
def test_annotations_reject_non_string_names(value):
    assert "must be a string" in invalid(schema(p={"type": "string", "x-mcp-header": value}))


@pytest.mark.parametrize(
    ("a", "b"),
    [("Region", "Region"), ("Region", "REGION"), ("MyField", "myfield")],
)
def test_annotations_reject_duplicates_case_insensitively(a, b):
    reason = invalid(schema(f1={"type": "string", "x-mcp-header": a}, f2={"type": "string", "x-mcp-header": b}))
    assert "unique" in reason and "/properties/f1" in reason


def test_annotations_duplicate_across_nesting_levels():
    s = schema(
        a={"type": "string", "x-mcp-header": "Tenant"},
        o={"type": "object", "properties": {"b": {"type": "string", "x-mcp-header": "tenant"}}},
    )
    assert "unique" in invalid(s)


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "number", "x-mcp-header": "Score"},
        {"type": "object", "x-mcp-header": "Data"},
        {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"},
        {"type": "null", "x-mcp-header": "Nil"},
        {"x-mcp-header": "NoType"},
        {"enum": ["a", "b"], "x-mcp-header": "EnumOnly"},
        {"type": ["string", "null"], "x-mcp-header": "Nullable"},
        {"type": ["string"], "x-mcp-header": "ListType"},
        {"type": "String", "x-mcp-header": "CaseType"},
        {"anyOf": [{"type": "string"}, {"type": "null"}], "x-mcp-header": "Opt"},
    ],
)
def test_annotations_reject_non_primitive_types(prop):
    reason = invalid(schema(p=prop))
    assert "only 'string', 'integer' or 'boolean'" in reason


def test_annotations_reject_root_annotation():
    assert "does not annotate a property" in invalid({"type": "object", "x-mcp-header": "Root"})


UNREACHABLE = {
    "items": schema(tags={"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}}),
    "items-array": schema(tags={"type": "array", "items": [{"type": "string", "x-mcp-header": "Tag"}]}),
    "items-object": schema(
        rows={"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string", "x-mcp-header": "Id"}}}}
    ),
    "prefixItems": schema(t={"type": "array", "prefixItems": [{"type": "string", "x-mcp-header": "T"}]}),
    "contains": schema(t={"type": "array", "contains": {"type": "string", "x-mcp-header": "T"}}),
    "additionalProperties": {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "Extra"}},
    "patternProperties": {"type": "object", "patternProperties": {"^r": {"type": "string", "x-mcp-header": "R"}}},
    "unevaluatedProperties": {"type": "object", "unevaluatedProperties": {"type": "string", "x-mcp-header": "U"}},
    "propertyNames": {"type": "object", "propertyNames": {"type": "string", "x-mcp-header": "P"}},
    "oneOf": {"type": "object", "oneOf": [{"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}]},
    "anyOf": {"type": "object", "anyOf": [{"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}]},
    "allOf": {"type": "object", "allOf": [{"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}]},
    "not": {"type": "object", "not": {"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    "if": {"type": "object", "if": {"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    "then": {"type": "object", "then": {"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    "else": {"type": "object", "else": {"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    "$defs-ref-target": {
        "type": "object",
        "$defs": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "properties": {"region": {"$ref": "#/$defs/region"}},
    },
    "$defs-unused": {"type": "object", "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}},
    "definitions": {"type": "object", "definitions": {"r": {"type": "string", "x-mcp-header": "R"}}},
    "dependentSchemas": {
        "type": "object",
        "dependentSchemas": {"a": {"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}},
    },
    "nested-composition": schema(
        o={"type": "object", "allOf": [{"properties": {"r": {"type": "string", "x-mcp-header": "R"}}}]}
    ),
    "unknown-keyword": {"type": "object", "x-vendor": {"r": {"type": "string", "x-mcp-header": "R"}}},
}


@pytest.mark.parametrize("where", sorted(UNREACHABLE))
def test_annotations_reject_unreachable(where):
    assert "statically reachable" in invalid(UNREACHABLE[where])


def test_annotations_invalid_even_when_other_annotations_are_fine():
    s = schema(ok={"type": "string", "x-mcp-header": "Ok"})
    s["anyOf"] = [{"properties": {"x": {"type": "string", "x-mcp-header": "X"}}}]
    invalid(s)


def test_annotations_reason_names_location():
    reason = invalid(schema(o={"type": "object", "properties": {"s": {"type": "number", "x-mcp-header": "S"}}}))
    assert "/properties/o/properties/s" in reason and "'S'" in reason and "'number'" in reason


def test_annotations_deep_schema_does_not_recurse():
    node: dict = {"type": "string", "x-mcp-header": "Deep"}
    path = []
    for i in range(5000):
        node = {"type": "object", "properties": {f"p{i}": node}}
        path.append(f"p{i}")
    result = header_annotations(node)
    assert result == {"Deep": tuple(reversed(path))}


# The tools served by the conformance scenario http-invalid-tool-headers.
CONFORMANCE_TOOLS = {
    "valid_tool": schema(region={"type": "string", "x-mcp-header": "Region"}),
    "invalid_empty_header": schema(value={"type": "string", "x-mcp-header": ""}),
    "invalid_object_header": schema(data={"type": "object", "x-mcp-header": "Data"}),
    "invalid_array_header": schema(items={"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}),
    "invalid_null_header": schema(nil={"type": "null", "x-mcp-header": "Nil"}),
    "invalid_number_header": schema(score={"type": "number", "x-mcp-header": "Score"}),
    "invalid_duplicate_same_case": schema(
        field1={"type": "string", "x-mcp-header": "Region"}, field2={"type": "string", "x-mcp-header": "Region"}
    ),
    "invalid_duplicate_diff_case": schema(
        field1={"type": "string", "x-mcp-header": "MyField"}, field2={"type": "string", "x-mcp-header": "myfield"}
    ),
    "invalid_space_in_name": schema(value={"type": "string", "x-mcp-header": "My Region"}),
    "invalid_colon_in_name": schema(value={"type": "string", "x-mcp-header": "Region:Primary"}),
    "invalid_non_ascii_name": schema(value={"type": "string", "x-mcp-header": "Région"}),
    "invalid_control_char_name": schema(value={"type": "string", "x-mcp-header": "Region\t1"}),
}


def test_conformance_invalid_tool_headers():
    kept = []
    for name, s in CONFORMANCE_TOOLS.items():
        try:
            header_annotations(s)
        except InvalidHeaderAnnotation:
            continue
        kept.append(name)
    assert kept == ["valid_tool"]


# --------------------------------------------------------------------------- argument_at


def test_argument_at():
    args = {"a": 1, "n": None, "o": {"b": "x", "z": None}, "s": ""}
    assert argument_at(args, ("a",)) == 1
    assert argument_at(args, ("o", "b")) == "x"
    assert argument_at(args, ("s",)) == ""
    assert argument_at(args, ("n",)) is None
    assert argument_at(args, ("o", "z")) is None
    assert argument_at(args, ("missing",)) is None
    assert argument_at(args, ("a", "b")) is None  # intermediate is not an object
    assert argument_at(None, ("a",)) is None


# --------------------------------------------------------------------------- client_headers

CUSTOM_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "debug": {"type": "boolean", "x-mcp-header": "Debug"},
        "empty_val": {"type": "string", "x-mcp-header": "EmptyVal"},
        "method_val": {"type": "string", "x-mcp-header": "Method"},
        "float_val": {"type": "number"},
        "non_ascii_val": {"type": "string", "x-mcp-header": "NonAscii"},
        "whitespace_val": {"type": "string", "x-mcp-header": "Whitespace"},
        "leading_space_val": {"type": "string", "x-mcp-header": "LeadingSpace"},
        "trailing_space_val": {"type": "string", "x-mcp-header": "TrailingSpace"},
        "internal_space_val": {"type": "string", "x-mcp-header": "InternalSpace"},
        "control_char_val": {"type": "string", "x-mcp-header": "ControlChar"},
        "crlf_val": {"type": "string", "x-mcp-header": "CrLf"},
        "tab_val": {"type": "string", "x-mcp-header": "Tab"},
        "query": {"type": "string"},
    },
    "required": ["region", "priority", "query"],
}
CUSTOM_ARGS = {
    "region": "us-west1",
    "priority": 42,
    "verbose": False,
    "debug": True,
    "empty_val": "",
    "method_val": "test-method",
    "float_val": 3.14159,
    "non_ascii_val": "Hello, 世界",
    "whitespace_val": " padded ",
    "leading_space_val": " us-west1",
    "trailing_space_val": "us-west1 ",
    "internal_space_val": "us west 1",
    "control_char_val": "line1\nline2",
    "crlf_val": "line1\r\nline2",
    "tab_val": "\tindented",
    "query": "SELECT * FROM users",
}


def test_client_headers_conformance_custom_headers():
    ann = header_annotations(CUSTOM_SCHEMA)
    got = client_headers("tools/call", {"name": "test_custom_headers", "arguments": CUSTOM_ARGS}, V, ann)
    assert got == {
        "MCP-Protocol-Version": V,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "test_custom_headers",
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
        "Mcp-Param-Debug": "true",
        "Mcp-Param-EmptyVal": "",
        "Mcp-Param-Method": "test-method",
        "Mcp-Param-NonAscii": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "Mcp-Param-Whitespace": "=?base64?IHBhZGRlZCA=?=",
        "Mcp-Param-LeadingSpace": "=?base64?IHVzLXdlc3Qx?=",
        "Mcp-Param-TrailingSpace": "=?base64?dXMtd2VzdDEg?=",
        "Mcp-Param-InternalSpace": "us west 1",
        "Mcp-Param-ControlChar": "=?base64?bGluZTEKbGluZTI=?=",
        "Mcp-Param-CrLf": "=?base64?bGluZTENCmxpbmUy?=",
        "Mcp-Param-Tab": "=?base64?CWluZGVudGVk?=",
    }
    # Every produced value is a legal header value and decodes back to the argument.
    for name, path in ann.items():
        raw = got["Mcp-Param-" + name]
        assert "\n" not in raw and "\r" not in raw and raw == raw.strip()
        body = argument_at(CUSTOM_ARGS, path)
        expected = body if isinstance(body, str) else encode_value(body)
        assert decode_value(raw) == expected
    # and the server side accepts what the client built
    check_request_headers(lower(got), "tools/call", {"name": "test_custom_headers", "arguments": CUSTOM_ARGS}, V, ann)


def test_client_headers_omit_null_and_absent():
    ann = header_annotations(CUSTOM_SCHEMA)
    args = {"region": "us-east1", "priority": 1, "verbose": None, "query": "SELECT 1"}
    got = client_headers("tools/call", {"name": "test_custom_headers_null", "arguments": args}, V, ann)
    assert "Mcp-Param-Verbose" not in got
    assert "Mcp-Param-Debug" not in got
    assert [k for k in got if k.startswith("Mcp-Param-")] == ["Mcp-Param-Region", "Mcp-Param-Priority"]


def test_client_headers_spec_examples():
    ann = header_annotations(
        schema(region={"type": "string", "x-mcp-header": "Region"}, query={"type": "string"})
    )
    params = {"name": "execute_sql", "arguments": {"region": "us-west1", "query": "SELECT * FROM users"}}
    assert client_headers("tools/call", params, V, ann) == {
        "MCP-Protocol-Version": V,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute_sql",
        "Mcp-Param-Region": "us-west1",
    }
    uri = "file:///projects/myapp/config.json"
    assert client_headers("resources/read", {"uri": uri}, V, None) == {
        "MCP-Protocol-Version": V,
        "Mcp-Method": "resources/read",
        "Mcp-Name": uri,
    }
    assert client_headers("prompts/get", {"name": "code_review", "arguments": {"language": "python"}}, V, None)[
        "Mcp-Name"
    ] == "code_review"
    assert client_headers("tools/list", {}, V, None) == {"MCP-Protocol-Version": V, "Mcp-Method": "tools/list"}
    assert client_headers("server/discover", None, V) == {"MCP-Protocol-Version": V, "Mcp-Method": "server/discover"}


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("tools/call", {"name": "my-hyphenated-tool"}, "my-hyphenated-tool"),
        ("tools/call", {"name": "my_tool_name"}, "my_tool_name"),
        ("resources/read", {"uri": "file:///path/to/file%20name.txt"}, "file:///path/to/file%20name.txt"),
        ("resources/read", {"uri": "https://example.com/resource?id=123"}, "https://example.com/resource?id=123"),
        ("resources/read", {"uri": "file:///tmp/résumé.txt"}, b64("file:///tmp/résumé.txt")),
        ("tools/call", {"name": "天气"}, b64("天气")),
        ("prompts/get", {"name": " spaced "}, b64(" spaced ")),
        ("tools/call", {"name": "=?base64?abc?="}, b64("=?base64?abc?=")),
    ],
)
def test_client_headers_mcp_name_encoding(method, params, expected):
    got = client_headers(method, params, V, None)
    assert got["Mcp-Name"] == expected
    check_request_headers(lower(got), method, params, V, None)


def test_client_headers_missing_name_is_left_to_params_validation():
    assert "Mcp-Name" not in client_headers("tools/call", {"arguments": {}}, V, None)
    assert "Mcp-Name" not in client_headers("resources/read", {"name": "not-a-uri-field"}, V, None)


def test_client_headers_mcp_name_only_for_listed_methods():
    assert "Mcp-Name" not in client_headers("tools/list", {"name": "x"}, V, None)


def test_client_headers_param_headers_only_on_tools_call():
    ann = {"Region": ("region",)}
    got = client_headers("prompts/get", {"name": "p", "arguments": {"region": "eu"}}, V, ann)
    assert "Mcp-Param-Region" not in got


def test_client_headers_without_schema_sends_no_params():
    got = client_headers("tools/call", {"name": "t", "arguments": {"region": "eu"}}, V, None)
    assert not any(k.startswith("Mcp-Param-") for k in got)


def test_client_headers_nested_path_and_missing_intermediate():
    ann = header_annotations(
        schema(ctx={"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}})
    )
    got = client_headers("tools/call", {"name": "t", "arguments": {"ctx": {"tenant": "acme"}}}, V, ann)
    assert got["Mcp-Param-Tenant"] == "acme"
    for args in ({}, {"ctx": None}, {"ctx": "flat"}, {"ctx": {}}, {"ctx": {"tenant": None}}):
        assert "Mcp-Param-Tenant" not in client_headers("tools/call", {"name": "t", "arguments": args}, V, ann)
    assert "Mcp-Param-Tenant" not in client_headers("tools/call", {"name": "t"}, V, ann)


def test_client_headers_integer_values():
    ann = {"N": ("n",)}
    call = lambda v: client_headers("tools/call", {"name": "t", "arguments": {"n": v}}, V, ann)["Mcp-Param-N"]
    assert call(-7) == "-7"
    assert call(42.0) == "42"  # JSON 42.0 is the integer 42
    assert call(2**53 - 1) == "9007199254740991"
    with pytest.raises(ValueError):
        call(2**53)
    with pytest.raises(ValueError):
        call(-(2**53))
    with pytest.raises(ValueError):
        call(float(2**60))
    with pytest.raises(ValueError):
        call(1.5)
    with pytest.raises(ValueError):
        call({"a": 1})
    with pytest.raises(ValueError):
        call([1])


def test_client_headers_unsafe_method_or_version():
    with pytest.raises(ValueError):
        client_headers("tools/list\r\nX-Evil: 1", {}, V, None)
    with pytest.raises(ValueError):
        client_headers("tools/list", {}, "2026-07-28\n", None)
    with pytest.raises(ValueError):
        client_headers("tööls/list", {}, V, None)


# --------------------------------------------------------------------------- check_request_headers

META = {"io.modelcontextprotocol/protocolVersion": V}


def std(method: str, **extra: str) -> dict[str, str]:
    d = {"mcp-protocol-version": V, "mcp-method": method}
    d.update({k.lower(): v for k, v in extra.items()})
    return d


def test_check_accepts_valid_requests():
    check_request_headers(std("tools/list"), "tools/list", {"_meta": META}, V, None)
    check_request_headers(std("tools/call", **{"Mcp-Name": "foo"}), "tools/call", {"name": "foo"}, V, None)
    check_request_headers(std("prompts/get", **{"Mcp-Name": "p"}), "prompts/get", {"name": "p"}, V, None)
    check_request_headers(std("resources/read", **{"Mcp-Name": "test://x"}), "resources/read", {"uri": "test://x"}, V, None)


@pytest.mark.parametrize("name", ["mcp-method", "MCP-METHOD", "Mcp-Method", "mCp-MeThOd"])
def test_check_header_names_case_insensitive(name):
    hdrs = {"MCP-Protocol-Version": V, name: "tools/list"}
    check_request_headers(hdrs, "tools/list", {}, V, None)
    check_request_headers({"mcp-protocol-version": V, name.lower(): "tools/list"}, "tools/list", {}, V, None)


def test_check_missing_protocol_version():
    err = mismatch(check_request_headers, {"mcp-method": "tools/list"}, "tools/list", {}, V, None)
    assert "MCP-Protocol-Version" in err.message and "missing" in err.message
    assert "2026-07-28" in err.message  # a legacy client learns what to speak


def test_check_protocol_version_mismatch():
    hdrs = std("server/discover")
    hdrs["mcp-protocol-version"] = "2026-07-28"
    err = mismatch(check_request_headers, hdrs, "server/discover", {}, "v999.0.0", None)
    assert "MCP-Protocol-Version" in err.message and "'v999.0.0'" in err.message


def test_check_protocol_version_whitespace_tolerated_and_body_version_absent():
    hdrs = std("tools/list")
    hdrs["mcp-protocol-version"] = f"  {V} "
    check_request_headers(hdrs, "tools/list", {}, V, None)
    # Body lacks the _meta version: left to the caller's -32602 check.
    check_request_headers(std("tools/list"), "tools/list", {}, None, None)


def test_check_missing_method():
    err = mismatch(check_request_headers, {"mcp-protocol-version": V}, "tools/list", {}, V, None)
    assert "Mcp-Method" in err.message and "missing" in err.message


@pytest.mark.parametrize(
    ("header", "body"),
    [
        ("TOOLS/LIST", "tools/list"),  # values are case-sensitive
        ("TOOLS/CALL", "tools/call"),
        ("prompts/list", "tools/list"),
        ("tools/call", "prompts/get"),
        ("tools/list ", "tools/lis"),
        ("", "tools/list"),
        ("=?base64?dG9vbHMvbGlzdA==?=", "tools/list"),  # Mcp-Method has no sentinel form
    ],
)
def test_check_method_mismatch(header, body):
    hdrs = std(body)
    hdrs["mcp-method"] = header
    params = {"name": "x", "uri": "x"}
    hdrs["mcp-name"] = "x"
    err = mismatch(check_request_headers, hdrs, body, params, V, None)
    assert "Mcp-Method" in err.message


def test_check_method_whitespace_tolerated():
    hdrs = std("tools/list")
    hdrs["mcp-method"] = "\t tools/list  "
    check_request_headers(hdrs, "tools/list", {}, V, None)


@pytest.mark.parametrize("bad", ["tools/list\n", "tools/\x00list", "tööls/list"])
def test_check_method_invalid_characters(bad):
    hdrs = std("tools/list")
    hdrs["mcp-method"] = bad
    assert "invalid characters" in mismatch(check_request_headers, hdrs, "tools/list", {}, V, None).message


def test_check_name_mismatch_message_matches_spec_example():
    err = mismatch(check_request_headers, std("tools/call", **{"Mcp-Name": "foo"}), "tools/call", {"name": "bar"}, V, None)
    assert err.message == "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'"


@pytest.mark.parametrize(
    ("method", "params"),
    [("tools/call", {"name": "foo"}), ("prompts/get", {"name": "foo"}), ("resources/read", {"uri": "test://foo"})],
)
def test_check_missing_name(method, params):
    err = mismatch(check_request_headers, std(method), method, params, V, None)
    assert "Mcp-Name" in err.message and "missing" in err.message


def test_check_name_resources_read_uses_uri():
    hdrs = std("resources/read", **{"Mcp-Name": "test://a"})
    mismatch(check_request_headers, hdrs, "resources/read", {"uri": "test://b", "name": "test://a"}, V, None)


@pytest.mark.parametrize("raw", ["  foo ", "foo\t", " \tfoo", "=?base64?Zm9v?=", " =?base64?Zm9v?= "])
def test_check_name_whitespace_and_base64_accepted(raw):
    check_request_headers(std("tools/call", **{"Mcp-Name": raw}), "tools/call", {"name": "foo"}, V, None)


@pytest.mark.parametrize("raw", ["=?base64?Zm9v?", "=?BASE64?Zm9v?=", "Zm9v", "FOO"])
def test_check_name_literal_not_decoded(raw):
    mismatch(check_request_headers, std("tools/call", **{"Mcp-Name": raw}), "tools/call", {"name": "foo"}, V, None)


@pytest.mark.parametrize("raw", ["=?base64?Zm9?=", "=?base64?Zm!v?=", "foo\r\n", "fóo"])
def test_check_name_malformed(raw):
    err = mismatch(check_request_headers, std("tools/call", **{"Mcp-Name": raw}), "tools/call", {"name": "foo"}, V, None)
    assert "Mcp-Name" in err.message


def test_check_name_non_ascii_via_sentinel():
    check_request_headers(std("tools/call", **{"Mcp-Name": b64("天气")}), "tools/call", {"name": "天气"}, V, None)


def test_check_name_ignored_for_other_methods_and_missing_body_name():
    check_request_headers(std("tools/list", **{"Mcp-Name": "junk"}), "tools/list", {}, V, None)
    # No params.name in the body: a params error for the caller, not a header mismatch.
    check_request_headers(std("tools/call"), "tools/call", {"arguments": {}}, V, None)


# ---- Mcp-Param-* (server side)

REGION_ANN = {"Region": ("region",)}


def call(raw: str | None, value, ann=REGION_ANN, header="Mcp-Param-Region", **extra_args):
    hdrs = std("tools/call", **{"Mcp-Name": "t"})
    if raw is not None:
        hdrs[header.lower()] = raw
    args = dict(extra_args)
    if value is not ...:
        args["region"] = value
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": args}, V, ann)


def test_param_conformance_server_validation_cases():
    # http-custom-header-server-validation
    call("=?base64?SGVsbG8=?=", "Hello")  # valid Base64 decoded and matched
    assert "malformed" in mismatch(call, "=?base64?SGVsbG8?=", "Hello").message  # bad padding
    assert "malformed" in mismatch(call, "=?base64?SGVs!!!bG8=?=", "Hello").message  # bad alphabet
    call("SGVsbG8=", "SGVsbG8=")  # no prefix: literal
    call("=?base64?SGVsbG8=", "=?base64?SGVsbG8=")  # no suffix: literal
    err = mismatch(call, None, "test-value")  # header omitted, value in body
    assert "Mcp-Param-Region" in err.message and "missing" in err.message


def test_param_plain_match_and_mismatch():
    call("us-west1", "us-west1")
    call("  us-west1 ", "us-west1")  # OWS trimmed
    err = mismatch(call, "us-east1", "us-west1")
    assert err.message == "Header mismatch: Mcp-Param-Region header value 'us-east1' does not match body value 'us-west1'"
    mismatch(call, "US-WEST1", "us-west1")  # values are case-sensitive
    mismatch(call, "=?BASE64?dXMtd2VzdDE=?=", "us-west1")  # uppercase marker is a literal


def test_param_whitespace_values_need_base64():
    call(b64(" padded "), " padded ")
    mismatch(call, " padded ", " padded ")  # trimmed to "padded": mismatch


def test_param_header_name_case_insensitive():
    hdrs = std("tools/call", **{"Mcp-Name": "t"})
    hdrs = {k.upper(): v for k, v in hdrs.items()}
    hdrs["MCP-PARAM-REGION"] = "eu"
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"region": "eu"}}, V, REGION_ANN)


@pytest.mark.parametrize("value", [None, ...])
def test_param_null_or_absent_value_needs_no_header(value):
    call(None, value)


@pytest.mark.parametrize("value", [None, ...])
def test_param_header_present_but_body_null_or_absent(value):
    err = mismatch(call, "us-west1", value)
    assert "absent or null" in err.message


def test_param_empty_string_is_a_value():
    call("", "")
    call("  ", "")  # an empty value surrounded by OWS
    mismatch(call, None, "")  # "" present in body: header required
    mismatch(call, "x", "")


@pytest.mark.parametrize("raw", ["us\x00west", "us\nwest", "us\x7fwest", "ús-west1", "Ã©"])
def test_param_invalid_characters(raw):
    err = mismatch(call, raw, "us-west1")
    assert "invalid characters" in err.message


def test_param_invalid_utf8_base64():
    assert "UTF-8" in mismatch(call, "=?base64?/w==?=", "x").message


INT_ANN = {"Priority": ("priority",)}


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        ("42", 42),
        ("42.0", 42),  # spec note: compare numerically
        ("42", 42.0),
        (" 42 ", 42),
        ("4.2e1", 42),
        ("42.", 42),
        ("+42", 42),
        ("-7", -7),
        ("0", 0),
        ("-0", 0),
        ("9007199254740991", 2**53 - 1),
        ("=?base64?NDI=?=", 42),
        ("1.5", 1.5),
    ],
)
def test_param_integer_numeric_match(raw, body):
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Priority": raw})
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"priority": body}}, V, INT_ANN)


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        ("43", 42),
        ("42.5", 42),
        ("abc", 42),
        ("", 42),
        ("0x2a", 42),
        ("42abc", 42),
        ("4 2", 42),
        ("NaN", 42),
        ("Infinity", 42),
        ("9007199254740990", 2**53 - 1),
        ("42.0000000000000000001", 42),
        ("true", 1),
    ],
)
def test_param_integer_numeric_mismatch(raw, body):
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Priority": raw})
    mismatch(check_request_headers, hdrs, "tools/call", {"name": "t", "arguments": {"priority": body}}, V, INT_ANN)


@pytest.mark.parametrize("body", [2**53, -(2**53), 1e20])
def test_param_integer_outside_safe_range(body):
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Priority": str(int(body))})
    err = mismatch(check_request_headers, hdrs, "tools/call", {"name": "t", "arguments": {"priority": body}}, V, INT_ANN)
    assert "safe integer range" in err.message


BOOL_ANN = {"Verbose": ("verbose",)}


@pytest.mark.parametrize(
    ("raw", "body", "ok"),
    [
        ("true", True, True),
        ("false", False, True),
        (" true ", True, True),
        ("True", True, False),
        ("TRUE", True, False),
        ("1", True, False),
        ("false", True, False),
        ("true", False, False),
        ("", False, False),
    ],
)
def test_param_boolean(raw, body, ok):
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Verbose": raw})
    args = ("tools/call", {"name": "t", "arguments": {"verbose": body}}, V, BOOL_ANN)
    if ok:
        check_request_headers(hdrs, *args)
    else:
        mismatch(check_request_headers, hdrs, *args)


def test_param_string_body_compared_as_string():
    # Body type decides: a string "42" must match exactly, not numerically.
    call("42", "42")
    mismatch(call, "42.0", "42")


@pytest.mark.parametrize("body", [{"a": 1}, [1, 2]])
def test_param_non_primitive_body_value(body):
    mismatch(call, "x", body)
    mismatch(call, None, body)


def test_param_nested_path():
    ann = {"Tenant": ("ctx", "tenant")}
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Tenant": "acme"})
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"ctx": {"tenant": "acme"}}}, V, ann)
    mismatch(check_request_headers, hdrs, "tools/call", {"name": "t", "arguments": {"ctx": {}}}, V, ann)
    hdrs.pop("mcp-param-tenant")
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"ctx": "flat"}}, V, ann)


def test_param_unknown_headers_ignored():
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Region": "eu", "Mcp-Param-Other": "\x00junk"})
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"region": "eu"}}, V, REGION_ANN)
    # Without annotations (unknown tool or none declared) every Mcp-Param-* is ignored.
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"region": "us"}}, V, None)
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"region": "us"}}, V, {})


def test_param_headers_only_checked_on_tools_call():
    hdrs = std("prompts/get", **{"Mcp-Name": "p"})
    check_request_headers(hdrs, "prompts/get", {"name": "p", "arguments": {"region": "us"}}, V, REGION_ANN)


def test_param_standard_like_name_is_distinct():
    ann = {"Method": ("method_val",)}
    hdrs = std("tools/call", **{"Mcp-Name": "t", "Mcp-Param-Method": "test-method"})
    check_request_headers(hdrs, "tools/call", {"name": "t", "arguments": {"method_val": "test-method"}}, V, ann)


def test_param_conformance_round_trip_with_every_vector():
    ann = header_annotations(CUSTOM_SCHEMA)
    params = {"name": "test_custom_headers", "arguments": CUSTOM_ARGS}
    hdrs = lower(client_headers("tools/call", params, V, ann))
    check_request_headers(hdrs, "tools/call", params, V, ann)
    for name in ann:
        broken = dict(hdrs)
        del broken["mcp-param-" + name.lower()]
        mismatch(check_request_headers, broken, "tools/call", params, V, ann)


def test_validation_order_version_then_method_then_name_then_params():
    hdrs = {"mcp-method": "X", "mcp-name": "Y", "mcp-param-region": "Z"}
    params = {"name": "t", "arguments": {"region": "eu"}}
    assert "MCP-Protocol-Version" in mismatch(check_request_headers, hdrs, "tools/call", params, V, REGION_ANN).message
    hdrs["mcp-protocol-version"] = V
    assert "Mcp-Method" in mismatch(check_request_headers, hdrs, "tools/call", params, V, REGION_ANN).message
    hdrs["mcp-method"] = "tools/call"
    assert "Mcp-Name" in mismatch(check_request_headers, hdrs, "tools/call", params, V, REGION_ANN).message
    hdrs["mcp-name"] = "t"
    assert "Mcp-Param-Region" in mismatch(check_request_headers, hdrs, "tools/call", params, V, REGION_ANN).message


def test_notification_leniency():
    # Header rules for notification POSTs are undefined: tolerate missing, check present ones.
    check_request_headers({}, "notifications/cancelled", {}, None, None, notification=True)
    check_request_headers({"mcp-method": "notifications/x"}, "notifications/x", {}, V, None, notification=True)
    mismatch(check_request_headers, {"mcp-method": "notifications/y"}, "notifications/x", {}, V, None, notification=True)
    mismatch(
        check_request_headers, {"mcp-protocol-version": "2025-11-25"}, "notifications/x", {}, V, None, notification=True
    )
    mismatch(check_request_headers, {}, "notifications/x", {}, V, None)


def test_long_values_are_truncated_in_messages():
    err = mismatch(call, "x" * 10_000, "y")
    assert len(err.message) < 300


def test_is_header_mismatch():
    try:
        call("a", "b")
    except MCPError as exc:
        assert is_header_mismatch(exc)
    assert not is_header_mismatch(MCPError(-32602, "x"))
    assert not is_header_mismatch(ValueError("x"))
