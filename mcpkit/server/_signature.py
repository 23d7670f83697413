"""Turn a handler's signature into a validated-argument type and JSON Schemas.

Arguments are validated by a msgspec Struct built from the type hints, and the same
Struct yields the published ``inputSchema`` (JSON Schema 2020-12), so the schema and
the validation can never disagree.
"""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Awaitable, Callable
from types import CoroutineType, FunctionType, GeneratorType
from typing import Annotated, Any, get_args, get_origin

import msgspec

from ..protocol import types as t
from . import _pydantic


class Header:
    """Mark a tool parameter to be mirrored into an ``Mcp-Param-<name>`` HTTP header.

    Use as ``region: Annotated[str, Header("Region")]``.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Header({self.name!r})"


_CONTENT_TYPES = (t.TextContent, t.ImageContent, t.AudioContent, t.ResourceLink, t.EmbeddedResource)


def _is_context(ann: Any) -> bool:
    from ._context import Context

    return isinstance(ann, type) and issubclass(ann, Context)


# A server's cold start answers its first request without importing inspect (with ast, dis and
# tokenize, several milliseconds): a plain function's parameters are read from its code object,
# as inspect.signature reads them; anything else (a partial, a method, a callable object, a
# wrapped or annotated-signature function, *args, positional-only) goes to inspect.
_EMPTY: Any = object()  # no default; no return annotation
_CO_COROUTINE, _CO_VARARGS, _CO_VARKEYWORDS, _CO_ITERABLE_COROUTINE = 0x80, 0x04, 0x08, 0x100
_NOT_PLAIN = ("__wrapped__", "__signature__", "_is_coroutine_marker")


def _plain_parameters(fn: Callable[..., Any]) -> tuple[bool, list[tuple[str, str | None, Any]]] | None:
    """(is a coroutine function, [(name, None, default or _EMPTY)]) for a plain function whose
    parameters need nothing inspect knows more about; None for anything else."""
    if type(fn) is not FunctionType:
        return None
    code = fn.__code__
    if code.co_posonlyargcount or code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) or any(hasattr(fn, a) for a in _NOT_PLAIN):
        return None
    positional, names = code.co_argcount, code.co_varnames
    defaults, kwdefaults = fn.__defaults__ or (), fn.__kwdefaults__ or {}
    first_default = positional - len(defaults)
    params: list[tuple[str, str | None, Any]] = [
        (names[i], None, defaults[i - first_default] if i >= first_default else _EMPTY) for i in range(positional)
    ]
    params += [(n, None, kwdefaults.get(n, _EMPTY)) for n in names[positional: positional + code.co_kwonlyargcount]]
    return bool(code.co_flags & _CO_COROUTINE), params


def _inspected_parameters(fn: Callable[..., Any]) -> tuple[bool, list[tuple[str, str | None, Any]]]:
    import inspect

    kinds: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*args", inspect.Parameter.VAR_KEYWORD: "**kwargs",
             inspect.Parameter.POSITIONAL_ONLY: "positional-only"}
    params = [(n, kinds.get(p.kind), _EMPTY if p.default is p.empty else p.default)
              for n, p in inspect.signature(fn).parameters.items()]
    return inspect.iscoroutinefunction(fn), params


def isawaitable(value: Any) -> bool:
    """:func:`inspect.isawaitable`, without importing inspect."""
    return (isinstance(value, CoroutineType)
            or (isinstance(value, GeneratorType) and bool(value.gi_code.co_flags & _CO_ITERABLE_COROUTINE))
            or isinstance(value, Awaitable))


def cleandoc(doc: str) -> str:
    """:func:`inspect.cleandoc` (the first line's leading whitespace, the other lines' common
    indentation, and leading and trailing blank lines removed), without importing inspect."""
    lines = doc.expandtabs().split("\n")
    margin = sys.maxsize
    for line in lines[1:]:
        content = len(line.lstrip())
        if content:
            margin = min(margin, len(line) - content)
    lines[0] = lines[0].lstrip()
    if margin < sys.maxsize:
        lines[1:] = [line[margin:] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The description (text before any Args section) and per-parameter descriptions."""
    if not doc:
        return None, {}
    doc = cleandoc(doc)
    if ":" not in doc:  # no section and no field list (nothing below can match): no regex to compile
        return (doc.strip() or None), {}
    params: dict[str, str] = {}
    m = re.search(r"^(Args|Arguments|Parameters):\s*$", doc, re.M)
    body = doc
    if m:
        body = doc[: m.start()].strip()
        current = None
        for line in doc[m.end():].splitlines():
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                break  # next section (Returns:, Raises:)
            pm = re.match(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if pm:
                current = pm.group(1)
                params[current] = pm.group(2).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
    # Sphinx style ":param x: text"
    for pm in re.finditer(r"^:param\s+(?:\w+\s+)?(\w+):\s*(.*)$", doc, re.M):
        params[pm.group(1)] = pm.group(2).strip()
    body = re.split(r"^:(param|returns?|raises?)\b", body, flags=re.M)[0].strip()
    return (body or None), params


def _normalize(ann: Any, description: str | None) -> Any:
    """Rewrite ``Annotated`` extras into msgspec.Meta: plain strings become descriptions."""
    extras: list[Any] = []
    if get_origin(ann) is Annotated:
        base, *meta = get_args(ann)
        for m in meta:
            if isinstance(m, str):
                description = description or m
            elif isinstance(m, Header):
                extras.append(msgspec.Meta(extra_json_schema={"x-mcp-header": m.name}))
            elif isinstance(m, msgspec.Meta):
                extras.append(m)
            else:
                desc = getattr(m, "description", None)  # pydantic Field and friends
                if isinstance(desc, str):
                    description = description or desc
        ann = base
    if description:
        extras.insert(0, msgspec.Meta(description=description))
    if extras:
        return Annotated[(ann, *extras)]
    return ann


def _inline_root(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec puts the root struct in $defs behind a $ref; publish it inline."""
    defs = schema.get("$defs", {})
    ref = schema.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/"):]
        root = dict(defs.pop(name))
        root.pop("title", None)
        # Nested definitions may still point at the root (recursion): keep them resolvable.
        if any(f'"#/$defs/{name}"' in msgspec.json.encode(d).decode() for d in defs.values()):
            defs[name] = dict(root)
        if defs:
            root["$defs"] = defs
        return root
    return schema


class Signature:
    """What a handler needs: how to validate arguments, call, and describe itself."""

    __slots__ = ("fn", "is_async", "args_type", "param_names", "ctx_name", "input_schema", "description", "param_docs", "fields",
                 "pydantic")

    def __init__(self, fn: Callable[..., Any], kind: str) -> None:
        self.fn = fn
        self.is_async, params = _plain_parameters(fn) or _inspected_parameters(fn)
        self.description, self.param_docs = parse_docstring(fn.__doc__)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:  # unresolvable forward reference
            raise TypeError(f"cannot resolve the type hints of {fn.__qualname__}: {exc}") from exc
        self.ctx_name: str | None = None
        fields: list[tuple[Any, ...]] = []
        pyd: dict[str, tuple[Any, Any]] = {}  # parameters Pydantic validates: name -> (annotation, default)
        for name, param_kind, default in params:
            ann = hints.get(name, Any)
            if _is_context(ann):
                self.ctx_name = name
                continue
            if param_kind in ("*args", "**kwargs"):
                raise TypeError(f"{fn.__qualname__}: *args and **kwargs cannot be described to a client")
            if param_kind == "positional-only":
                raise TypeError(f"{fn.__qualname__}: positional-only parameters are not supported")
            raw, ann = ann, _normalize(ann, self.param_docs.get(name))
            if kind != "resource" and _pydantic.wants(raw, ann):
                # msgspec only checks presence; Pydantic validates the value (after msgspec).
                pyd[name] = (raw, _pydantic.MISSING if default is _EMPTY else default)
                ann = Any
                if default is not _EMPTY:
                    fields.append((name, ann, msgspec.UNSET))
                    continue
            if default is _EMPTY:
                fields.append((name, ann))
            else:
                fields.append((name, ann, default))
        self.fields = fields
        self.param_names = tuple(f[0] for f in fields)
        self.args_type = msgspec.defstruct(
            f"{_camel(fn.__name__)}Arguments", fields, kw_only=True, module=fn.__module__
        )
        schema = _inline_root(msgspec.json.schema(self.args_type))
        if not fields and kind == "tool":
            schema = {"type": "object", "additionalProperties": False}
        self.pydantic: _pydantic.PydanticArgs | None = None
        if pyd:
            try:
                self.pydantic = _pydantic.PydanticArgs(pyd)
                self.pydantic.patch_schema(schema, self.param_docs)
            except Exception as exc:  # neither msgspec nor Pydantic can describe a parameter
                raise TypeError(f"{fn.__qualname__}: a parameter's type cannot be described: {exc}") from exc
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        if not schema.get("required", True):
            del schema["required"]
        self.input_schema = schema

    def bind(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Validate and convert ``arguments``; raises msgspec.ValidationError."""
        try:
            args = msgspec.convert(arguments or {}, self.args_type)
        except msgspec.ValidationError:
            # JSON has one number type: 42.0 is a valid "integer". Retry with whole floats as ints.
            fixed = _whole_floats_to_int(arguments)
            if fixed is arguments:
                raise
            args = msgspec.convert(fixed or {}, self.args_type)
        values = {n: getattr(args, n) for n in self.param_names}  # the fields of the user function's argument struct
        if self.pydantic is not None:
            self.pydantic.validate(values)
        return values


def _whole_floats_to_int(value: Any) -> Any:
    """``value`` with every integral float replaced by an int (the same object if none)."""
    if type(value) is float and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if type(value) is dict:
        out = {k: _whole_floats_to_int(v) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if type(value) is list:
        items = [_whole_floats_to_int(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_")) or "Handler"


# ------------------------------------------------------------------ return values
class Output:
    """How a tool's return value becomes a CallToolResult."""

    __slots__ = ("schema", "wrap", "structured", "dump")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.schema: dict[str, Any] | None = None
        self.wrap = False
        self.structured = False
        #: Turns the return value into JSON-able builtins when msgspec cannot (a Pydantic type).
        self.dump: Callable[[Any], Any] | None = None
        try:
            ret = typing.get_type_hints(fn, include_extras=True).get("return", _EMPTY)
        except Exception:
            ret = _EMPTY
        raw = ret
        if get_origin(ret) is Annotated:
            ret = get_args(ret)[0]
        if ret is _EMPTY or ret is Any or ret is None or ret is type(None):
            return
        if ret is str or _is_content_type(ret):
            return
        if getattr(ret, "__origin__", None) in (typing.Awaitable, typing.Coroutine):  # the user's return annotation
            return
        if _pydantic.wants(raw, ret):
            found = _pydantic.output(raw)
            if found is None:
                return  # not describable by Pydantic either: unstructured output
            schema, self.dump = _inline_root(found[0]), found[1]
        else:
            try:
                schema = _inline_root(msgspec.json.schema(ret))
            except (TypeError, msgspec.EncodeError, ValueError):
                return  # not describable (e.g. an arbitrary class): fall back to unstructured output
        self.structured = True
        if schema.get("type") == "object":
            self.schema = schema
        else:
            # Structured content must be an object for 2025-11-25 clients; wrap scalars and lists.
            self.wrap = True
            wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
            if "$defs" in schema:
                wrapped["$defs"] = schema.pop("$defs")
            self.schema = wrapped


def _is_content_type(tp: Any) -> bool:
    if tp in _CONTENT_TYPES or tp is t.CallToolResult:
        return True
    origin = get_origin(tp)
    if origin in (list, typing.Union) or str(origin) == "types.UnionType":
        return all(_is_content_type(a) or a is str for a in get_args(tp))
    import types as _types

    if isinstance(tp, _types.UnionType):
        return all(_is_content_type(a) or a is str for a in get_args(tp))
    return False


def is_dataclass_instance(v: Any) -> bool:
    # dataclasses.is_dataclass's own test, without importing dataclasses (an instance of one
    # means the user's code loaded it).
    return hasattr(type(v), "__dataclass_fields__") and not isinstance(v, type)
