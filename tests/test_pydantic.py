"""Pydantic types in tool and prompt signatures (mcpkit.server._pydantic): their JSON Schema is
published, Pydantic validates them, its errors name the field in msgspec's words, and model
return values become structured content. Pydantic is loaded only by an application using it."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from mcpkit import Server
from tests.helpers.cli import mcpkit
from tests.helpers.paths import ROOT, subprocess_env
from tests.test_server import error, result

EXAMPLE = ROOT / "examples" / "pydantic_models.py"


class Point(BaseModel):
    x: float
    y: float = Field(default=0.0, description="the y coordinate")


class Result(BaseModel):
    length: float
    point: Point


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    first_name: str = Field(alias="firstName")


@pydantic_dataclass
class Box:
    width: int
    height: int


@dataclasses.dataclass
class Holder:  # a plain dataclass holding a model: msgspec cannot take it, Pydantic can
    point: Point


def models_server() -> Server:
    s = Server("models", "1.0.0")

    @s.tool()
    def norm(p: Point) -> Result:
        """Length of p.

        Args:
            p: the point
        """
        return Result(length=(p.x ** 2 + p.y ** 2) ** 0.5, point=p)

    @s.tool()
    def many(points: list[Point], factor: Annotated[float, Field(gt=0)] = 2.0, color: Color = Color.RED) -> list[Point]:
        return [Point(x=p.x * factor, y=p.y * factor) for p in points]

    @s.tool()
    def either(v: Point | int, maybe: Point | None = None) -> str:
        return f"{type(v).__name__} {type(maybe).__name__}"

    @s.tool()
    def positive(n: Annotated[int, Field(ge=1, le=10, description="one to ten")], label: str = "n") -> int:
        return n

    @s.tool()
    def alias(person: Aliased) -> Aliased:
        return person

    @s.tool()
    def box(b: Box, h: Holder) -> Box:
        return Box(width=b.width + int(h.point.x), height=b.height)

    @s.tool()
    def untyped(x: int):  # type: ignore[no-untyped-def]
        return Point(x=x, y=1)

    @s.prompt()
    def describe(p: Annotated[int, Field(ge=0)]) -> str:
        return f"describe {p}"

    return s


def tools(s: Server) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in result(s, "tools/list")["tools"]}


def call(s: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return result(s, "tools/call", name=name, arguments=arguments)


def deref(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[1]] if ref else prop


def test_model_parameter_schema_names_its_fields() -> None:
    norm = tools(models_server())["norm"]
    schema = norm["inputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["p"]
    point = deref(schema, schema["properties"]["p"])
    assert set(point["properties"]) == {"x", "y"} and point["required"] == ["x"]
    assert point["properties"]["y"]["description"] == "the y coordinate"
    assert schema["properties"]["p"]["description"] == "the point"  # from the docstring's Args
    out = norm["outputSchema"]
    assert out["type"] == "object" and set(out["properties"]) == {"length", "point"} and "title" not in out
    assert deref(out, out["properties"]["point"])["properties"]["x"]["type"] == "number"


def test_model_parameter_and_return_value() -> None:
    body = call(models_server(), "norm", {"p": {"x": 3, "y": 4}})
    assert body.get("isError") is not True
    assert body["structuredContent"] == {"length": 5.0, "point": {"x": 3.0, "y": 4.0}}
    assert json.loads(body["content"][0]["text"]) == body["structuredContent"]


@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("norm", {"p": {"x": "three"}}, "Input should be a valid number, unable to parse string as a number - at `$.p.x`"),
    ("norm", {"p": {"y": 1}}, "Field required - at `$.p.x`"),
    ("norm", {"p": 5}, "- at `$.p`"),
    ("many", {"points": [{"x": 1}, {"x": "a"}]}, "- at `$.points[1].x`"),
    ("many", {"points": [], "factor": 0}, "Input should be greater than 0 - at `$.factor`"),
    ("positive", {"n": 11}, "Input should be less than or equal to 10 - at `$.n`"),
    ("box", {"b": {"width": 1, "height": "x"}, "h": {"point": {"x": 1}}}, "- at `$.b.height`"),
])
def test_validation_errors_name_the_field(name: str, arguments: dict[str, Any], expected: str) -> None:
    body = call(models_server(), name, arguments)
    assert body["isError"] is True
    text = body["content"][0]["text"]
    assert text.startswith(f"Invalid arguments for tool {name}: ") and expected in text
    assert "\n" not in text


def test_missing_model_argument_and_unknown_argument_stay_msgspec_errors() -> None:
    s = models_server()
    assert "missing required field `p`" in call(s, "norm", {})["content"][0]["text"]
    assert call(s, "positive", {"n": 1, "label": 3})["content"][0]["text"].endswith("Expected `str`, got `int` - at `$.label`")


def test_defaults_constraints_enums_and_lists() -> None:
    s = models_server()
    schema = tools(s)["many"]["inputSchema"]
    assert schema["required"] == ["points"]
    assert schema["properties"]["factor"] == {"type": "number", "exclusiveMinimum": 0, "default": 2.0}
    assert deref(schema, schema["properties"]["points"]["items"])["required"] == ["x"]
    body = call(s, "many", {"points": [{"x": 1, "y": 2}]})
    assert body["structuredContent"] == {"result": [{"x": 2.0, "y": 4.0}]}
    assert call(s, "many", {"points": [{"x": 1}], "factor": 3, "color": "blue"})["structuredContent"] == {
        "result": [{"x": 3.0, "y": 0.0}]}
    positive = tools(s)["positive"]["inputSchema"]["properties"]["n"]
    assert positive == {"type": "integer", "minimum": 1, "maximum": 10, "description": "one to ten"}


def test_unions_holding_models() -> None:
    s = models_server()
    schema = tools(s)["either"]["inputSchema"]
    assert len(schema["properties"]["v"]["anyOf"]) == 2 and schema["required"] == ["v"]
    assert schema["properties"]["maybe"]["default"] is None
    assert call(s, "either", {"v": 3})["content"][0]["text"] == "int NoneType"
    assert call(s, "either", {"v": {"x": 1}, "maybe": {"x": 2}})["content"][0]["text"] == "Point Point"


def test_aliases_are_used_on_the_wire() -> None:
    s = models_server()
    tool = tools(s)["alias"]
    assert "firstName" in deref(tool["inputSchema"], tool["inputSchema"]["properties"]["person"])["properties"]
    assert "firstName" in tool["outputSchema"]["properties"]
    assert call(s, "alias", {"person": {"firstName": "Ada"}})["structuredContent"] == {"firstName": "Ada"}


def test_pydantic_dataclasses_and_dataclasses_holding_models() -> None:
    s = models_server()
    body = call(s, "box", {"b": {"width": 1, "height": 2}, "h": {"point": {"x": 4}}})
    assert body["structuredContent"] == {"width": 5, "height": 2}


def test_a_model_returned_without_a_return_type_is_json_text() -> None:
    body = call(models_server(), "untyped", {"x": 2})
    assert "structuredContent" not in body
    assert json.loads(body["content"][0]["text"]) == {"x": 2.0, "y": 1.0}


def test_prompt_arguments_validated_by_pydantic_give_invalid_params() -> None:
    s = models_server()
    assert result(s, "prompts/get", name="describe", arguments={"p": "3"})["messages"][0]["content"]["text"] == "describe 3"
    err = error(s, "prompts/get", name="describe", arguments={"p": "-1"})
    assert err["code"] == -32602
    assert err["message"] == "Invalid arguments for prompt describe: Input should be greater than or equal to 0 - at `$.p`"


def test_a_msgspec_struct_and_a_model_of_the_same_name_do_not_clash() -> None:
    class Shape(msgspec.Struct):
        sides: int

    def make() -> type[BaseModel]:
        class Shape(BaseModel):
            name: str

        return Shape

    Model = make()
    s = Server("clash")

    def both(a: Shape, b: Model) -> str:  # type: ignore[valid-type]
        return f"{a.sides} {b.name}"  # type: ignore[attr-defined]

    both.__annotations__ = {"a": Shape, "b": Model, "return": str}
    s.tool()(both)
    schema = tools(s)["both"]["inputSchema"]
    a, b = deref(schema, schema["properties"]["a"]), deref(schema, schema["properties"]["b"])
    assert "sides" in a["properties"] and "name" in b["properties"]
    assert call(s, "both", {"a": {"sides": 3}, "b": {"name": "tri"}})["content"][0]["text"] == "3 tri"


def test_a_type_neither_library_can_describe_is_refused_at_registration() -> None:
    class Opaque:
        pass

    s = Server("bad")

    def bad(o: Opaque) -> str:
        return ""

    bad.__annotations__ = {"o": Opaque, "return": str}
    with pytest.raises(TypeError, match="bad: a parameter's type cannot be described"):
        s.tool()(bad)


def test_mcpkit_and_a_server_without_pydantic_types_do_not_import_pydantic() -> None:
    code = ("import sys, runpy\n"
            "import mcpkit\n"
            "assert 'pydantic' not in sys.modules\n"
            "runpy.run_path(sys.argv[1])\n"
            "print(sorted(m for m in ('pydantic', 'pydantic_core', 'annotated_types') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "examples" / "demo.py")], capture_output=True, text=True,
                         cwd=str(ROOT), env=subprocess_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_cli_lists_calls_and_reports_a_bad_field() -> None:
    listed = mcpkit("list", "tools", EXAMPLE)
    assert listed.returncode == 0, listed.stderr
    assert "norm(p: {x: number, y: number})" in listed.stdout
    assert 'unit: "ft"|"m" = "m"' in listed.stdout
    called = mcpkit("call", "norm", "--args", '{"p": {"x": 3, "y": 4}}', EXAMPLE)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"length": 5.0, "point": {"x": 3.0, "y": 4.0}}
    # A field of the wrong type is refused against the inputSchema before anything is sent, in
    # the words of a top-level argument of the wrong type (the msgspec path's `add a=x`).
    bad = mcpkit("call", "norm", "--args", '{"p": {"x": "three", "y": 4}}', EXAMPLE)
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "mcpkit call: norm: invalid params (-32602): argument 'p.x' expects a number, "
                                                       "got '\"three\"'\n")
    missing = mcpkit("call", "scale", "--args", '{"points": [{"x": 1, "y": 2}, {"x": 1}]}', EXAMPLE)
    assert (missing.returncode, missing.stderr) == (2, "mcpkit call: scale: invalid params (-32602): missing argument points[1].y (number)\n")


CONSTRAINED = """from typing import Annotated
import msgspec
from pydantic import Field
from mcpkit import Server
server = Server("constrained", "1.0.0")

@server.tool()
def fast(n: Annotated[int, msgspec.Meta(le=10)]) -> int:
    return n

@server.tool()
def checked(n: Annotated[int, Field(le=10)]) -> int:
    return n

if __name__ == "__main__":
    server.run()
"""


def test_cli_a_field_only_the_server_can_check_is_one_line_on_either_path(tmp_path: Path) -> None:
    # The server refuses it as a tool execution error (isError: the spec lists input validation
    # errors there), and `mcpkit call` prints it as one line naming the field, alike on both paths.
    server = tmp_path / "constrained.py"
    server.write_text(CONSTRAINED)
    fast = mcpkit("call", "fast", "n=11", server)
    checked = mcpkit("call", "checked", "n=11", server)
    assert (fast.returncode, fast.stdout) == (1, "") and (checked.returncode, checked.stdout) == (1, "")
    assert fast.stderr == "mcpkit call: fast failed: Invalid arguments for tool fast: Expected `int` <= 10 - at `$.n`\n"
    assert checked.stderr == ("mcpkit call: checked failed: Invalid arguments for tool checked: Input should be less "
                              "than or equal to 10 - at `$.n`\n")
    as_json = mcpkit("call", "--json", "checked", "n=11", server)
    assert json.loads(as_json.stdout)["isError"] is True
