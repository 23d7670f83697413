"""``@server.tool()``: inputSchema (JSON Schema 2020-12) from type hints, description from the
docstring, outputSchema + structuredContent from a structured return type."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Annotated, Any, Literal, Optional, TypedDict

import msgspec
import pytest

from mcpkit import Context, Server, ToolError
from mcpkit.protocol import codec
from mcpkit.protocol import types as t
from tests.helpers.aio import run
from tests.helpers.messages import META


# ---------------------------------------------------------------- helpers
def wire(server: Server, method: str, **params: Any) -> dict[str, Any]:
    req = codec.Request(1, method, {"_meta": META, **params})
    body = json.loads(run(server.handle(req)).body)
    assert "result" in body, body
    return body["result"]


def tool_of(fn, **kw) -> dict[str, Any]:
    """Register ``fn`` on a fresh server and return its tools/list entry as sent on the wire."""
    s = Server("schema")
    s.tool(**kw)(fn)
    (tool,) = wire(s, "tools/list")["tools"]
    msgspec.convert(tool, t.Tool)
    check_schema_refs(tool["inputSchema"])
    if "outputSchema" in tool:
        check_schema_refs(tool["outputSchema"])
    return tool


def call(fn, arguments: dict[str, Any] | None, **kw) -> dict[str, Any]:
    s = Server("schema")
    s.tool(**kw)(fn)
    params = {"name": fn.__name__} if arguments is None else {"name": fn.__name__, "arguments": arguments}
    return wire(s, "tools/call", **params)


def check_schema_refs(schema: dict[str, Any]) -> None:
    """Every ``$ref`` points into this schema's own ``$defs`` (2020-12 style, no ``definitions``)."""
    text = json.dumps(schema)
    assert '"definitions"' not in text
    if "$schema" in schema:
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = schema.get("$defs", {})

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None:
                assert ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs, ref
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)


def conforms(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> bool:
    """A small JSON Schema check, enough for what msgspec generates."""
    root = root or schema
    if "$ref" in schema:
        return conforms(value, root["$defs"][schema["$ref"].split("/")[-1]], root)
    if "anyOf" in schema:
        return any(conforms(value, s, root) for s in schema["anyOf"])
    if "enum" in schema and value not in schema["enum"]:
        return False
    typ = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "null": lambda v: v is None,
    }
    if typ is not None and not checks[typ](value):
        return False
    if typ == "object":
        if any(k not in value for k in schema.get("required", [])):
            return False
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                if not conforms(v, props[k], root):
                    return False
            elif extra is False or (isinstance(extra, dict) and not conforms(v, extra, root)):
                return False
    if typ == "array":
        return all(conforms(v, schema.get("items", {}), root) for v in value)
    return True


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Box(msgspec.Struct):
    label: str
    corners: list[Point]


class Pair(TypedDict):
    left: int
    right: str


# ---------------------------------------------------------------- input schemas
def test_scalars_required_and_docstring():
    def add(a: int, b: float, name: str, flag: bool) -> str:
        """Add things up.

        Longer explanation that is still part of the description.

        Args:
            a: the first number
            b: the second number,
                spanning two lines
        Returns:
            the sum
        """
        return ""

    tool = tool_of(add)
    assert tool["name"] == "add"
    assert tool["description"] == "Add things up.\n\nLonger explanation that is still part of the description."
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["a", "b", "name", "flag"]
    props = schema["properties"]
    assert props["a"] == {"type": "integer", "description": "the first number"}
    assert props["b"] == {"type": "number", "description": "the second number, spanning two lines"}
    assert props["name"] == {"type": "string"}
    assert props["flag"] == {"type": "boolean"}


def test_sphinx_style_param_docs():
    def f(a: int) -> str:
        """Do f.

        :param a: the a
        :returns: something
        """
        return ""

    tool = tool_of(f)
    assert tool["description"] == "Do f."
    assert tool["inputSchema"]["properties"]["a"]["description"] == "the a"


def test_annotated_descriptions_and_constraints():
    def f(city: Annotated[str, "The city name"], n: Annotated[int, msgspec.Meta(ge=1, le=5)] = 2) -> str:
        return ""

    props = tool_of(f)["inputSchema"]["properties"]
    assert props["city"] == {"type": "string", "description": "The city name"}
    assert props["n"] == {"type": "integer", "minimum": 1, "maximum": 5, "default": 2}


def test_defaults_make_arguments_optional():
    def f(a: int, b: str = "x", c: float = 1.5, d: bool = False) -> str:
        return ""

    schema = tool_of(f)["inputSchema"]
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"]["default"] == "x"
    assert schema["properties"]["c"]["default"] == 1.5
    assert schema["properties"]["d"]["default"] is False


def test_no_required_key_when_nothing_is_required():
    def f(a: int = 1) -> str:
        return ""

    assert "required" not in tool_of(f)["inputSchema"]


def test_optional_values():
    def f(a: Optional[int] = None, b: str | None = None) -> str:
        return ""

    def g(c: int | None) -> str:
        return ""

    props = tool_of(f)["inputSchema"]["properties"]
    assert props["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert props["b"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    schema = tool_of(g)["inputSchema"]
    assert schema["required"] == ["c"]  # nullable, but must be given
    assert {"type": "null"} in schema["properties"]["c"]["anyOf"]


def test_literal_and_enum():
    def f(unit: Literal["c", "f"], color: Color = Color.RED) -> str:
        return ""

    schema = tool_of(f)["inputSchema"]
    assert schema["properties"]["unit"] == {"enum": ["c", "f"]}
    color = schema["properties"]["color"]
    assert color["default"] == "red"
    resolved = schema["$defs"][color["$ref"].split("/")[-1]] if "$ref" in color else color
    assert sorted(resolved["enum"]) == ["blue", "red"]


def test_lists_dicts_and_nested_structures():
    def f(tags: list[str], counts: dict[str, int], pts: list[Point], box: Box, pair: Pair) -> str:
        return ""

    schema = tool_of(f)["inputSchema"]
    props = schema["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["pts"]["type"] == "array"
    point = schema["$defs"]["Point"]
    assert point["type"] == "object" and point["required"] == ["x", "y"]
    box = schema["$defs"]["Box"]
    assert box["properties"]["corners"]["items"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Pair"]["required"] == ["left", "right"]
    example = {"tags": ["a"], "counts": {"k": 1}, "pts": [{"x": 1, "y": 2}],
               "box": {"label": "b", "corners": []}, "pair": {"left": 1, "right": "r"}}
    assert conforms(example, schema)
    assert not conforms({**example, "tags": [1]}, schema)


def test_no_arguments():
    def f() -> str:
        return ""

    schema = tool_of(f)["inputSchema"]
    assert schema["type"] == "object"
    assert schema.get("properties", {}) == {}
    assert "required" not in schema


def test_context_parameter_is_not_in_the_schema():
    def f(ctx: Context, a: int) -> str:
        return ""

    schema = tool_of(f)["inputSchema"]
    assert list(schema["properties"]) == ["a"]
    assert schema["required"] == ["a"]


def test_untyped_parameter_accepts_anything():
    def f(a) -> str:
        return repr(a)

    assert tool_of(f)["inputSchema"]["required"] == ["a"]
    assert call(f, {"a": [1, "x"]})["content"][0]["text"] == "[1, 'x']"


def test_registration_options():
    def f(a: int) -> str:
        """Docstring description."""
        return ""

    tool = tool_of(f, name="renamed", title="Pretty", description="Explicit.", annotations={"readOnlyHint": True},
                   meta={"com.example/x": 1})
    assert tool["name"] == "renamed"
    assert tool["title"] == "Pretty"
    assert tool["description"] == "Explicit."
    assert tool["annotations"] == {"readOnlyHint": True}
    assert tool["_meta"] == {"com.example/x": 1}


def test_no_docstring_no_description():
    def f(a: int) -> str:
        return ""

    assert "description" not in tool_of(f)


@pytest.mark.parametrize("bad", ["varargs", "kwargs", "posonly"])
def test_indescribable_signatures_are_refused(bad):
    def varargs(*a: int) -> str:
        return ""

    def kwargs(**a: int) -> str:
        return ""

    def posonly(a: int, /) -> str:
        return ""

    with pytest.raises(TypeError):
        Server("x").tool()({"varargs": varargs, "kwargs": kwargs, "posonly": posonly}[bad])


# ---------------------------------------------------------------- validation follows the schema
def test_arguments_are_converted_to_the_declared_types():
    seen = {}

    def f(p: Point, box: Box, color: Color, pair: Pair, n: float = 0.0) -> str:
        seen.update(p=p, box=box, color=color, pair=pair, n=n)
        return "ok"

    result = call(f, {"p": {"x": 1, "y": 2}, "box": {"label": "b", "corners": [{"x": 0, "y": 0}]},
                      "color": "blue", "pair": {"left": 1, "right": "r"}, "n": 3})
    assert result["content"][0]["text"] == "ok"
    assert seen["p"] == Point(1.0, 2.0)
    assert isinstance(seen["box"], Box) and seen["box"].corners == [Point(0.0, 0.0)]
    assert seen["color"] is Color.BLUE
    assert seen["pair"] == {"left": 1, "right": "r"}
    assert seen["n"] == 3.0


@pytest.mark.parametrize("arguments", [
    {"p": {"x": "1", "y": 2}},
    {"p": {"x": 1}},
    {"p": [1, 2]},
    {"p": {"x": 1, "y": 2}, "unit": "kelvin"},
    {"p": {"x": 1, "y": 2}, "n": 11},
    {},
])
def test_arguments_that_break_the_schema_are_error_results(arguments):
    def f(p: Point, unit: Literal["c", "f"] = "c", n: Annotated[int, msgspec.Meta(le=10)] = 0) -> str:
        raise AssertionError("must not be called")

    result = call(f, arguments)
    assert result["isError"] is True
    assert "Invalid arguments" in result["content"][0]["text"]


def test_missing_arguments_object_means_no_arguments():
    def f(a: int = 4) -> int:
        return a

    assert call(f, None)["structuredContent"] == {"result": 4}


# ---------------------------------------------------------------- output
def test_dataclass_return_gives_output_schema_and_structured_content():
    def f(x: float) -> Point:
        return Point(x, 2 * x)

    tool = tool_of(f)
    schema = tool["outputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["x", "y"]
    result = call(f, {"x": 1.5})
    assert result["structuredContent"] == {"x": 1.5, "y": 3.0}
    assert json.loads(result["content"][0]["text"]) == {"x": 1.5, "y": 3.0}  # text mirror
    assert conforms(result["structuredContent"], schema)


@pytest.mark.parametrize("ret,value,structured", [
    (int, 3, {"result": 3}),
    (list[int], [1, 2], {"result": [1, 2]}),
    (bool, True, {"result": True}),
    (Optional[int], None, {"result": None}),
])
def test_non_object_returns_are_wrapped(ret, value, structured):
    def f() -> Any:
        return value

    f.__annotations__["return"] = ret
    tool = tool_of(f)
    schema = tool["outputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["result"]
    result = call(f, {})
    assert result["structuredContent"] == structured
    assert conforms(result["structuredContent"], schema)


@pytest.mark.parametrize("ret", [Box, Pair, dict[str, int]])
def test_object_returns_are_not_wrapped(ret):
    values = {Box: Box("b", [Point(1, 2)]), Pair: {"left": 1, "right": "r"}, dict[str, int]: {"k": 1}}

    def f() -> Any:
        return values[ret]

    f.__annotations__["return"] = ret
    tool = tool_of(f)
    result = call(f, {})
    assert result["structuredContent"] == msgspec.to_builtins(values[ret])
    assert conforms(result["structuredContent"], tool["outputSchema"])


@pytest.mark.parametrize("ret", [str, None, Any, t.TextContent, list[t.TextContent]])
def test_unstructured_returns_have_no_output_schema(ret):
    def f() -> Any:
        return "text"

    f.__annotations__["return"] = ret
    assert "outputSchema" not in tool_of(f)
    assert "structuredContent" not in call(f, {})


def test_no_return_annotation_has_no_output_schema():
    def f():
        return {"a": 1}

    assert "outputSchema" not in tool_of(f)
    result = call(f, {})
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"]) == {"a": 1}


def test_structured_output_switch():
    def f() -> Point:
        return Point(1, 2)

    assert "outputSchema" not in tool_of(f, structured_output=False)
    assert "structuredContent" not in call(f, {}, structured_output=False)

    def g() -> str:
        return ""

    with pytest.raises(TypeError):
        Server("x").tool(structured_output=True)(g)


@pytest.mark.parametrize("value,content", [
    ("hi", [{"type": "text", "text": "hi"}]),
    (["a", "b"], [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
    (None, []),
    (t.ImageContent(data="aGk=", mimeType="image/png"), [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]),
    ({"type": "text", "text": "dict block"}, [{"type": "text", "text": "dict block"}]),
])
def test_unannotated_return_values_become_content(value, content):
    def f():
        return value

    result = call(f, {})
    assert result["content"] == content
    msgspec.convert(result, t.CallToolResult)


def test_returning_a_call_tool_result_passes_it_through():
    def f() -> t.CallToolResult:
        return t.CallToolResult(content=[t.TextContent(text="custom")], isError=True)

    result = call(f, {})
    assert result["content"] == [{"type": "text", "text": "custom"}] and result["isError"] is True


def test_tool_errors_are_error_results():
    def refuse() -> str:
        raise ToolError("no way")

    def crash() -> str:
        raise ValueError("bad value")

    result = call(refuse, {})
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "no way"}]
    result = call(crash, {})  # an exception's text stays on the server (issue 18, item 16)
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "Error executing tool crash"}]


def test_async_and_blocking_tools():
    async def a(x: int) -> int:
        return x + 1

    def b(x: int) -> int:
        return x + 2

    assert call(a, {"x": 1})["structuredContent"] == {"result": 2}
    assert call(b, {"x": 1}, blocking=True)["structuredContent"] == {"result": 3}


def test_bare_decorator():
    s = Server("bare")

    @s.tool
    def plain(a: int) -> str:
        return str(a)

    assert [tool["name"] for tool in wire(s, "tools/list")["tools"]] == ["plain"]
