"""Pre-registered client credentials are bound to one authorization server (RFC 9700 §4.4).

A client secret or private key registered with authorization server A must never reach
another one: a hostile or compromised MCP server could name its own authorization server
("mix-up") and collect the credentials. So the credentials carry their issuer: given by the
user (``Registration(issuer=...)``, ``mcpkit login --issuer``), or remembered from an earlier
login in the token store (the token record keeps ``client_id`` beside the ``issuer`` that
issued it). A confidential client (a secret or a private key) without either is refused:
there is nothing to tell a genuine authorization server from a planted one. A public client
id (no secret) is bound on first use. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import OAuthError


def same_issuer(a: str, b: str) -> bool:
    """Issuer identifiers compared exactly (RFC 8414 §3.3), up to one trailing slash."""
    return a.rstrip("/") == b.rstrip("/")


def bind(client_id: str, issuer: str, *, bound: str | None, stored: Mapping[str, Any] | None,
         confidential: bool) -> str:
    """The issuer ``client_id``'s credentials are bound to, after checking that ``issuer``
    (the authorization server about to receive them) is that one; else :class:`OAuthError`
    (``issuer_required`` or ``issuer_changed``), raised before anything is sent."""
    if bound is None and stored is not None and stored.get("client_id") == client_id:
        remembered = stored.get("issuer")
        bound = remembered if isinstance(remembered, str) and remembered else None
    if bound is None:
        if confidential:
            raise OAuthError(f"the client secret (or private key) of client {client_id} is not bound to an "
                             f"authorization server, and the MCP server names {issuer}: give issuer= (mcpkit "
                             "login --issuer URL) naming the one the client is registered with; refusing to "
                             "send it (RFC 9700 mix-up defence)", error="issuer_required")
        return issuer
    if not same_issuer(bound, issuer):
        raise OAuthError(f"the credentials of client {client_id} are bound to the authorization server {bound}, "
                         f"but the MCP server names {issuer}: refusing to send them (RFC 9700 mix-up defence)",
                         error="issuer_changed")
    return bound
