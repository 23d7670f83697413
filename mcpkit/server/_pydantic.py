"""Pydantic types in handler signatures, where Pydantic is installed and already in use.

msgspec stays the fast path: a parameter or return type goes through Pydantic only when it
involves Pydantic (a ``BaseModel``, a Pydantic dataclass, ``Annotated[..., Field(...)]`` or an
``annotated_types`` constraint, a union or container holding one of those), or when msgspec
cannot describe it and Pydantic is loaded. Pydantic is never imported by this module unless the
application has imported it already (a type from it is in a signature), so ``import mcpkit``
and a server without Pydantic types never load it.

Pydantic's validation errors become ``msgspec.ValidationError`` with msgspec's wording
(``<what went wrong> - at `$.p.x```), so every caller of ``Signature.bind`` reports them exactly
as it reports msgspec's own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

import msgspec

MISSING: Any = msgspec.UNSET


def loaded() -> bool:
    """Whether the application has imported Pydantic (no annotation can involve it otherwise)."""
    return "pydantic" in sys.modules


def wants(raw: Any, normalized: Any) -> bool:
    """Whether a parameter or return type needs Pydantic: ``raw`` (as annotated) involves it, or
    msgspec cannot take ``normalized`` (its msgspec form) and Pydantic is loaded."""
    if not loaded():
        return False
    if _involves(raw, 0):
        return True
    try:  # not Pydantic's, but msgspec cannot take it: Pydantic may (a TypeAdapter-able type)
        msgspec.json.schema(normalized)
    except (TypeError, ValueError, msgspec.EncodeError):
        return True
    return False


def _is_pydantic_object(obj: Any) -> bool:
    module = getattr(type(obj), "__module__", "") or ""
    return module.split(".", 1)[0] in ("pydantic", "pydantic_core", "annotated_types")


def _involves(ann: Any, depth: int) -> bool:
    if depth > 20:
        return False
    if get_origin(ann) is Annotated:
        base, *meta = get_args(ann)
        return any(_is_pydantic_object(m) for m in meta) or _involves(base, depth + 1)
    if isinstance(ann, type) and (hasattr(ann, "__pydantic_validator__") or hasattr(ann, "__pydantic_fields__")):
        return True  # BaseModel, RootModel, a Pydantic dataclass
    return any(_involves(a, depth + 1) for a in get_args(ann) if not isinstance(a, (str, int, bool, bytes)))


def _path(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def as_msgspec_error(name: str, exc: Any) -> msgspec.ValidationError:
    """Pydantic's ``ValidationError`` for argument ``name`` in msgspec's words (its first error)."""
    errs = exc.errors(include_url=False, include_context=False, include_input=False)
    if not errs:
        return msgspec.ValidationError(f"{exc} - at `$.{name}`")
    first = errs[0]
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return msgspec.ValidationError(f"{first['msg']}{more} - at `$.{name}{_path(tuple(first['loc']))}`")


def _strip_titles(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    return schema


def _merge_defs(target: dict[str, Any], defs: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """Add Pydantic's ``defs`` to msgspec's ``target``; a clashing name is renamed (refs in
    ``props`` and ``defs`` rewritten). Returns ``props`` with any renaming applied."""
    renames: dict[str, str] = {}
    for key, value in defs.items():
        if key in target and target[key] != value:
            n = 2
            while f"{key}{n}" in target or f"{key}{n}" in defs:
                n += 1
            renames[key] = f"{key}{n}"
    if renames:
        text = msgspec.json.encode([props, defs]).decode()
        for old, new in renames.items():
            text = text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
        props, defs = msgspec.json.decode(text)
        defs = {renames.get(k, k): v for k, v in defs.items()}
    target.update(defs)
    return props


class PydanticArgs:
    """Validation and JSON Schema for the Pydantic-typed parameters of one handler."""

    __slots__ = ("adapters", "defaults")

    def __init__(self, fields: dict[str, tuple[Any, Any]]) -> None:
        """``fields``: name -> (annotation, default or ``MISSING``)."""
        from pydantic import TypeAdapter

        self.adapters: dict[str, Any] = {name: TypeAdapter(ann) for name, (ann, _d) in fields.items()}
        self.defaults: dict[str, Any] = {name: d for name, (_a, d) in fields.items()}

    def patch_schema(self, schema: dict[str, Any], descriptions: dict[str, str]) -> None:
        """Put Pydantic's schema for each of its parameters into msgspec's ``schema``."""
        from pydantic import TypeAdapter

        keyed, top = TypeAdapter.json_schemas([(n, "validation", a) for n, a in self.adapters.items()])
        props: dict[str, Any] = {}
        for name, adapter in self.adapters.items():
            prop = _strip_titles(dict(keyed[(name, "validation")]))
            desc = descriptions.get(name)
            if desc and "description" not in prop:
                prop["description"] = desc
            default = self.defaults[name]
            if default is not MISSING and "default" not in prop:
                try:
                    prop["default"] = adapter.dump_python(default, mode="json", by_alias=True)
                except Exception:  # a default Pydantic cannot serialise is left out of the schema
                    pass
            props[name] = prop
        if top.get("$defs"):
            props = _merge_defs(schema.setdefault("$defs", {}), top["$defs"], props)
        schema.setdefault("properties", {}).update(props)

    def validate(self, values: dict[str, Any]) -> None:
        """Replace each Pydantic-typed value in ``values`` by its validated form (in place)."""
        from pydantic import ValidationError

        for name, adapter in self.adapters.items():
            value = values.get(name, MISSING)
            if value is MISSING:
                values[name] = self.defaults[name]
                continue
            try:
                values[name] = adapter.validate_python(value)
            except ValidationError as exc:
                raise as_msgspec_error(name, exc) from None


def output(ret: Any) -> tuple[dict[str, Any], Callable[[Any], Any]] | None:
    """(the JSON Schema, a serialiser to JSON-able builtins) of a Pydantic return type, or None
    when Pydantic cannot describe it either."""
    from pydantic import TypeAdapter

    try:
        adapter: Any = TypeAdapter(ret)
        schema = adapter.json_schema(mode="serialization", by_alias=True)
    except Exception:
        return None

    def dump(value: Any) -> Any:
        return adapter.dump_python(value, mode="json", by_alias=True)

    return _strip_titles(dict(schema)), dump


def to_builtins_hook(obj: Any) -> Any:
    """msgspec ``enc_hook``: a Pydantic model or dataclass returned where no type said so."""
    if hasattr(type(obj), "__pydantic_serializer__") and "pydantic_core" in sys.modules:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(obj, by_alias=True)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")
