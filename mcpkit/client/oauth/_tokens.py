"""The token record kept per resource (what the store holds), when it needs renewing, and
which scopes to ask for. Pure."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._challenge import WWWAuthenticate

#: Seconds before ``expires_at`` from which tokens are renewed before use.
REFRESH_MARGIN = 30.0


def expiring(tokens: Mapping[str, Any]) -> bool:
    expires_at = tokens.get("expires_at")
    return isinstance(expires_at, int | float) and time.time() > expires_at - REFRESH_MARGIN


def record(tokens: Mapping[str, Any], meta: Mapping[str, Any], resource: str | None, scopes: list[str],
           client_id: str | None) -> dict[str, Any]:
    """The record to keep for a token response from the authorization server ``meta``
    (``client_id``: the pre-registered client, whose credentials stay bound to that issuer)."""
    out: dict[str, Any] = {
        "access_token": tokens["access_token"],
        "token_type": tokens.get("token_type") or "Bearer",
        "issuer": meta.get("issuer"),
        "resource": resource,
        "scope_requested": " ".join(scopes),
    }
    if client_id:
        out["client_id"] = client_id
    if tokens.get("refresh_token"):
        out["refresh_token"] = tokens["refresh_token"]
    if tokens.get("scope"):
        out["scope"] = tokens["scope"]
    expires_in = tokens.get("expires_in")
    if isinstance(expires_in, str) and expires_in.strip().isdigit():
        expires_in = int(expires_in)  # some servers send a string
    if isinstance(expires_in, int | float) and expires_in > 0:
        out["expires_at"] = time.time() + float(expires_in)
    return out


def select_scopes(override: list[str] | None, requested: list[str], challenge: WWWAuthenticate,
                  prm: Mapping[str, Any] | None, meta: Mapping[str, Any], *, offline_access: bool) -> list[str]:
    """Scope selection: ``override``, else the challenge's ``scope``, else the resource's
    ``scopes_supported``, else none; united with what was ``requested`` before (step-up
    keeps earlier grants); plus ``offline_access`` when wanted and the server offers it."""
    if override is not None:
        base = list(override)
    elif challenge.scope:
        base = challenge.scope.split()
    elif prm is not None and isinstance(prm.get("scopes_supported"), list):
        base = [s for s in prm["scopes_supported"] if isinstance(s, str)]
    else:
        base = []
    scopes = list(dict.fromkeys([*requested, *base]))
    as_scopes = meta.get("scopes_supported")
    if (offline_access and scopes and isinstance(as_scopes, list) and "offline_access" in as_scopes
            and "offline_access" not in scopes):
        scopes.append("offline_access")
    return scopes
