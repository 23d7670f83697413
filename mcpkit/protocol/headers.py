"""Streamable HTTP request-metadata headers (SEP-2243): building them on the client,
validating them against the body on the server, and the ``x-mcp-header`` tool annotation.

Sans-IO: pure functions over strings, dicts and header mappings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from mcpkit.protocol import lazy_re
from mcpkit.protocol.errors import HEADER_MISMATCH, InvalidHeaderAnnotation, MCPError, header_mismatch
from mcpkit.protocol.versions import MODERN_VERSIONS

__all__ = [
    "PROTOCOL_VERSION_HEADER",
    "METHOD_HEADER",
    "NAME_HEADER",
    "PARAM_HEADER_PREFIX",
    "ANNOTATION_KEY",
    "MAX_SAFE_INTEGER",
    "NAME_SOURCES",
    "SENTINEL_PREFIX",
    "SENTINEL_SUFFIX",
    "InvalidHeaderAnnotation",
    "needs_encoding",
    "encode_value",
    "decode_value",
    "param_header_name",
    "header_annotations",
    "argument_at",
    "client_headers",
    "check_request_headers",
    "is_header_mismatch",
]

PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
PARAM_HEADER_PREFIX = "Mcp-Param-"
ANNOTATION_KEY = "x-mcp-header"

#: Largest integer a JavaScript intermediary can hold exactly; mirrored integers stay within ±this.
MAX_SAFE_INTEGER = 2**53 - 1

#: Methods that carry ``Mcp-Name``, and the ``params`` field it mirrors (SEP-2243; the
#: ``tasks/*`` methods of the tasks extension mirror ``taskId``, SEP-2663).
NAME_SOURCES: Mapping[str, str] = {
    "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
    "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId",
}

# The markers are case-sensitive: "=?BASE64?...?=" is an ordinary literal.
SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="
_SENTINEL_RE = lazy_re(globals(), "_SENTINEL_RE", r"=\?base64\?(.*)\?=", re.DOTALL)

# RFC 9110 §5.6.2 tchar.
_TOKEN_RE = lazy_re(globals(), "_TOKEN_RE", r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Field-value characters a server accepts: VCHAR, SP, HTAB (RFC 9110 §5.5).
_FIELD_VALUE_RE = lazy_re(globals(), "_FIELD_VALUE_RE", r"[\t\x20-\x7e]*")
# What a client may send unencoded: printable ASCII with no leading/trailing SP.
# HTAB counts as a control character here (SEP-2243 encoding rule 4).
_PLAIN_RE = lazy_re(globals(), "_PLAIN_RE", r"(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?")
# A decoded header compared with a numeric body value.
_NUMBER_RE = lazy_re(globals(), "_NUMBER_RE", r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_OWS = " \t"

# Keywords whose value is instance data, never a schema: an "x-mcp-header" key inside
# e.g. a `default` object is data, not an annotation.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "example", "required"})
# Keywords whose value maps arbitrary names (not keywords) to subschemas.
_NAME_MAP_KEYWORDS = frozenset({"$defs", "definitions", "patternProperties", "dependentSchemas", "dependencies"})
_PRIMITIVE_TYPES = ("string", "integer", "boolean")




# --------------------------------------------------------------------------- values


def needs_encoding(text: str) -> bool:
    """True when ``text`` cannot travel as a plain header value and needs the Base64 sentinel."""
    if _PLAIN_RE.fullmatch(text) is None:
        return True  # non-ASCII, control characters, or leading/trailing whitespace
    # A plain value that looks like a sentinel would be decoded by the receiver.
    return text.startswith(SENTINEL_PREFIX) and text.endswith(SENTINEL_SUFFIX)


def encode_value(value: str | int | bool) -> str:
    """The header form of a mirrored value: strings as-is or Base64-sentinel, ints in decimal,
    bools as ``true``/``false``. Raises ValueError for integers outside ±(2^53−1)."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"integer {value} is outside the safe range ±(2^53-1) for header mirroring")
        return str(value)
    if isinstance(value, str):
        if needs_encoding(value):
            import base64  # (only for values that need the sentinel)

            return SENTINEL_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + SENTINEL_SUFFIX
        return value
    raise TypeError(f"cannot mirror a {type(value).__name__} into a header")


def decode_value(raw: str) -> str:
    """The value a received ``Mcp-Name``/``Mcp-Param-*`` header carries.

    Surrounding SP/HTAB (HTTP OWS) is dropped; an exact ``=?base64?…?=`` is decoded, anything
    else is literal. Raises ValueError for characters not allowed in a field value, bad Base64
    (padding, alphabet) or a payload that is not UTF-8.
    """
    text = raw.strip(_OWS)
    if _FIELD_VALUE_RE.fullmatch(text) is None:
        raise ValueError("header value contains invalid characters")
    m = _SENTINEL_RE.fullmatch(text)
    if m is None:
        return text
    import base64  # (only for sentinel-encoded values)
    import binascii

    try:
        data = base64.b64decode(m.group(1), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"invalid Base64 in sentinel-encoded header value: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("Base64 header value does not decode to valid UTF-8") from None


def param_header_name(name: str) -> str:
    """``Mcp-Param-{name}`` for an ``x-mcp-header`` value."""
    return PARAM_HEADER_PREFIX + name


# --------------------------------------------------------------------------- annotations


def _pointer(loc: tuple[str, ...]) -> str:
    if not loc:
        return "the schema root"
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in loc)


def header_annotations(input_schema: Any) -> dict[str, tuple[str, ...]]:
    """Map each ``x-mcp-header`` name (the ``{Name}`` of ``Mcp-Param-{Name}``, original case)
    to the property path it mirrors, e.g. ``{"Region": ("region",)}``.

    Raises InvalidHeaderAnnotation when any annotation in the schema breaks a rule; per spec
    the whole tool is then invalid (HTTP clients drop it from ``tools/list``).
    """
    if not isinstance(input_schema, dict):
        return {}
    found: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}  # lower-cased name -> location, for the uniqueness rule
    # Iterative DFS (document order) so a hostile, deeply nested schema cannot blow the stack.
    # Entries: (node, location for messages, property path, statically reachable?).
    stack: list[tuple[Any, tuple[str, ...], tuple[str, ...], bool]] = [(input_schema, (), (), True)]
    while stack:
        node, loc, path, reachable = stack.pop()
        if isinstance(node, list):
            stack.extend((item, loc + (str(i),), path, False) for i, item in reversed(list(enumerate(node))))
            continue
        if not isinstance(node, dict):
            continue
        if ANNOTATION_KEY in node:
            name = _check_annotation(node, loc, path, reachable)
            key = name.lower()
            if key in seen:
                raise InvalidHeaderAnnotation(
                    f"x-mcp-header {name!r} at {_pointer(loc)} duplicates the one at {seen[key]} "
                    "(names must be case-insensitively unique)"
                )
            seen[key] = _pointer(loc)
            found[name] = path
        children: list[tuple[Any, tuple[str, ...], tuple[str, ...], bool]] = []
        for kw, sub in node.items():
            if kw == ANNOTATION_KEY or kw in _DATA_KEYWORDS:
                continue
            if kw == "properties" and isinstance(sub, dict):
                # The only keyword that keeps a property statically reachable.
                for prop, schema in sub.items():
                    children.append((schema, loc + (kw, prop), path + (prop,), reachable))
            elif kw in _NAME_MAP_KEYWORDS and isinstance(sub, dict):
                # $defs targets etc.: annotations there are only reachable via $ref, so invalid.
                for key, schema in sub.items():
                    children.append((schema, loc + (kw, key), path, False))
            elif isinstance(sub, dict):
                # Single subschemas (items, not, if/then/else, additionalProperties, ...) and
                # unknown keywords: anything found below is unreachable.
                children.append((sub, loc + (kw,), path, False))
            elif isinstance(sub, list):
                children.append((sub, loc + (kw,), path, False))
        stack.extend(reversed(children))
    return found


def _check_annotation(node: dict[str, Any], loc: tuple[str, ...], path: tuple[str, ...], reachable: bool) -> str:
    where = _pointer(loc)
    name = node[ANNOTATION_KEY]
    if not isinstance(name, str):
        raise InvalidHeaderAnnotation(f"x-mcp-header at {where} must be a string, not {type(name).__name__}")
    if name == "":
        raise InvalidHeaderAnnotation(f"x-mcp-header at {where} is empty")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidHeaderAnnotation(f"x-mcp-header {name!r} at {where} contains control characters")
    if _TOKEN_RE.fullmatch(name) is None:
        raise InvalidHeaderAnnotation(
            f"x-mcp-header {name!r} at {where} is not an HTTP field-name token (RFC 9110 1*tchar)"
        )
    if not reachable:
        raise InvalidHeaderAnnotation(
            f"x-mcp-header {name!r} at {where} is not statically reachable from the schema root "
            "through 'properties' keys alone"
        )
    if not path:
        raise InvalidHeaderAnnotation(f"x-mcp-header {name!r} at {where} does not annotate a property")
    typ = node.get("type")
    if typ not in _PRIMITIVE_TYPES:  # also rejects "number", lists like ["string", "null"], and no type
        shown = "no type" if typ is None else f"type {typ!r}"
        raise InvalidHeaderAnnotation(
            f"x-mcp-header {name!r} at {where} is on a property with {shown}; "
            "only 'string', 'integer' or 'boolean' may be mirrored"
        )
    return name


def argument_at(arguments: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` in tool ``arguments``, or None when absent or null (both mean no header)."""
    value = arguments
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


# --------------------------------------------------------------------------- client side


def _mirror_text(value: Any, what: str) -> str:
    """Header text for an argument value; the JSON value's own type decides the format."""
    if isinstance(value, (str, bool, int)):
        try:
            return encode_value(value)
        except ValueError as exc:
            raise ValueError(f"cannot mirror {what}: {exc}") from None
    if isinstance(value, float) and value.is_integer():
        # JSON has one number type; 42.0 is the integer 42.
        return _mirror_text(int(value), what)
    raise ValueError(f"cannot mirror {what}: a {type(value).__name__} is not a string, integer or boolean")


def _require_plain(value: str, header: str) -> str:
    # These headers have no sentinel form, so an unsafe value cannot be sent at all.
    if _PLAIN_RE.fullmatch(value) is None:
        raise ValueError(f"{value!r} cannot be sent as a {header} header value")
    return value


@functools.lru_cache(maxsize=256)
def _base_headers(method: str, protocol_version: str, name: str | None) -> tuple[tuple[str, str], ...]:
    """The version, method and name headers (the same few again and again: kept, bounded)."""
    headers = [(PROTOCOL_VERSION_HEADER, _require_plain(protocol_version, PROTOCOL_VERSION_HEADER)),
               (METHOD_HEADER, _require_plain(method, METHOD_HEADER))]
    if name is not None:
        headers.append((NAME_HEADER, encode_value(name)))
    return tuple(headers)


def client_headers(
    method: str,
    params: Mapping[str, Any] | None,
    protocol_version: str,
    annotations: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, str]:
    """The MCP metadata headers an HTTP client sends with a request (or notification) POST.

    ``annotations`` is the called tool's ``header_annotations(inputSchema)`` from the latest
    ``tools/list``, or None when unknown (then no ``Mcp-Param-*`` headers are sent). Transport
    headers (Content-Type, Accept, auth) are not included. Raises ValueError when a value cannot
    be mirrored (unsafe method/version text, out-of-range integer, non-primitive argument).
    """
    params = params if isinstance(params, Mapping) else {}
    source = NAME_SOURCES.get(method)
    name = params.get(source) if source is not None else None
    # A missing name is left for the server's params validation (-32602) to report.
    headers = dict(_base_headers(method, protocol_version, name if isinstance(name, str) else None))
    if method == "tools/call" and annotations:
        arguments = params.get("arguments")
        for header_name, path in annotations.items():
            value = argument_at(arguments, path)
            if value is None:
                continue  # absent or null: omit; "" is a value and is sent as an empty header
            headers[param_header_name(header_name)] = _mirror_text(value, f"argument {'.'.join(path)!r}")
    return headers


# --------------------------------------------------------------------------- server side


def _show(value: Any, limit: int = 80) -> str:
    # Header values are attacker-controlled; keep error messages short.
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain_header(name: str, raw: str) -> str:
    text = raw.strip(_OWS)
    if _FIELD_VALUE_RE.fullmatch(text) is None:
        raise header_mismatch(f"Header mismatch: {name} header contains invalid characters")
    return text


def _decoded_header(name: str, raw: str) -> str:
    try:
        return decode_value(raw)
    except ValueError as exc:
        raise header_mismatch(f"Header mismatch: {name} header is malformed ({exc})") from None


def _value_matches(header: str, body: Any, name: str) -> bool:
    """Compare a decoded header with the body value, by the body value's JSON type."""
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, (int, float)):
        if abs(body) > MAX_SAFE_INTEGER:
            raise header_mismatch(
                f"Header mismatch: body value for {name} is outside the safe integer range ±(2^53-1)"
            )
        if _NUMBER_RE.fullmatch(header) is None:
            return False
        try:
            number = Decimal(header)
        except InvalidOperation:
            return False
        if isinstance(body, float) and not body.is_integer():
            return float(number) == body
        # Exact, so 42 == 42.0 but 9007199254740993 is not rounded onto ...992.
        return number == int(body)
    if isinstance(body, str):
        return header == body
    return False  # objects/arrays cannot be mirrored


def mirrored_exactly(headers: Mapping[str, str], method: str, version: str, name: str | None) -> bool:
    """Whether a modern POST's headers (names lower-cased) repeat its body byte for byte:
    ``MCP-Protocol-Version``, ``Mcp-Method`` and, when ``name`` is given, a plain ``Mcp-Name``.
    True means :func:`check_request_headers` passes when no ``Mcp-Param-*`` annotation
    applies (the hot path's shortcut; anything else takes the full check)."""
    if headers.get("mcp-protocol-version") != version or headers.get("mcp-method") != method:
        return False
    return name is None or (headers.get("mcp-name") == name and _PLAIN_RE.fullmatch(name) is not None)


def check_request_headers(
    headers: Mapping[str, str],
    method: str,
    params: Mapping[str, Any] | None,
    body_version: str | None,
    annotations: Mapping[str, Sequence[str]] | None = None,
    *,
    notification: bool = False,
    supported_versions: Sequence[str] = MODERN_VERSIONS,
    lowered: bool = False,
) -> None:
    """Validate a modern POST's MCP headers against its body; raise ``MCPError`` -32020
    (HTTP 400) on the first problem.

    ``headers`` maps header names (lower-case; other case is tolerated) to values.
    ``body_version`` is ``params._meta["io.modelcontextprotocol/protocolVersion"]``; when it
    is None the comparison is skipped so the missing ``_meta`` field is reported as -32602 by
    the caller. ``annotations`` is the called tool's ``header_annotations``; unannotated
    ``Mcp-Param-*`` headers are ignored. With ``notification=True`` missing ``Mcp-Method``/
    ``MCP-Protocol-Version`` are tolerated (header rules for notification POSTs are undefined)
    but present ones must still match.
    """
    # Callers on the hot path pass names already lower-cased (lowered=True).
    hdrs = headers if lowered else {k.lower(): v for k, v in headers.items()}
    params = params if isinstance(params, Mapping) else {}

    raw = hdrs.get(PROTOCOL_VERSION_HEADER.lower())
    if raw is None:
        if not notification:
            raise header_mismatch(
                f"Header mismatch: missing required {PROTOCOL_VERSION_HEADER} header "
                f"(supported protocol versions: {', '.join(supported_versions)})"
            )
    elif raw != body_version:  # the exact match needs no further look
        version = _plain_header(PROTOCOL_VERSION_HEADER, raw)
        if body_version is not None and version != body_version:
            raise header_mismatch(
                f"Header mismatch: {PROTOCOL_VERSION_HEADER} header value {_show(version)} "
                f"does not match body _meta protocolVersion {_show(body_version)}"
            )

    raw = hdrs.get(METHOD_HEADER.lower())
    if raw is None:
        if not notification:
            raise header_mismatch(f"Header mismatch: missing required {METHOD_HEADER} header")
    elif raw != method:
        # Values are case-sensitive: "TOOLS/LIST" is not "tools/list".
        value = _plain_header(METHOD_HEADER, raw)
        if value != method:
            raise header_mismatch(
                f"Header mismatch: {METHOD_HEADER} header value {_show(value)} "
                f"does not match body method {_show(method)}"
            )

    source = NAME_SOURCES.get(method)
    body_name = params.get(source) if source is not None else None
    # A non-string/missing body name is a params error (-32602), reported by the caller.
    if isinstance(body_name, str):
        raw = hdrs.get(NAME_HEADER.lower())
        if raw is None:
            raise header_mismatch(f"Header mismatch: missing required {NAME_HEADER} header for {method}")
        value = raw if (raw == body_name and _PLAIN_RE.fullmatch(raw)) else _decoded_header(NAME_HEADER, raw)
        if value != body_name:
            raise header_mismatch(
                f"Header mismatch: {NAME_HEADER} header value {_show(value)} "
                f"does not match body value {_show(body_name)}"
            )

    if method != "tools/call" or not annotations:
        return
    arguments = params.get("arguments")
    for header_name, path in annotations.items():
        full = param_header_name(header_name)
        raw = hdrs.get(full.lower())
        body = argument_at(arguments, path)
        where = ".".join(path)
        if body is None:
            # Null and absent both mean "no header"; one present anyway disagrees with the body.
            if raw is not None:
                raise header_mismatch(
                    f"Header mismatch: {full} header is present but argument {where!r} is absent or null"
                )
            continue
        if raw is None:
            raise header_mismatch(
                f"Header mismatch: missing {full} header although argument {where!r} has a value"
            )
        value = _decoded_header(full, raw)
        if not _value_matches(value, body, full):
            raise header_mismatch(
                f"Header mismatch: {full} header value {_show(value)} does not match body value {_show(body)}"
            )


def is_header_mismatch(exc: BaseException) -> bool:
    """True for the -32020 error this module raises (e.g. to trigger a client's re-list-and-retry)."""
    return isinstance(exc, MCPError) and exc.code == HEADER_MISMATCH
