"""JWT access tokens (RFC 9068) verified against the issuer's JWKS.

The JWKS is found through the issuer's metadata (RFC 8414, then OpenID Connect discovery),
kept in memory, and fetched again when a token names a key id it does not hold (at most
once per ``refresh_interval``, so unknown ids cannot make it hammer the issuer; a failed
fetch is not tried again before a growing wait, so neither can forged tokens during an
outage). The token's size, JSON nesting and header types are checked before anything is
decoded; ``typ`` must be ``at+jwt`` (RFC 9068 §4) unless switched off. Signatures
are checked by joserfc; the algorithm must be on an allow-list of asymmetric algorithms
(never ``none``, never HMAC: a public key can't become an HMAC secret).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from ._backoff import Backoff
from ._compact import MAX_TOKEN_LENGTH, MalformedJWS, parse_compact
from ._principal import InvalidToken, Principal, ScopeRule, TokenRequest, exact_scopes

if TYPE_CHECKING:
    import httpx
    from joserfc.jwk import KeySet

log = logging.getLogger("mcpkit.auth")

#: Asymmetric JWS algorithms accepted by default.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_SYMMETRIC = frozenset({"HS256", "HS384", "HS512", "none"})


#: The ``typ`` values of a JWT access token (RFC 9068 §4; compared case-insensitively).
AT_JWT_TYPES = frozenset({"at+jwt", "application/at+jwt"})


def token_header(token: str, *, max_length: int = MAX_TOKEN_LENGTH) -> dict[str, Any]:
    """The protected header of a compact JWS (not verified), or InvalidToken.

    Sizes and nesting are capped before anything is decoded, and ``alg``, ``typ`` and
    ``kid`` must be strings (see :func:`mcpkit.server.auth._compact.parse_compact`).
    """
    try:
        return parse_compact(token, max_length=max_length)[0]
    except MalformedJWS:
        raise InvalidToken("the access token is not a signed JWT") from None


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (space-separated, RFC 9068) or ``scp`` (a list or a string, as some issuers send)."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(s for s in raw if isinstance(s, str))
    return frozenset()


def audience_matches(aud: Any, expected: Collection[str]) -> bool:
    values = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    wanted = {e.rstrip("/") for e in expected}
    return any(isinstance(a, str) and a.rstrip("/") in wanted for a in values)


def check_time_claims(claims: Mapping[str, Any], leeway: float, now: float | None = None) -> float:
    """``exp`` (required), ``nbf`` and ``iat`` with ``leeway`` seconds; returns ``exp``."""
    now = time.time() if now is None else now
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise InvalidToken("the access token has no expiry")
    if exp + leeway <= now:
        raise InvalidToken("the access token has expired")
    nbf = claims.get("nbf")
    if nbf is not None and (isinstance(nbf, bool) or not isinstance(nbf, (int, float)) or nbf - leeway > now):
        raise InvalidToken("the access token is not valid yet")
    iat = claims.get("iat")
    if iat is not None and (isinstance(iat, bool) or not isinstance(iat, (int, float)) or iat - leeway > now):
        raise InvalidToken("the access token was issued in the future")
    return float(exp)


def principal_from_claims(claims: Mapping[str, Any], rule: ScopeRule, exp: float | None) -> Principal:
    sub = claims.get("sub")
    client = claims.get("client_id", claims.get("azp"))
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    if cnf is not None and not isinstance(jkt, str) and not (isinstance(cnf, dict) and "jkt" not in cnf):
        # A confirmation the server cannot read must not make a bound token a bearer one.
        raise InvalidToken("the access token's confirmation (cnf) is malformed")
    iss = claims.get("iss")
    return Principal(subject=sub if isinstance(sub, str) else None, client_id=client if isinstance(client, str) else None,
                     scopes=scopes_of(claims), claims=dict(claims), issuer=iss if isinstance(iss, str) else None,
                     expires_at=exp, jkt=jkt if isinstance(jkt, str) else None, rule=rule)


async def discover_metadata(client: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
    """The issuer's metadata: RFC 8414 (path-inserted), then OpenID discovery (both forms)."""
    from urllib.parse import urlsplit

    u = urlsplit(issuer)
    origin, path = f"{u.scheme}://{u.netloc}", u.path.rstrip("/")
    candidates = [f"{origin}/.well-known/oauth-authorization-server{path}",
                  f"{origin}/.well-known/openid-configuration{path}"]
    if path:
        candidates.append(f"{origin}{path}/.well-known/openid-configuration")
    for url in candidates:
        try:
            resp = await client.get(url, headers={"accept": "application/json"})
        except Exception as exc:  # network trouble: try the next form, report at the end
            log.debug("metadata %s: %s", url, exc)
            continue
        if resp.status_code != 200:
            continue
        try:
            meta = resp.json()
        except ValueError:
            continue
        if isinstance(meta, dict) and meta.get("issuer") == issuer:
            return meta
        log.warning("metadata at %s names another issuer; ignored", url)
    raise LookupError(f"no authorization server metadata found for issuer {issuer}")


class JWTVerifier:
    """Verifies JWT access tokens from one issuer.

    ``audience``: the accepted ``aud`` values; by default the server's canonical resource
    URL (``request.resource``), so the check is on unless you pass ``audience=False``.
    ``jwks_uri`` skips discovery; ``jwks`` gives the keys outright (a JWKS dict).

    ``require_at_jwt_typ`` (default True): the header's ``typ`` must be ``at+jwt`` (or
    ``application/at+jwt``, any case), as RFC 9068 §4 requires, so an ID token or another
    JWT signed by the same issuer is not taken for an access token. Pass False only for an
    issuer that mints access tokens without it.

    ``failure_backoff`` / ``max_failure_backoff``: after a failed metadata or JWKS fetch the
    issuer is not asked again for ``failure_backoff`` seconds, doubling with each failure in
    a row up to ``max_failure_backoff``; tokens that need fresh keys meanwhile are refused
    (401), so forged tokens during an outage cannot make this server hammer the issuer.
    """

    def __init__(
        self,
        issuer: str,
        *,
        audience: str | Collection[str] | None | bool = None,
        algorithms: Collection[str] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        jwks_uri: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        http_client: httpx.AsyncClient | None = None,
        refresh_interval: float = 30.0,
        jwks_max_age: float = 3600.0,
        require_at_jwt_typ: bool = True,
        scope_rule: ScopeRule = exact_scopes,
        cache_size: int = 4096,
        failure_backoff: float = 1.0,
        max_failure_backoff: float = 60.0,
        max_token_length: int = MAX_TOKEN_LENGTH,
    ) -> None:
        bad = _SYMMETRIC.intersection(algorithms)
        if bad:
            raise ValueError(f"JWTVerifier takes asymmetric algorithms only; refused: {sorted(bad)}")
        if not algorithms:
            raise ValueError("JWTVerifier needs at least one algorithm")
        self.issuer = issuer
        if audience is True:
            audience = None
        self.audience: tuple[str, ...] | None | bool = (
            False if audience is False else None if audience is None
            else (audience,) if isinstance(audience, str) else tuple(audience))
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_uri = jwks_uri
        self.refresh_interval = refresh_interval
        self.jwks_max_age = jwks_max_age
        self.require_at_jwt_typ = require_at_jwt_typ
        self.max_token_length = max_token_length
        #: Failed fetches from the issuer, for :meth:`refresh` to wait between attempts.
        self.backoff = Backoff(failure_backoff, max_failure_backoff)
        self.scope_rule = scope_rule
        self._client = http_client
        self._own_client = http_client is None
        self._keys: KeySet | None = None
        self._by_kid: dict[str, Any] = {}
        self._fetched_at = float("-inf")
        self._lock: asyncio.Lock | None = None
        self._cache: dict[tuple[str, str], Principal] = {}
        self._cache_size = cache_size
        self._static = jwks is not None
        if jwks is not None:
            self._load(jwks)

    # ------------------------------------------------------------------ keys
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        return self._client

    def _load(self, jwks: Mapping[str, Any]) -> None:
        from joserfc.jwk import KeySet

        keys = [k for k in jwks.get("keys", []) if isinstance(k, dict) and k.get("kty") in ("RSA", "EC", "OKP")
                and k.get("use", "sig") == "sig"]
        # Only public parameters are kept: a JWKS should never carry private ones.
        ks = KeySet.import_key_set({"keys": keys})
        self._keys = ks
        self._by_kid = {k.kid: k for k in ks.keys if k.kid}
        self._fetched_at = time.monotonic()

    async def refresh(self, *, force: bool = False) -> None:
        """Fetch the JWKS (again); a no-op within ``refresh_interval`` of the last fetch."""
        if self._static:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not force and self._keys is not None and time.monotonic() - self._fetched_at < self.refresh_interval:
                return
            backoff = self.backoff
            if not force and not backoff.ready():
                # Failed recently: callers waiting on the lock behind the failed fetch land here too.
                raise LookupError(f"the issuer failed recently; next attempt in {backoff.wait():.1f} s")
            try:
                client = self._http()
                if self.jwks_uri is None:
                    meta = await discover_metadata(client, self.issuer)
                    uri = meta.get("jwks_uri")
                    if not isinstance(uri, str):
                        raise LookupError(f"the metadata of {self.issuer} has no jwks_uri")
                    self.jwks_uri = uri
                resp = await client.get(self.jwks_uri, headers={"accept": "application/json"})
                resp.raise_for_status()
                jwks = resp.json()
                if not isinstance(jwks, dict):
                    raise LookupError("the JWKS is not a JSON object")
                self._load(jwks)
            except Exception:
                backoff.failed()
                raise
            backoff.succeeded()

    async def _key_for(self, header: Mapping[str, Any]) -> Any:
        stale = self._keys is None or time.monotonic() - self._fetched_at > self.jwks_max_age
        if stale:
            await self._refresh_or_fail()
        kid = header.get("kid")
        assert self._keys is not None
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the access token is not a signed JWT")
        if kid is None:
            return self._keys  # joserfc picks among them by algorithm
        key = self._by_kid.get(kid)
        if key is None:
            # A key we don't hold: the issuer may have rotated. Fetch again (rate-limited).
            await self._refresh_or_fail()
            key = self._by_kid.get(kid)
            if key is None:
                raise InvalidToken("the access token is signed with an unknown key")
        return key

    async def _refresh_or_fail(self) -> None:
        failures = self.backoff.failures
        try:
            await self.refresh()
        except Exception as exc:
            # One warning per failed fetch; refusals while backing off are not worth one each.
            (log.warning if self.backoff.failures != failures else log.debug)(
                "could not fetch the JWKS of %s: %s", self.issuer, exc)
            if self._keys is None:
                raise InvalidToken("the token's issuer keys are unavailable") from None

    # ------------------------------------------------------------------ verify
    async def verify(self, token: str, request: TokenRequest) -> Principal | None:
        audience = self.audience
        expected: tuple[str, ...] | None
        if audience is None or audience is True:
            expected = (request.resource,)
        elif audience is False:
            expected = None
        else:
            expected = audience
        ckey = (token, request.resource)
        hit = self._cache.get(ckey)
        if hit is not None:
            if hit.expires_at is not None and hit.expires_at + self.leeway > time.time():
                return hit
            self._cache.pop(ckey, None)
        header = token_header(token, max_length=self.max_token_length)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("the access token's algorithm is not accepted")
        typ = header.get("typ")
        if self.require_at_jwt_typ and not (isinstance(typ, str) and typ.lower() in AT_JWT_TYPES):
            raise InvalidToken("the token is not a JWT access token (typ at+jwt)")
        key = await self._key_for(header)
        from joserfc import jwt
        from joserfc.errors import JoseError

        try:
            claims = jwt.decode(token, key, algorithms=self.algorithms).claims
        except JoseError:
            raise InvalidToken("the access token's signature does not verify") from None
        except Exception:  # whatever the JOSE library trips over in a forged token: refused
            raise InvalidToken("the access token is malformed") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the access token is malformed")
        if claims.get("iss") != self.issuer:
            raise InvalidToken("the access token is from another issuer")
        if expected is not None and not audience_matches(claims.get("aud"), expected):
            raise InvalidToken("the access token is for another resource (audience)")
        exp = check_time_claims(claims, self.leeway)
        principal = principal_from_claims(claims, self.scope_rule, exp)
        cache = self._cache
        if len(cache) >= self._cache_size:
            cache.pop(next(iter(cache)))
        cache[ckey] = principal
        return principal

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None
