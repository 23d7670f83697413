"""Which era a message belongs to, decided from the message itself (pure)."""

from __future__ import annotations

from typing import Any, Literal

from . import errors, versions
from . import meta as M

#: Methods that exist only in 2025-11-25 and earlier.
LEGACY_ONLY_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
#: Methods that exist only in 2026-07-28.
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})


def request_era(params: Any) -> Literal["modern", "legacy"]:
    """Modern when ``params._meta`` names a protocol version; legacy otherwise."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return "modern" if isinstance(meta, dict) and M.PROTOCOL_VERSION in meta else "legacy"


def negotiate_legacy(requested: Any, supported: tuple[str, ...] = versions.LEGACY_VERSIONS) -> str:
    """The version a dual-era server answers ``initialize`` with: the requested one when it
    is a supported legacy version, else the newest legacy version (never a modern one)."""
    if isinstance(requested, str) and requested in supported:
        return requested
    return supported[0]


def validate_initialize(params: Any) -> errors.MCPError | None:
    """The error an ``initialize`` request's params deserve, or None when they are well formed.

    Checked before any session exists for it, so a flood of bad initializes costs nothing.
    """
    if not isinstance(params, dict):
        return errors.invalid_params("initialize needs params")
    if not isinstance(params.get("protocolVersion"), str):
        return errors.invalid_params("initialize: protocolVersion must be a string")
    if not isinstance(params.get("capabilities"), dict):
        return errors.invalid_params("initialize: capabilities must be an object")
    info = params.get("clientInfo")
    if not (isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return errors.invalid_params("initialize: clientInfo needs a name and a version")
    return None


# ------------------------------------------------------------------ client-side era probe
Verdict = Literal["modern", "legacy", "error"]


def _modern_error(error: Any) -> bool:
    """A JSON-RPC error only a 2026-07-28 server would send, with the data shape it defines."""
    if not isinstance(error, dict):
        return False
    code, data = error.get("code"), error.get("data")
    if code == -32022:
        return isinstance(data, dict) and isinstance(data.get("supported"), list)
    if code == -32021:
        return isinstance(data, dict) and isinstance(data.get("requiredCapabilities"), dict)
    return code == -32020


def stdio_probe_verdict(response: Any | None) -> Verdict:
    """The era of a stdio server from its answer to ``server/discover`` (None: no answer in time).

    A DiscoverResult or a recognised modern error means modern; anything else, silence
    included, means legacy. Never keyed to one error code: legacy servers answer unknown
    pre-initialize methods with all kinds of errors.
    """
    if response is None:
        return "legacy"
    result = getattr(response, "result", None)
    error = getattr(response, "error", None)
    if error is None and isinstance(result, dict):
        return "modern" if isinstance(result.get("supportedVersions"), list) and "capabilities" in result else "legacy"
    return "modern" if _modern_error(error) else "legacy"


def http_probe_verdict(status: int, message: Any | None) -> Verdict:
    """The era of an HTTP server from its answer to a modern POST.

    ``message`` is the decoded JSON-RPC response, or None when the body was not one.
    401/403 are about authorization, not era: they are surfaced as errors.
    """
    if status in (401, 403):
        return "error"
    error = getattr(message, "error", None) if message is not None else None
    result = getattr(message, "result", None) if message is not None else None
    if 200 <= status < 300 and message is not None:
        if error is None and isinstance(result, dict):
            return "modern" if isinstance(result.get("supportedVersions"), list) and "capabilities" in result else "legacy"
        return "modern" if _modern_error(error) else "legacy"
    if 400 <= status < 500:
        if _modern_error(error):
            return "modern"
        # A JSON-RPC -32601 in a 404 is how a modern server says "no such method".
        if status == 404 and isinstance(error, dict) and error.get("code") == -32601:
            return "modern"
        return "legacy"
    return "error"
