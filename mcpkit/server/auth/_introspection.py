"""Opaque (or any) access tokens checked by the issuer's introspection endpoint (RFC 7662).

The resource server authenticates to the endpoint as a client (``client_secret_basic`` by
default, or ``client_secret_post``). An active answer is kept for ``cache_ttl`` seconds at
most (and never past the token's ``exp``), so a revoked token stops working soon; an
inactive answer is not kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

from ._backoff import Backoff
from ._jwt import audience_matches, check_time_claims, discover_metadata, principal_from_claims
from ._principal import InvalidToken, Principal, ScopeRule, TokenRequest, exact_scopes

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("mcpkit.auth")


class IntrospectionVerifier:
    """Verifies tokens with an RFC 7662 introspection endpoint.

    Give ``endpoint`` or ``issuer`` (its metadata names the endpoint). ``audience`` works
    as for :class:`JWTVerifier`: the resource URL by default, ``False`` to skip (for
    issuers whose answers carry no ``aud``; then the issuer must be trusted to scope
    tokens to this server).

    When the endpoint comes from the issuer's metadata, a failed discovery is not tried
    again before ``failure_backoff`` seconds (doubling up to ``max_failure_backoff``), so
    tokens sent during an outage cannot make this server hammer the issuer.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        audience: str | Collection[str] | None | bool = None,
        auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        cache_ttl: float = 30.0,
        cache_size: int = 4096,
        leeway: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        scope_rule: ScopeRule = exact_scopes,
        failure_backoff: float = 1.0,
        max_failure_backoff: float = 60.0,
    ) -> None:
        if endpoint is None and issuer is None:
            raise ValueError("IntrospectionVerifier needs endpoint= or issuer=")
        self.endpoint = endpoint
        self.issuer = issuer
        self.client_id = client_id
        self._secret = client_secret
        self.audience = audience
        self.auth_method = auth_method
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.leeway = leeway
        self.scope_rule = scope_rule
        self._client = http_client
        self._own_client = http_client is None
        self._cache: dict[bytes, tuple[float, Principal]] = {}
        #: Calls made to the endpoint (for tests and metrics).
        self.calls = 0
        self.backoff = Backoff(failure_backoff, max_failure_backoff)
        self._lock: asyncio.Lock | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=10.0, follow_redirects=False)
        return self._client

    async def _endpoint(self) -> str:
        if self.endpoint is not None:
            return self.endpoint
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one discovery at a time: the others see its outcome
            if self.endpoint is not None:
                return self.endpoint
            assert self.issuer is not None
            if not self.backoff.ready():
                raise LookupError(f"the issuer failed recently; next attempt in {self.backoff.wait():.1f} s")
            try:
                meta = await discover_metadata(self._http(), self.issuer)
                ep = meta.get("introspection_endpoint")
                if not isinstance(ep, str):
                    raise LookupError(f"the metadata of {self.issuer} names no introspection_endpoint")
            except Exception:
                self.backoff.failed()
                raise
            self.backoff.succeeded()
            self.endpoint = ep
            return ep

    async def verify(self, token: str, request: TokenRequest) -> Principal | None:
        # The cache is keyed by a digest: no token sits in memory longer than its request.
        ckey = hashlib.sha256(f"{request.resource}\x00{token}".encode()).digest()
        now = time.time()
        hit = self._cache.get(ckey)
        if hit is not None:
            if hit[0] > now:
                return hit[1]
            self._cache.pop(ckey, None)
        try:
            endpoint = await self._endpoint()
        except Exception as exc:
            log.warning("introspection endpoint unavailable: %s", exc)
            raise InvalidToken("the token could not be checked") from None
        data = {"token": token, "token_type_hint": "access_token"}
        kwargs: dict[str, Any] = {}
        if self.auth_method == "client_secret_basic":
            import httpx

            kwargs["auth"] = httpx.BasicAuth(self.client_id, self._secret)
        else:
            data |= {"client_id": self.client_id, "client_secret": self._secret}
        self.calls += 1
        try:
            resp = await self._http().post(endpoint, data=data, headers={"accept": "application/json"}, **kwargs)
            answer = resp.json() if resp.status_code == 200 else None
        except Exception as exc:
            log.warning("introspection failed: %s", type(exc).__name__)
            raise InvalidToken("the token could not be checked") from None
        if resp.status_code != 200 or not isinstance(answer, dict):
            log.warning("introspection endpoint answered HTTP %s", resp.status_code)
            raise InvalidToken("the token could not be checked")
        if answer.get("active") is not True:
            raise InvalidToken("the access token is not active")
        if self.issuer is not None and "iss" in answer and answer["iss"] != self.issuer:
            raise InvalidToken("the access token is from another issuer")
        audience = self.audience
        if audience is not False:
            expected = (request.resource,) if audience is None or audience is True else (
                (audience,) if isinstance(audience, str) else tuple(audience))
            if not audience_matches(answer.get("aud"), expected):
                raise InvalidToken("the access token is for another resource (audience)")
        exp = check_time_claims(answer, self.leeway, now) if "exp" in answer else None
        principal = principal_from_claims(answer, self.scope_rule, exp)
        until = now + self.cache_ttl
        if exp is not None:
            until = min(until, exp)
        if self.cache_ttl > 0:
            cache = self._cache
            if len(cache) >= self.cache_size:
                cache.pop(next(iter(cache)))
            cache[ckey] = (until, principal)
        return principal

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None
