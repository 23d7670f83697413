"""Which credentials a request carried, as a keyed hash: the partition of private cache entries.

A private result (``cacheScope: "private"``) may be served again only to a request that
carries the same credentials as the one that fetched it. The partition is computed from the
final outgoing HTTP headers (the static ones, a ``header_provider``'s, an auth hook's, an
``httpx`` client's own defaults and cookie jar), so whatever put a credential on the request,
it counts. Only the headers a transport derives from the message itself (content type,
accept, the mirrored ``Mcp-*`` headers, the session id...) are left out; every other header
is treated as a credential. A DPoP proof is new on every request, so its key's thumbprint
stands for it. The hash is keyed with a random per-process secret: no credential is kept in
clear, and partitions cannot be precomputed from a guessed token.

``None`` means the credentials cannot be known; private results are then not cached.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from typing import Any

import msgspec

from ._auth import Auth, OutgoingRequest, first_step
from ._transport import NO_CREDENTIALS as NO_CREDENTIALS
from ._transport import ClientTransport

#: Headers that carry no credential: the transport sets them from the message and protocol
#: state (the cache key already covers the message), or the HTTP stack adds them.
NOT_CREDENTIALS = frozenset({
    "accept", "accept-encoding", "connection", "content-length", "content-type", "host", "user-agent",
    "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id", "last-event-id",
})

#: A request that crosses no credential at all (stdio, a Server in this process).

_KEY = secrets.token_bytes(32)

#: RFC 7638 members of each key type.
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x"),
                       "oct": ("k", "kty")}


def partition(headers: Iterable[tuple[str, str]]) -> str | None:
    """The keyed hash of the credential headers among ``headers`` (name, value pairs, names in
    any case); :data:`NO_CREDENTIALS` when there are none; None when a DPoP proof does not parse."""
    items: list[tuple[str, str]] = []
    for name, value in headers:
        low = name.lower()
        if low in NOT_CREDENTIALS or low.startswith("mcp-param-"):
            continue
        if low == "dpop":
            thumb = dpop_thumbprint(value)
            if thumb is None:
                return None
            value = thumb
        items.append((low, value))
    if not items:
        return NO_CREDENTIALS
    items.sort()
    return _hash(json.dumps(items, separators=(",", ":")))


def with_context(part: str | None, context: str) -> str | None:
    """``part`` narrowed by what an auth hook declares with ``Auth.cache_context()``."""
    if part is None or not context:
        return part
    return _hash(json.dumps([part, context], separators=(",", ":")))


def _hash(text: str) -> str:
    return hmac.new(_KEY, text.encode(), hashlib.sha256).hexdigest()


def dpop_thumbprint(proof: str) -> str | None:
    """The RFC 7638 thumbprint of the public key in a DPoP proof's header (None if unreadable)."""
    head = proof.strip().split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, RecursionError):
        return None
    jwk = header.get("jwk") if isinstance(header, dict) else None
    if not isinstance(jwk, dict):
        return None
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    picked: dict[str, Any] = {m: jwk.get(m) for m in members} if members else jwk
    canonical = json.dumps(picked, sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()


def params_bytes(params: dict[str, Any] | None) -> bytes:
    """A request's params as sent (``_meta`` included): an auth hook that changed them may have
    put a credential in the body, which no header shows."""
    return msgspec.json.encode(params or {}, order="sorted")


async def outgoing(auth: Auth | None, transport: ClientTransport, req: OutgoingRequest) -> str | None:
    """The partition ``req`` would go out in now: the auth hook's first step is run on a copy
    to learn its headers (as for a notification); None when it cannot be known."""
    headers = None
    if auth is not None:
        params = copy.deepcopy(req.params)
        before = params_bytes(params)
        probe = await first_step(auth, OutgoingRequest(req.method, params))
        if probe.method != req.method or params_bytes(probe.params) != before:
            return None
        headers = probe.headers
    part = await transport.outgoing_credentials(headers)
    return with_context(part, auth.cache_context()) if auth is not None else part
