"""DPoP proofs at the resource server (RFC 9449 §4.3, §7 and §9).

A DPoP-bound token (``cnf.jkt``) is accepted only with the ``DPoP`` scheme and one valid
proof: ``typ: dpop+jwt``, an asymmetric algorithm, a public ``jwk`` that verifies the
signature and whose thumbprint is the token's ``jkt``, ``htm``/``htu`` naming this
request, ``iat`` within the window, a ``jti`` not seen before (replay cache), and ``ath``
the hash of the token. Server nonces are optional (``use_nonce``): stateless, HMAC-signed
timestamps, so every worker sharing the secret accepts each other's nonces.

The replay cache and the nonce secret live in this process unless a :class:`DPoPStore` is
shared (``mcpkit.backends.redis.RedisBackend.install`` gives the server's checker one):
without it, a proof replayed to *another* process (worker, machine) is not recognised, and
a nonce from one process fails at another (unless ``nonce_secret`` is the same).
A proof longer than :data:`MAX_PROOF_LENGTH`, nested deeper than the limit, or with a
header of the wrong shape is refused before its JSON is parsed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
import time
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from ._compact import MAX_PROOF_LENGTH, MalformedJWS, parse_compact
from ._jwt import DEFAULT_ALGORITHMS
from ._principal import InvalidToken, TokenRequest


@runtime_checkable
class DPoPStore(Protocol):
    """State every worker of one server shares for DPoP: the ``jti`` replay cache and the
    nonce secret (``mcpkit.backends.redis`` has one). Raise an ``MCPError`` (such as
    ``BackendUnavailable``) when the store cannot be reached: the request is then refused
    with 503, never let through."""

    async def seen(self, key: str, until: float, now: float) -> bool:
        """Record ``key`` as used until ``until`` (epoch seconds); True when it already was."""
        ...

    async def nonce_secret(self) -> bytes:
        """The nonce HMAC secret every worker uses (created on first use)."""
        ...


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def normalize_htu(url: str) -> str:
    """Scheme and host lower-cased, default port dropped, no query or fragment (RFC 9449 §4.3)."""
    u = urlsplit(url)
    scheme = u.scheme.lower()
    host = (u.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = u.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, u.path or "/", "", ""))


class ReplayCache:
    """The ``jti`` values seen within the acceptance window (bounded; oldest dropped first)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._seen: OrderedDict[str, float] = OrderedDict()
        self.max_entries = max_entries

    def seen(self, jti: str, until: float, now: float) -> bool:
        """Record ``jti`` as used until ``until``; True when it was already used."""
        seen = self._seen
        while seen:
            first, exp = next(iter(seen.items()))
            if exp > now and len(seen) < self.max_entries:
                break
            seen.popitem(last=False)
        if jti in seen:
            return True
        seen[jti] = until
        return False


class DPoPChecker:
    """Checks DPoP proofs for bound tokens. One per resource server."""

    def __init__(self, *, algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS, max_age: float = 300.0,
                 leeway: float = 5.0, use_nonce: bool = False, nonce_secret: bytes | None = None,
                 nonce_lifetime: float = 300.0, replay: ReplayCache | None = None,
                 store: DPoPStore | None = None, max_proof_length: int = MAX_PROOF_LENGTH) -> None:
        self.algorithms = algorithms
        self.max_age = max_age
        self.leeway = leeway
        self.use_nonce = use_nonce
        self._own_secret = nonce_secret is not None
        self._secret = nonce_secret or os.urandom(32)
        self._secret_loaded = self._own_secret
        self.nonce_lifetime = nonce_lifetime
        self.replay = replay or ReplayCache()
        self.max_proof_length = max_proof_length
        #: Shared replay cache and nonce secret (see :meth:`share`); None: this process only.
        self.store: DPoPStore | None = None
        if store is not None:
            self.share(store)
        # A client signs every proof with the same key: its import and thumbprint are kept.
        self._keys: dict[str, tuple[Any, str]] = {}
        self._htu: dict[str, str] = {}

    def share(self, store: DPoPStore) -> None:
        """Keep the replay cache (and the nonce secret, unless one was given) in ``store``,
        so that every worker sharing it refuses a proof used at any of them and accepts the
        nonces of all of them. Call before serving."""
        self.store = store
        self._secret_loaded = self._own_secret

    async def _load_secret(self) -> None:
        if not self._secret_loaded and self.store is not None:
            self._secret = await self.store.nonce_secret()
            self._secret_loaded = True

    def _key(self, jwk: dict[str, Any]) -> tuple[Any, str]:
        from joserfc.jwk import JWKRegistry

        ident = json.dumps(jwk, sort_keys=True, separators=(",", ":"))
        hit = self._keys.get(ident)
        if hit is None:
            key = JWKRegistry.import_key(jwk)
            hit = (key, key.thumbprint())
            if len(self._keys) >= 1024:
                self._keys.pop(next(iter(self._keys)))
            self._keys[ident] = hit
        return hit

    def _normal_htu(self, url: str) -> str:
        htu = self._htu.get(url)
        if htu is None:
            htu = normalize_htu(url)
            if len(self._htu) >= 1024:
                self._htu.clear()
            self._htu[url] = htu
        return htu

    # ------------------------------------------------------------------ nonces
    def new_nonce(self, now: float | None = None) -> str:
        ts = struct.pack(">Q", int(now if now is not None else time.time()))
        return b64url(ts + hmac.new(self._secret, ts, hashlib.sha256).digest()[:16])

    def _nonce_ok(self, nonce: Any, now: float) -> bool:
        if not isinstance(nonce, str):
            return False
        try:
            raw = base64.urlsafe_b64decode(nonce + "=" * (-len(nonce) % 4))
        except ValueError:
            return False
        if len(raw) != 24 or not hmac.compare_digest(raw[8:], hmac.new(self._secret, raw[:8], hashlib.sha256).digest()[:16]):
            return False
        issued: int = struct.unpack(">Q", raw[:8])[0]
        return issued - self.leeway <= now <= issued + self.nonce_lifetime

    # ------------------------------------------------------------------ proofs
    async def check(self, proof: str | None, token: str, jkt: str, request: TokenRequest) -> None:
        """Raise InvalidToken (``invalid_dpop_proof`` / ``use_dpop_nonce``) unless ``proof`` is good."""
        if not proof:
            raise InvalidToken("a DPoP-bound token needs a DPoP proof", error="invalid_token")
        if "," in proof:
            raise InvalidToken("exactly one DPoP proof is allowed", error="invalid_dpop_proof")
        from joserfc import jwt
        from joserfc.errors import JoseError

        try:
            header, _payload = parse_compact(proof, max_length=self.max_proof_length)
        except MalformedJWS:
            raise InvalidToken("the DPoP proof is not a well-formed signed JWT", error="invalid_dpop_proof") from None
        if header.get("typ") != "dpop+jwt":
            raise InvalidToken("the DPoP proof's typ must be dpop+jwt", error="invalid_dpop_proof")
        alg = header.get("alg")
        jwk = header.get("jwk")
        if alg not in self.algorithms or not isinstance(jwk, dict):
            raise InvalidToken("the DPoP proof's algorithm or key is not accepted", error="invalid_dpop_proof")
        if any(p in jwk for p in ("d", "p", "q", "dp", "dq", "qi", "k")):
            raise InvalidToken("the DPoP proof's key must be a public key", error="invalid_dpop_proof")
        try:
            key, thumbprint = self._key(jwk)
            claims = jwt.decode(proof, key, algorithms=[alg]).claims
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("the DPoP proof's signature does not verify", error="invalid_dpop_proof") from None
        except Exception:  # whatever the JOSE library trips over in a forged key or proof: refused
            raise InvalidToken("the DPoP proof is malformed", error="invalid_dpop_proof") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the DPoP proof is malformed", error="invalid_dpop_proof")
        if not hmac.compare_digest(thumbprint, jkt):
            raise InvalidToken("the DPoP proof's key is not the key the token is bound to", error="invalid_dpop_proof")
        if claims.get("htm") != request.method:
            raise InvalidToken("the DPoP proof is for another HTTP method", error="invalid_dpop_proof")
        htu = claims.get("htu")
        if not isinstance(htu, str) or self._normal_htu(htu) != self._normal_htu(request.resource):
            raise InvalidToken("the DPoP proof is for another URL", error="invalid_dpop_proof")
        ath = b64url(hashlib.sha256(token.encode("ascii", "replace")).digest())
        if not isinstance(claims.get("ath"), str) or not hmac.compare_digest(claims["ath"], ath):
            raise InvalidToken("the DPoP proof is for another access token (ath)", error="invalid_dpop_proof")
        now = time.time()
        iat = claims.get("iat")
        if isinstance(iat, bool) or not isinstance(iat, (int, float)) or not (
                now - self.max_age - self.leeway <= iat <= now + self.leeway):
            raise InvalidToken("the DPoP proof is too old or from the future", error="invalid_dpop_proof")
        if self.use_nonce:
            await self._load_secret()
            if not self._nonce_ok(claims.get("nonce"), now):
                raise InvalidToken("a fresh DPoP nonce is required", error="use_dpop_nonce",
                                   dpop_nonce=self.new_nonce(now))
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise InvalidToken("the DPoP proof has no jti", error="invalid_dpop_proof")
        key_id = f"{jkt}:{jti}"
        until = iat + self.max_age + 2 * self.leeway
        store = self.store
        if store is not None:
            used = await store.seen(key_id, until, now)
        else:
            used = self.replay.seen(key_id, until, now)
        if used:
            raise InvalidToken("the DPoP proof was already used", error="invalid_dpop_proof")
