"""The inbound validation ladder: one pure decision per modern request.

Order (each step only runs when the previous passed):
1. ``params._meta`` present with its required keys, well typed  -> else -32602
2. the requested protocol version is supported                -> else -32022
3. the method exists and its server capability is advertised  -> else -32601
4. the method's params decode into its type                    -> else -32602
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec

from . import errors
from . import meta as meta_keys
from .codec import decode_params, params_dict
from .types import REQUEST_PARAMS, RequestMeta, RequestParams

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
    """A request that passed the ladder: its typed params and its validated ``_meta``."""

    method: str
    params: RequestParams
    meta: RequestMeta


def check_request(
    method: str,
    raw_params: Any,
    supported_versions: Collection[str],
    capabilities: Collection[str],
    extra_methods: dict[str, tuple[type, str | None]] | None = None,
) -> Checked:
    """Run the ladder on one request; raise :class:`errors.MCPError` at the first failed step.

    ``extra_methods`` maps methods an extension adds to (params type, gating capability).
    """
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
