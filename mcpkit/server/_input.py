"""Asking the client for input (elicitation, sampling, roots) from inside a handler.

Handlers call ``await ctx.elicit(...)`` and friends. How the question reaches the client
depends on the era, never on the handler:

- 2026-07-28 (MRTR): the handler is unwound with :class:`InputRequired`, the server answers
  ``input_required``, and the client retries with ``inputResponses``; the handler then runs
  again from the top and each question finds its answer.
- 2025-11-25 (legacy sessions): the question goes out as a real server-to-client request.

Each is an :class:`InputChannel`, chosen per request by the era (:mod:`._encode`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from ..protocol import errors
from ..protocol import types as t

#: Questions keyed by the handler: ``{key: {"method": ..., "params": ...}}``.
InputRequests = dict[str, dict[str, Any]]
"""Questions keyed by the handler: ``{key: {"method": ..., "params": ...}}``."""


class InputChannel(Protocol):
    """Where a handler's questions go (``ctx.input_channel``); the era picks it per request,
    and an extension may replace it (a task parks its questions until ``tasks/update``)."""

    async def ask(self, requests: InputRequests) -> dict[str, Any]:
        """The raw answers, keyed like ``requests`` (or unwind with :class:`InputRequired`)."""
        ...

def answer_types() -> dict[str, type]:
    """The type of the answer to each kind of question (made when first asked for: those wire
    types are defined on first use, see :mod:`mcpkit.protocol.types`)."""
    global _answer_types
    if _answer_types is None:
        _answer_types = {
            "elicitation/create": t.ElicitResult,
            "sampling/createMessage": t.CreateMessageResult,
            "roots/list": t.ListRootsResult,
        }
    return _answer_types


_answer_types: dict[str, type] | None = None


class InputRequired(BaseException):
    """Unwinds a handler whose question has no answer yet.

    A BaseException so that a handler's ``except Exception`` cannot swallow it.
    """

    def __init__(self, requests: InputRequests) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests


def required_capabilities(request: Mapping[str, Any], caps: Mapping[str, Any]) -> dict[str, Any]:
    """The client capabilities ``request`` needs that ``caps`` (this request's own) lacks."""
    method = request.get("method")
    params = request.get("params") or {}
    if method == "elicitation/create":
        el = caps.get("elicitation")
        mode = params.get("mode", "form")
        if not isinstance(el, dict):
            return {"elicitation": {mode: {}} if mode == "url" else {}}
        # `elicitation: {}` means form only.
        if mode == "url" and "url" not in el:
            return {"elicitation": {"url": {}}}
        if mode == "form" and el and "form" not in el:
            return {"elicitation": {"form": {}}}
        return {}
    if method == "sampling/createMessage":
        sm = caps.get("sampling")
        if not isinstance(sm, dict):
            return {"sampling": {"tools": {}} if params.get("tools") else {}}
        if (params.get("tools") or params.get("toolChoice")) and "tools" not in sm:
            return {"sampling": {"tools": {}}}
        if params.get("includeContext") in ("thisServer", "allServers") and "context" not in sm:
            return {"sampling": {"context": {}}}
        return {}
    if method == "roots/list":
        return {} if isinstance(caps.get("roots"), dict) else {"roots": {}}
    raise ValueError(f"{method!r} is not an input request (elicitation/create, sampling/createMessage, roots/list)")


def check_capabilities(requests: Mapping[str, Mapping[str, Any]], caps: Mapping[str, Any]) -> None:
    needed: dict[str, Any] = {}
    for req in requests.values():
        for k, v in required_capabilities(req, caps).items():
            if isinstance(v, dict) and isinstance(needed.get(k), dict):
                needed[k] = {**needed[k], **v}
            else:
                needed[k] = v
    if needed:
        raise errors.missing_capability(needed)


def parse_answer(key: str, request: Mapping[str, Any], raw: Any) -> Any:
    """The typed answer ``raw`` to the question ``request`` (asked under ``key``); -32602 when
    it does not fit (the wrong shape, or form content that breaks the requested schema)."""
    method = request["method"]
    try:
        answer: Any = msgspec.convert(raw, answer_types()[method])
    except msgspec.ValidationError as exc:
        raise errors.invalid_params(f"Invalid input response {key!r} for {method}: {exc}") from None
    if method == "elicitation/create" and answer.action == "accept":
        params = request.get("params") or {}
        problem = form_content_problem(params.get("requestedSchema"), answer.content)
        if problem is not None and params.get("mode", "form") == "form":
            raise errors.invalid_params(f"Invalid input response {key!r}: {problem}")
    return answer


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "number": (int, float), "integer": (int,), "array": (list,),
}


def form_content_problem(schema: Any, content: Any) -> str | None:
    """Why accepted form content cannot be what was asked for, or None.

    Only the JSON types of the fields present are checked: a number where a string was asked
    is a malformed answer. Missing optional-looking fields and values outside an enum are
    left to the handler (deployed clients send both, and the handler knows what it can use).
    """
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties") or {}
    content = {} if content is msgspec.UNSET or content is None else content
    if not isinstance(content, dict):
        return "content must be an object"
    for name, value in content.items():
        prop = props.get(name)
        if not isinstance(prop, dict):
            continue  # unknown fields are ignored
        typ = prop.get("type")
        allowed = _JSON_TYPES.get(typ) if isinstance(typ, str) else None
        if allowed is not None:
            if isinstance(value, bool) and typ != "boolean":
                return f"field {name!r} must be {typ}"
            if not isinstance(value, allowed) or (typ == "integer" and isinstance(value, float) and not value.is_integer()):
                return f"field {name!r} must be {typ}"
    return None


def schema_of(schema: Any) -> dict[str, Any]:
    """An elicitation ``requestedSchema`` from a dict, a dataclass, TypedDict or Struct type."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if isinstance(schema, dict):
        return schema
    from ._signature import _inline_root

    out = _inline_root(msgspec.json.schema(schema))
    out.pop("$defs", None)
    return out
