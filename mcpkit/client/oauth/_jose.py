"""The JWTs the client signs: DPoP proofs (RFC 9449) and client assertions (RFC 7523,
``private_key_jwt``). Signing is joserfc's; nothing here builds a JWS by hand."""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from ._pkce import b64url

_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def load_private_key(pem: str | bytes, alg: str) -> ECKey | RSAKey:
    """A PEM private key for ``alg`` (ES256/384/512 or RS256/384/512, PS*)."""
    if alg.startswith("ES"):
        return ECKey.import_key(pem)
    if alg.startswith(("RS", "PS")):
        return RSAKey.import_key(pem)
    raise ValueError(f"unsupported signing algorithm {alg!r}")


def client_assertion(key: ECKey | RSAKey, alg: str, client_id: str, audience: str, *, lifetime: int = 300) -> str:
    """A ``private_key_jwt`` client assertion: iss = sub = client_id, aud = the AS."""
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + lifetime,
              "jti": str(uuid.uuid4())}
    return jwt.encode({"alg": alg, "typ": "JWT"}, claims, key, algorithms=[alg])


class DPoPKey:
    """One client's DPoP key pair and the proofs made with it."""

    def __init__(self, alg: str = "ES256", *, private_jwk: dict[str, Any] | None = None) -> None:
        if private_jwk is not None:
            self.key: ECKey | RSAKey = ECKey.import_key(private_jwk) if alg.startswith("ES") else RSAKey.import_key(private_jwk)
        elif alg in _CURVES:
            self.key = ECKey.generate_key(_CURVES[alg])
        elif alg.startswith(("RS", "PS")):
            self.key = RSAKey.generate_key(2048)
        else:
            raise ValueError(f"unsupported DPoP algorithm {alg!r}")
        self.alg = alg
        public = self.key.as_dict(private=False)
        self.public_jwk: dict[str, Any] = {k: v for k, v in public.items() if k in ("kty", "crv", "x", "y", "n", "e")}

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A fresh proof (new ``jti``) for one HTTP request."""
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(24), "htm": method.upper(), "htu": url,
                                  "iat": int(time.time())}
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self.key, algorithms=[self.alg])

    def private_jwk(self) -> dict[str, Any]:
        """The key pair as a JWK (a secret: stored only with the tokens bound to it)."""
        return dict(self.key.as_dict(private=True))
