"""The inbound check: one pure decision per modern request, the ladder and the header rules.

The ladder (each step only runs when the previous passed):
1. ``params._meta`` present with its required keys, well typed  -> else -32602
2. the requested protocol version is supported                -> else -32022
3. the method exists and its server capability is advertised  -> else -32601
4. the method's params decode into its type                    -> else -32602

Over HTTP (the request's headers given) the header rules of SEP-2243 join it:
- a failed step 2, 3 or 4 is reported as the header/body disagreement instead when the
  headers disagree with the body (-32020); a missing ``_meta`` (step 1) stays the error;
- after the ladder, ``subscriptions/listen`` needs an ``Accept`` that allows an event
  stream (-32600), then the ``Mcp-*`` headers must match the body (-32020).

The result carries the scopes the request needs when asked (an authenticated caller).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import msgspec

from . import errors
from . import headers as H
from . import meta as meta_keys
from .codec import decode_params, params_dict
from .types import REQUEST_PARAMS, CallToolParams, RequestMeta, RequestParams

#: The ``x-mcp-header`` annotations of a tool, by its name (None: none, or no such tool).
HeaderMap = Callable[[str], Mapping[str, Sequence[str]] | None]
#: The OAuth scopes one request needs, from its method and typed params.
ScopeNeeds = Callable[[str, Any], frozenset[str]]

_NO_SCOPES: frozenset[str] = frozenset()

#: Which server capability gates each method (None: always available).
METHOD_CAPABILITY: dict[str, str | None] = {
    "server/discover": None,
    "subscriptions/listen": None,
    "tools/list": "tools",
    "tools/call": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "completion/complete": "completions",
}

_to_meta = msgspec.convert


class Checked(msgspec.Struct, frozen=True):
    """A request that passed the check: its typed params, its validated ``_meta``, and the
    scopes it needs (filled in when the check was asked for them)."""

    method: str
    params: RequestParams
    meta: RequestMeta
    scopes: frozenset[str] = _NO_SCOPES


def check_request(
    method: str,
    raw_params: Any,
    supported_versions: Collection[str],
    capabilities: Collection[str],
    extra_methods: dict[str, tuple[type, str | None]] | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    header_map: HeaderMap | None = None,
    scopes: ScopeNeeds | None = None,
) -> Checked:
    """Check one request; raise :class:`errors.MCPError` at the first failed rule.

    ``extra_methods`` maps methods an extension adds to (params type, gating capability).
    ``headers``: the HTTP request's headers (names lower-cased), for the header rules (None:
    no headers, e.g. stdio); ``header_map`` gives a called tool's annotations for them.
    ``scopes``: resolve the scopes the request needs into :attr:`Checked.scopes`.
    """
    if headers is None:
        checked = _check_body(method, raw_params, supported_versions, capabilities, extra_methods)
    else:
        try:
            checked = _check_body(method, raw_params, supported_versions, capabilities, extra_methods)
        except errors.MCPError as exc:
            raise _header_error_first(exc, headers, method, raw_params, supported_versions) from None
        _check_headers(checked, headers, supported_versions, header_map)
    if scopes is not None:
        needed = scopes(method, checked.params)
        if needed:
            return Checked(method, checked.params, checked.meta, needed)
    return checked


def _seq(versions: Collection[str]) -> Sequence[str]:
    return versions if isinstance(versions, (tuple, list)) else tuple(versions)


def _header_error_first(exc: errors.MCPError, headers: Mapping[str, str], method: str, raw_params: Any,
                        supported_versions: Collection[str]) -> errors.MCPError:
    """A header/body disagreement outranks version, method and params errors (not a missing _meta)."""
    if exc.code not in (errors.UNSUPPORTED_PROTOCOL_VERSION, errors.METHOD_NOT_FOUND, errors.INVALID_PARAMS):
        return exc
    params = params_dict(raw_params) or {}
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(meta_keys.PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if not isinstance(version, str):
        return exc  # no body version: the missing _meta field is the error to report
    try:
        H.check_request_headers(headers, method, params, version, None, supported_versions=_seq(supported_versions),
                                lowered=True)
    except errors.MCPError as header_exc:
        return header_exc
    return exc


def _check_headers(checked: Checked, headers: Mapping[str, str], supported_versions: Collection[str],
                   header_map: HeaderMap | None) -> None:
    method = checked.method
    p = checked.params
    if method == "subscriptions/listen":
        accept = headers.get("accept", "")
        if accept and "text/event-stream" not in accept and "*/*" not in accept:
            # Its acknowledgement and notifications can only travel on an event stream.
            raise errors.invalid_request(
                "subscriptions/listen answers with text/event-stream; the Accept header must allow it")
    name_params: dict[str, Any] | None = None
    annotations = None
    if method == "tools/call":
        assert isinstance(p, CallToolParams)
        annotations = header_map(p.name) if header_map is not None else None
        if not annotations and H.mirrored_exactly(headers, method, checked.meta.protocolVersion, p.name):
            return  # the common call: nothing to decode or compare further
        name_params = {"name": p.name, "arguments": p.arguments}
    else:
        source = H.NAME_SOURCES.get(method)  # prompts/get, resources/read, tasks/*
        if source is not None:
            name_params = {source: getattr(p, source, None)}  # a field of the typed params
    H.check_request_headers(headers, method, name_params, checked.meta.protocolVersion, annotations,
                            supported_versions=_seq(supported_versions), lowered=True)


def _check_body(method: str, raw_params: Any, supported_versions: Collection[str], capabilities: Collection[str],
                extra_methods: dict[str, tuple[type, str | None]] | None) -> Checked:
    typ = REQUEST_PARAMS.get(method)
    cap = METHOD_CAPABILITY.get(method, "")
    if typ is None and extra_methods is not None and method in extra_methods:
        typ, cap = extra_methods[method]
    # Fast path: the common, valid request decodes in one pass.
    if typ is not None and (cap is None or cap in capabilities):
        params: RequestParams | None = None
        try:
            params = decode_params(raw_params, typ) if raw_params is not None else None
            m = _to_meta(params.meta, RequestMeta) if params is not None else None
        except msgspec.ValidationError:
            m = None
        if params is not None and m is not None and m.protocolVersion in supported_versions:
            return Checked(method, params, m)
    return _ladder(method, raw_params, supported_versions, capabilities, typ, cap)


def _ladder(method: str, raw_params: Any, supported_versions: Collection[str], capabilities: Collection[str],
            typ: type | None, cap: str | None) -> Checked:
    """The slow path, step by step, so the first failing step names the error."""
    params = params_dict(raw_params)
    if params is None:
        raise errors.invalid_params("Missing params: every request needs params._meta")
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise errors.invalid_params("Missing params._meta: every request must carry its protocol version and client capabilities")
    missing = [k for k in meta_keys.REQUIRED_REQUEST_KEYS if k not in meta]
    if missing:
        raise errors.invalid_params(f"Missing required _meta field: {', '.join(missing)}")
    try:
        m = _to_meta(meta, RequestMeta)
    except msgspec.ValidationError as exc:
        raise errors.invalid_params(f"Invalid _meta: {exc}") from None
    if m.protocolVersion not in supported_versions:
        raise errors.unsupported_version(m.protocolVersion, tuple(supported_versions))
    if typ is None or (cap is not None and cap not in capabilities):
        raise errors.method_not_found(method)
    try:
        typed = decode_params(raw_params, typ)
    except msgspec.ValidationError as exc:
        raise errors.invalid_params(f"Invalid params for {method}: {exc}") from None
    return Checked(method, typed, m)
