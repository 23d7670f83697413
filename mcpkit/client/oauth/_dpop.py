"""DPoP state of one OAuth client (RFC 9449): the key (made when the authorization server
offers DPoP, or always, or never), the nonces each server asked for, the proofs, and the key
kept with the tokens bound to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._challenge import header_values
from ._discovery import htu

if TYPE_CHECKING:
    from .._auth import OutgoingRequest
    from .._transport import Response
    from ._jose import DPoPKey

#: The algorithms this client signs proofs with, in order of preference.
ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "PS256")


class DPoPState:
    """``mode``: None uses DPoP when the authorization server advertises it, True always,
    False never."""

    def __init__(self, mode: bool | None = None) -> None:
        self.mode = mode
        self.key: DPoPKey | None = None
        #: The latest nonce the authorization server (``as_nonce``) and the MCP server
        #: (``rs_nonce``) asked for (RFC 9449 §8, §9).
        self.as_nonce: str | None = None
        self.rs_nonce: str | None = None

    def key_for(self, meta: Mapping[str, Any]) -> DPoPKey | None:
        """The key to bind tokens from this authorization server with, or None (bearer)."""
        if self.mode is False:
            return None
        algs = meta.get("dpop_signing_alg_values_supported")
        offered = [a for a in algs if a in ALGORITHMS] if isinstance(algs, list) else []
        if not offered and self.mode is not True:
            return None
        if self.key is None:
            from ._jose import DPoPKey

            self.key = DPoPKey(offered[0] if offered else "ES256")
        return self.key

    # ------------------------------------------------------------------ the token endpoint
    def token_proof(self, url: str) -> str:
        assert self.key is not None
        return self.key.proof("POST", htu(url), nonce=self.as_nonce)

    def note_as_nonce(self, headers: Mapping[str, str]) -> str | None:
        nonce = headers.get("dpop-nonce")
        if self.key is not None and nonce:
            self.as_nonce = nonce.strip()
        return nonce

    # ------------------------------------------------------------------ the MCP server
    def bound(self, tokens: Mapping[str, Any]) -> bool:
        """Are these tokens DPoP-bound, with the key at hand?"""
        return str(tokens.get("token_type", "")).lower() == "dpop" and self.key is not None

    def sign(self, request: OutgoingRequest, server_url: str, token: str) -> None:
        assert self.key is not None
        request.headers["Authorization"] = f"DPoP {token}"
        request.headers["DPoP"] = self.key.proof(request.http_method, htu(server_url), access_token=token,
                                                 nonce=self.rs_nonce)

    def note_rs_nonce(self, response: Response) -> None:
        values = header_values(response.headers, "dpop-nonce")
        if values:
            self.rs_nonce = values[-1].strip()

    # ------------------------------------------------------------------ the token store
    def restore(self, stored: dict[str, Any]) -> dict[str, Any] | None:
        """Stored DPoP-bound tokens come back only with the key they are bound to."""
        jwk, alg = stored.get("dpop_jwk"), stored.get("dpop_alg") or "ES256"
        if not isinstance(jwk, dict) or self.mode is False:
            return None
        from ._jose import DPoPKey

        try:
            self.key = DPoPKey(str(alg), private_jwk=jwk)
        except (ValueError, TypeError, KeyError):
            return None
        return stored

    def keep(self, record: dict[str, Any]) -> None:
        """Keep the key with the tokens bound to it: they are useless without it, and the key
        is no more secret than the refresh token beside it (the file store is 0600)."""
        if self.bound(record):
            assert self.key is not None
            record["dpop_jwk"] = self.key.private_jwk()
            record["dpop_alg"] = self.key.alg
