"""PKCE (RFC 7636, S256 only) and the ``state`` value. Pure."""

from __future__ import annotations

import base64
import hashlib
import secrets


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_verifier() -> str:
    """A 64-character code verifier (43..128 allowed) from 48 random bytes."""
    return b64url(secrets.token_bytes(48))


def s256(verifier: str) -> str:
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    return b64url(secrets.token_bytes(24))
