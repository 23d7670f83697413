"""``key=value`` arguments on the command line, checked against a tool's input schema.

Values parse as JSON when they can (``a=2`` is the number 2, ``tags=["x"]`` a list), else they
are strings. The tool's schema then decides: a string property keeps the text as typed
(``name=42`` is ``"42"``), and a value of the wrong type is refused before anything is sent,
naming the argument and what it expected.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._target import CliError

_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "array": "a JSON array", "object": "a JSON object", "null": "null"}


def parse_pairs(items: Sequence[str], json_args: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """(values, raw texts) of ``key=value`` items, on top of ``--args '{...}'``."""
    values: dict[str, Any] = {}
    raw: dict[str, str] = {}
    if json_args:
        try:
            given = json.loads(json_args)
        except ValueError as exc:
            raise CliError(f"--args is not valid JSON: {exc}", 2) from None
        if not isinstance(given, dict):
            raise CliError("--args must be a JSON object", 2)
        values.update(given)
    for item in items:
        key, found, text = item.partition("=")
        if not found or not key:
            raise CliError(f"arguments look like key=value, not {item!r}", 2)
        try:
            values[key] = json.loads(text)
        except ValueError:
            values[key] = text
        raw[key] = text
    return values, raw


def types_of(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    typ = schema.get("type")
    if isinstance(typ, str):
        return [typ]
    if isinstance(typ, list):
        return [x for x in typ if isinstance(x, str)]
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            out.extend(types_of(branch))
    if not out and "enum" in schema:
        out = sorted({_json_type(v) for v in schema["enum"]})
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fits(value: Any, typ: str) -> bool:
    actual = _json_type(value)
    return actual == typ or (typ == "number" and actual == "integer") or (
        typ == "integer" and isinstance(value, float) and value.is_integer())


def check(name: str, schema: Any, values: dict[str, Any], raw: dict[str, str]) -> dict[str, Any]:
    """The arguments to send, checked (and string-coerced) against ``schema``; CliError if wrong."""
    if not isinstance(schema, dict):
        return values
    found = schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    out: dict[str, Any] = {}
    for key, value in values.items():
        prop = resolve(props.get(key), schema)
        if prop is None:
            extra = schema.get("additionalProperties")
            if props and not extra:
                known = ", ".join(props) or "none"
                raise _invalid(name, f"unknown argument {key!r} (its arguments: {known})")
            out[key] = value
            continue
        allowed = types_of(prop)
        if key in raw and "string" in allowed and not isinstance(value, str) and not any(
                _fits(value, t) for t in allowed if t != "string"):
            value = raw[key]  # name=42 for a string property is the text "42"
        if allowed and not any(_fits(value, t) for t in allowed):
            want = " or ".join(_TYPE_NAMES.get(t, t) for t in allowed)
            shown = raw.get(key, json.dumps(value))
            raise _invalid(name, f"argument {key!r} expects {want}, got {shown!r}")
        if isinstance(prop, dict) and "enum" in prop and value not in prop["enum"]:
            choices = ", ".join(json.dumps(v) for v in prop["enum"])
            raise _invalid(name, f"argument {key!r} must be one of {choices}, got {raw.get(key, value)!r}")
        if isinstance(value, float) and value.is_integer() and "integer" in allowed and "number" not in allowed:
            value = int(value)
        out[key] = _nested(name, key, prop, value, schema)
    _missing(name, "", schema, out, schema)
    return out


def _missing(name: str, path: str, schema: dict[str, Any], given: dict[str, Any], root: Any) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    missing = [k for k in schema.get("required") or [] if k not in given]
    if missing:
        parts = [f"{path}{k} ({type_text(props.get(k), root)})" for k in missing]
        raise _invalid(name, f"missing argument{'s' if len(missing) > 1 else ''} {', '.join(parts)}")


def _nested(name: str, path: str, prop: Any, value: Any, root: Any, depth: int = 0) -> Any:
    """``value`` checked inside: an object's fields and an array's items against their schemas
    (a wrong one is named by its path, ``p.x`` or ``points[1].y``, as a top-level one is)."""
    if depth > 8 or not isinstance(prop, dict):
        return value
    if isinstance(value, dict) and isinstance(prop.get("properties"), dict):
        fields = prop["properties"]
        for key, item in value.items():
            sub = resolve(fields.get(key), root)
            where = f"{path}.{key}"
            if sub is None:
                if prop.get("additionalProperties") is False:
                    raise _invalid(name, f"unknown argument {where!r} (its fields: {', '.join(fields) or 'none'})")
                continue
            _fit(name, where, sub, item)
            _nested(name, where, sub, item, root, depth + 1)
        _missing(name, f"{path}.", prop, value, root)
    elif isinstance(value, list) and isinstance(prop.get("items"), dict):
        sub = resolve(prop["items"], root)
        for i, item in enumerate(value):
            _fit(name, f"{path}[{i}]", sub, item)
            _nested(name, f"{path}[{i}]", sub, item, root, depth + 1)
    return value


def _fit(name: str, where: str, prop: Any, value: Any) -> None:
    allowed = types_of(prop)
    if allowed and not any(_fits(value, t) for t in allowed):
        want = " or ".join(_TYPE_NAMES.get(t, t) for t in allowed)
        raise _invalid(name, f"argument {where!r} expects {want}, got {json.dumps(value)!r}")
    if isinstance(prop, dict) and "enum" in prop and value not in prop["enum"]:
        choices = ", ".join(json.dumps(v) for v in prop["enum"])
        raise _invalid(name, f"argument {where!r} must be one of {choices}, got {json.dumps(value)!r}")


def resolve(prop: Any, root: Any) -> Any:
    """``prop`` with a local ``$ref`` (``#/$defs/Name``) replaced by what it names in ``root``."""
    defs = root.get("$defs") if isinstance(root, dict) else None
    for _ in range(10):
        ref = prop.get("$ref") if isinstance(prop, dict) else None
        if not (isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict)):
            break
        target = defs.get(ref[len("#/$defs/"):])
        if not isinstance(target, dict):
            break
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def type_text(prop: Any, root: Any, depth: int = 0) -> str:
    """``integer``, ``"a"|"b"``, ``array of number``, ``{x: number, y?: number}``."""
    prop = resolve(prop, root)
    if not isinstance(prop, dict):
        return "any"
    if "enum" in prop:
        return "|".join(json.dumps(v) for v in prop["enum"])
    branches = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(branches, list) and branches:
        return " | ".join(dict.fromkeys(type_text(b, root, depth) for b in branches))
    typ = " | ".join(types_of(prop)) or "any"
    if typ == "array" and isinstance(prop.get("items"), dict):
        inner = type_text(prop["items"], root, depth)
        if inner != "any":
            typ = f"array of {inner}"
    props = prop.get("properties")
    if typ in ("object", "any") and isinstance(props, dict) and props:
        if depth >= 2:
            return "object"
        required = set(prop.get("required") or [])
        fields = ", ".join(f"{k}{'' if k in required else '?'}: {type_text(v, root, depth + 1)}" for k, v in props.items())
        typ = "{" + fields + "}"
    return typ


def signature(schema: Any) -> list[tuple[str, str, bool, str | None, str | None]]:
    """(name, type, required, default as JSON, description) of each argument of ``schema``."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or [])
    out = []
    for key, prop in schema["properties"].items():
        prop = resolve(prop if isinstance(prop, dict) else {}, schema)
        typ = type_text(prop, schema)
        default = json.dumps(prop["default"]) if "default" in prop else None
        desc = prop.get("description")
        out.append((key, typ, key in required, default, desc if isinstance(desc, str) else None))
    return out


def format_signature(schema: Any) -> str:
    """``a: integer, to: "celsius"|"fahrenheit" = "celsius"``."""
    parts = []
    for key, typ, required, default, _desc in signature(schema):
        text = f"{key}: {typ}"
        if default is not None:
            text += f" = {default}"
        elif not required:
            text += " (optional)"
        parts.append(text)
    return ", ".join(parts)


def _invalid(name: str, text: str) -> CliError:
    """Arguments the tool's ``inputSchema`` refuses, caught before anything is sent: one line
    with the JSON-RPC code for invalid params (a server reports them as a tool error)."""
    return CliError(f"{name}: invalid params (-32602): {text}", 2)
