"""Which era a message belongs to, decided from the message itself (pure)."""

from __future__ import annotations

from typing import Any, Literal

from . import meta as M
from . import versions

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
