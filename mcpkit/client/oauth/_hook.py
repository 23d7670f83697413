"""The OAuth client's hook: answers 401/403 challenges by authorizing.

``OAuth(server_url, grant, ...)`` plugs into ``Client(url, auth=...)``. On a 401 it runs
the flow, one step per module: discovery (:mod:`._metadata`: RFC 9728, RFC 8414 / OpenID
Connect Discovery), registration (:mod:`._registration`: pre-registered → Client ID
Metadata Document → dynamic registration), the grant (:mod:`.grants`: authorization code
+ PKCE by default; client credentials, JWT bearer for workload identity, or the
enterprise-managed token exchange), the token endpoint (:mod:`._token`, with client
authentication as strategies, :mod:`._client_auth`), and retries the request with the
token. It refreshes tokens before they expire and once on a 401, steps up on 403
``insufficient_scope`` (at most ``max_authorizations`` authorizations per request), and
binds tokens with DPoP (RFC 9449, :mod:`._dpop`) when the authorization server offers it.

Secrets (tokens, client secrets, codes, verifiers, assertions) never reach logs or error
messages: errors name the step, the URL and the server's OAuth error code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from .._auth import Auth, OutgoingRequest
from .._transport import Response
from . import _urls as U
from ._challenge import WWWAuthenticate, header_values, parse_www_authenticate
from ._compat import options
from ._discovery import canonical_resource
from ._dpop import DPoPState
from ._errors import OAuthError
from ._metadata import Discovery
from ._registration import Clients
from ._storage import InMemoryTokenStorage, TokenStorage
from ._token import TokenEndpoint
from ._tokens import expiring, record, select_scopes
from ._urlguard import check_url_now
from .grants import Grant, GrantContext, RefreshToken

if TYPE_CHECKING:
    from typing import Unpack

    from ._compat import LegacyKeywords
    from ._options import Network, Registration

log = logging.getLogger("mcpkit.auth")


class OAuth(Auth):
    """OAuth 2.1 authorization for one MCP server (see the module docstring).

    ``server_url`` is the MCP endpoint (the same URL given to ``Client``). ``grant`` is how
    tokens are got: :class:`~mcpkit.auth.AuthorizationCode` (the default: a person, in a
    browser), :class:`~mcpkit.auth.ClientCredentials`, :class:`~mcpkit.auth.JWTBearer`
    (workload identity) or :class:`~mcpkit.auth.EnterpriseManaged` (an ID-JAG from the
    enterprise identity provider). ``registration`` (a :class:`~mcpkit.auth.Registration`)
    is who the client is at the authorization server: pre-registered credentials bound to
    their ``issuer``, or how to register. ``scope`` overrides the scope selection. ``dpop``:
    None uses DPoP when the authorization server advertises it, True always, False never.
    ``storage`` keeps tokens and registrations (default: in memory). ``network`` (a
    :class:`~mcpkit.auth.Network`) holds the HTTP client options and the URL rules.

    The older flat keywords (``grant="client_credentials"``, ``client_id=...``,
    ``allow_private_network=True``...) still work: each maps onto its option object.
    """

    def __init__(self, server_url: str, grant: Grant | str | None = None, *, registration: Registration | None = None,
                 scope: str | list[str] | None = None, dpop: bool | None = None, storage: TokenStorage | None = None,
                 network: Network | None = None, max_authorizations: int = 3,
                 **legacy: Unpack[LegacyKeywords]) -> None:
        self.grant, self.registration, self.network = options(grant, registration, network, legacy)
        self.grant.validate(self.registration, self.network)
        self.server_url = server_url
        self.scope = scope.split() if isinstance(scope, str) else (list(scope) if scope else None)
        self.dpop = DPoPState(dpop)
        self.storage = storage if storage is not None else InMemoryTokenStorage()
        self.max_authorizations = max_authorizations
        self._key = canonical_resource(server_url)
        self._policy = self.network.policy(server_url)
        self._discovery = Discovery(server_url, self._policy)
        self._clients = Clients(self.registration, self.storage, self._key)
        self._endpoint = TokenEndpoint(self.registration, self.network, self.dpop, self.storage)
        self._tokens: dict[str, Any] | None = None
        self._loaded = False
        self._as_meta: dict[str, Any] | None = None
        self._requested: list[str] = []
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ the hook
    def cache_context(self) -> str:
        import hashlib

        token = (self._tokens or {}).get("access_token", "")
        return hashlib.sha256(f"oauth:{self._key}:{token}".encode()).hexdigest()[:16] if token else ""

    def client_extensions(self) -> dict[str, Any]:
        """The auth extension this grant uses, for the client's capabilities (the two whose
        documents ask for a declaration; DPoP and workload identity are negotiated with the
        authorization server's metadata instead)."""
        return {self.grant.extension: {}} if self.grant.extension else {}

    async def async_flow(self, request: OutgoingRequest) -> AsyncGenerator[OutgoingRequest, Response]:
        await self._before_send()
        sent = self._apply(request)
        response = yield request
        authorizations = 0
        nonce_retried = refreshed = False
        while True:
            self.dpop.note_rs_nonce(response)
            status = response.status
            if status not in (401, 403):
                return
            challenge = parse_www_authenticate(header_values(response.headers, "www-authenticate"))
            if challenge.malformed:
                log.warning("%s: the server's WWW-Authenticate header does not parse; using well-known discovery",
                            self.server_url)
            if status == 401:
                if (challenge.error == "use_dpop_nonce" and self.dpop.rs_nonce and self.dpop.key is not None
                        and sent is not None and not nonce_retried):
                    nonce_retried = True
                elif sent is not None and not refreshed and await self._refresh_after_401(sent):
                    refreshed = True
                else:
                    if authorizations >= self.max_authorizations:
                        return
                    authorizations += 1
                    await self._obtain(challenge, sent)
            else:
                if challenge.error != "insufficient_scope" or authorizations >= self.max_authorizations:
                    return
                authorizations += 1
                await self._obtain(challenge, sent)
            sent = self._apply(request)
            response = yield request

    async def authorize(self, *, force: bool = False) -> dict[str, Any]:
        """Authorize now, without waiting for a 401 (``mcpkit login``): discovery from the
        well-known locations, registration, the grant. With stored tokens that are still valid
        this does nothing unless ``force``. Returns the token record (secrets inside)."""
        await self._before_send()
        if self._tokens is not None and not force and not expiring(self._tokens):
            return self._tokens
        await self._obtain(WWWAuthenticate(), (self._tokens or {}).get("access_token"))
        assert self._tokens is not None
        return self._tokens

    async def logout(self, *, revoke: bool = True) -> bool:
        """Forget this server's tokens (here and in the storage); first, when the authorization
        server has a ``revocation_endpoint`` (RFC 7009), revoke the refresh token there (best
        effort: a failure is logged, never raised). True if there were tokens."""
        tokens = self._tokens or self.storage.get_tokens(self._key)
        if revoke and tokens and tokens.get("issuer"):
            try:
                async with self.network.client() as http:
                    meta = await self._discovery.authorization_server(http, str(tokens["issuer"]), legacy=False)
                    client = self._clients.record(meta, self._tokens)
                    if client is not None:
                        await self._endpoint.revoke(http, meta, client, tokens, self._policy)
            except OAuthError as exc:
                log.info("%s: revoking the token failed (%s)", self.server_url, exc)
        self._tokens = None
        self._loaded = True
        return self.storage.forget(self._key)

    @property
    def tokens(self) -> dict[str, Any] | None:
        """The current token record (contains secrets: never log it)."""
        return self._tokens

    # ------------------------------------------------------------------ tokens on requests
    def _lock_(self) -> asyncio.Lock:
        """One lock per event loop (an OAuth object may outlive an ``asyncio.run``)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    def _apply(self, request: OutgoingRequest) -> str | None:
        tokens = self._tokens
        if not tokens or not tokens.get("access_token"):
            request.headers.pop("Authorization", None)
            request.headers.pop("DPoP", None)
            return None
        token = str(tokens["access_token"])
        if self.dpop.bound(tokens):
            self.dpop.sign(request, self.server_url, token)
        else:
            request.headers["Authorization"] = f"Bearer {token}"
            request.headers.pop("DPoP", None)
        return token

    async def _before_send(self) -> None:
        if not self._loaded:
            self._loaded = True
            stored = self.storage.get_tokens(self._key)
            if stored and str(stored.get("token_type", "")).lower() == "dpop" and self.dpop.key is None:
                stored = self.dpop.restore(stored)
            if stored:
                self._tokens = stored
                self._requested = str(stored.get("scope_requested") or "").split()
        tokens = self._tokens
        if not tokens or not expiring(tokens):
            return
        async with self._lock_():
            if self._tokens is tokens and tokens.get("refresh_token"):
                if not await self._refresh(tokens):
                    self._set_tokens(None)

    def _set_tokens(self, tokens: dict[str, Any] | None) -> None:
        self._tokens = tokens
        self.storage.set_tokens(self._key, tokens)

    def _store(self, tokens: Mapping[str, Any], meta: Mapping[str, Any], resource: str | None,
               scopes: list[str]) -> None:
        kept = record(tokens, meta, resource, scopes, self.registration.client_id)
        self.dpop.keep(kept)
        self._set_tokens(kept)

    # ------------------------------------------------------------------ renewing
    async def _refresh_after_401(self, sent: str) -> bool:
        async with self._lock_():
            current = self._tokens
            if current is not None and current.get("access_token") != sent:
                return True  # another request already renewed it
            if current is None or not current.get("refresh_token"):
                return False
            if await self._refresh(current):
                return True
            self._set_tokens(None)
            return False

    async def _refresh(self, tokens: dict[str, Any]) -> bool:
        """One refresh_token grant; False (and a log line without secrets) when it fails."""
        try:
            meta = self._as_meta
            if meta is None or meta.get("issuer") != tokens.get("issuer"):
                async with self.network.client() as http:
                    meta = await self._discovery.authorization_server(http, str(tokens.get("issuer")), legacy=False)
                self._as_meta = meta
            client = self._clients.record(meta, self._tokens)
            if client is None:
                return False
            new = await RefreshToken().obtain(self._endpoint, meta, client, tokens)
        except OAuthError as exc:
            log.info("%s: refreshing the token failed (%s); authorizing again", self.server_url, exc)
            return False
        self._store(new, meta, tokens.get("resource"), self._requested)
        return True

    # ------------------------------------------------------------------ authorizing
    async def _obtain(self, challenge: WWWAuthenticate, sent: str | None) -> None:
        async with self._lock_():
            current = (self._tokens or {}).get("access_token")
            if current is not None and current != sent:
                return  # another request already got a new token
            check_url_now(self.server_url, U.SERVER, self._policy, "the MCP server")
            async with self.network.client() as http:
                prm, meta = await self._discovery.discover(http, challenge)
                self.grant.check_urls(self._policy)
                if self.registration.client_id:
                    self._clients.record(meta, self._tokens)  # bound credentials: refused here, before anything is sent
                self._as_meta = meta
                resource = prm.get("resource") if prm is not None else None
                scopes = select_scopes(self.scope, self._requested, challenge, prm, meta,
                                       offline_access=self.grant.offline_access)
                ctx = GrantContext(http, meta, resource, scopes, self._clients, self._endpoint, self._policy,
                                   self._tokens)
                tokens = await self.grant.obtain(ctx)
            self._requested = scopes
            self._store(tokens, meta, resource, scopes)
