"""The OAuth client: an auth hook that answers 401/403 challenges by authorizing.

``OAuth(server_url, ...)`` plugs into ``Client(url, auth=...)``. On a 401 it discovers the
protected resource metadata (RFC 9728) and the authorization server metadata (RFC 8414 /
OpenID Connect Discovery), registers a client when it has none for that authorization server
(pre-registered → Client ID Metadata Document → dynamic registration), runs the grant
(authorization code + PKCE by default; client credentials, JWT bearer for workload identity,
or the enterprise-managed token exchange), and retries the request with the token. It
refreshes tokens before they expire and once on a 401, steps up on 403 ``insufficient_scope``
(at most ``max_authorizations`` authorizations per request), and binds tokens with DPoP
(RFC 9449) when the authorization server offers it.

Secrets (tokens, client secrets, codes, verifiers, assertions) never reach logs or error
messages: errors name the step, the URL and the server's OAuth error code.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from .._auth import Auth, OutgoingRequest
from .._transport import Response
from . import _discovery as D
from . import _urls as U
from ._binding import bind
from ._challenge import WWWAuthenticate, header_values, parse_www_authenticate
from ._errors import OAuthError
from ._pkce import new_state, new_verifier, s256
from ._redirects import AuthorizationResponse, Authorizer
from ._storage import InMemoryTokenStorage, TokenStorage
from ._urlguard import check_url, check_url_now

if TYPE_CHECKING:
    import httpx

    from ._jose import DPoPKey

log = logging.getLogger("mcpkit.auth")

#: A token source: a string, or a (sync or async) callable returning one.
TokenSource = str | Callable[[], "str | Awaitable[str]"]

GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_TYPE_JWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "enterprise")
_DPOP_ALGS = ("ES256", "ES384", "ES512", "RS256", "PS256")
_REFRESH_MARGIN = 30.0


def _short(text: object, limit: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[:limit] + "..."



async def _documents(http: httpx.AsyncClient, urls: Iterable[str], what: str,
                     problems: list[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Each well-known URL's JSON document in turn; what went wrong with the others goes to
    ``problems`` (a 404 is not a problem: the next candidate URL is simply tried)."""
    import httpx

    for url in urls:
        try:
            resp = await http.get(url)
        except httpx.HTTPError as exc:
            problems.append(f"{url}: {type(exc).__name__}")
            continue
        if resp.status_code != 200:
            if resp.status_code >= 500:
                problems.append(f"{url}: HTTP {resp.status_code}")
            continue
        try:
            doc = _json_object(resp, what)
        except OAuthError as exc:
            problems.append(str(exc))
            continue
        yield url, doc

def _json_object(resp: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = resp.json()
    except ValueError:
        ctype = resp.headers.get("content-type", "?")
        raise OAuthError(f"{what} at {resp.request.url} is not JSON (HTTP {resp.status_code}, {ctype})",
                         error="invalid_metadata", status=resp.status_code) from None
    if not isinstance(data, dict):
        raise OAuthError(f"{what} at {resp.request.url} is not a JSON object", error="invalid_metadata",
                         status=resp.status_code)
    return data


async def _resolve(source: TokenSource) -> str:
    value = source() if callable(source) else source
    if not isinstance(value, str):
        value = await value
    if not isinstance(value, str) or not value.strip():
        raise OAuthError("the token source gave no token", error="invalid_assertion")
    return value.strip()


class OAuth(Auth):
    """OAuth 2.1 authorization for one MCP server (see the module docstring).

    ``server_url`` is the MCP endpoint (the same URL given to ``Client``). The grant:

    * ``"authorization_code"`` (default): a person authorizes in a browser. ``authorizer``
      drives that step (default: :class:`~mcpkit.auth.LoopbackRedirect`, a one-shot listener
      on 127.0.0.1 that opens the browser); :func:`follow_redirects` is the headless one.
    * ``"client_credentials"``: the client acts on its own behalf with ``client_id`` and
      ``client_secret`` or ``private_key`` (PEM, ``signing_algorithm`` ES256 or RS256).
    * ``"jwt_bearer"``: workload identity federation; the platform token comes from
      ``assertion`` (a string or a callable), ``assertion_file`` or ``assertion_env``.
    * ``"enterprise"``: enterprise-managed authorization (SEP-990); ``idp_token_endpoint``,
      ``idp_id_token`` (string or callable) and ``idp_client_id`` (``idp_client_secret``)
      get an ID-JAG at the identity provider, then the JWT-bearer grant at the MCP
      authorization server with ``client_id``/``client_secret``.

    ``client_id``/``client_secret`` (or ``private_key``) are pre-registered credentials,
    bound to the authorization server ``issuer``: they are never sent to another one (the
    token store remembers the binding with the tokens, so later runs may omit ``issuer``). A
    secret or key with no issuer given or remembered is refused (``issuer_required``); a
    public ``client_id`` alone is bound to the first authorization server it is used with.
    ``scope`` overrides the scope selection. ``dpop``: None uses DPoP when the authorization
    server advertises it, True always, False never.

    URLs a server names are checked before they are contacted (see ``mcpkit.auth._urls``):
    https only (plain http only to loopback hosts, or with ``allow_http``); the challenge's
    ``resource_metadata`` only on the MCP server's origin unless
    ``allow_cross_origin_metadata``; loopback only when the MCP server is on loopback, and
    private, link-local or other non-public addresses (literal, or what a name resolves to)
    only with ``allow_private_network``.
    """

    def __init__(
        self,
        server_url: str,
        *,
        grant: str = "authorization_code",
        authorizer: Authorizer | None = None,
        redirect_uri: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        token_endpoint_auth_method: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
        client_metadata_url: str | None = None,
        client_name: str = "mcpkit",
        scope: str | list[str] | None = None,
        request_refresh_tokens: bool = True,
        assertion: TokenSource | None = None,
        assertion_file: str | os.PathLike[str] | None = None,
        assertion_env: str | None = None,
        idp_token_endpoint: str | None = None,
        idp_id_token: TokenSource | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        dpop: bool | None = None,
        storage: TokenStorage | None = None,
        max_authorizations: int = 3,
        timeout: float = 30.0,
        verify: bool = True,
        http_client: httpx.AsyncClient | None = None,
        allow_http: bool = False,
        allow_private_network: bool = False,
        allow_cross_origin_metadata: bool = False,
        assertion_audience: str = "issuer",
        open_browser: bool = True,
    ) -> None:
        if client_metadata_url is not None:
            p = urlsplit(client_metadata_url)
            if p.scheme != "https" or p.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        if redirect_uri is not None and not allow_http:
            r = urlsplit(redirect_uri)
            if not (r.scheme == "https" or (r.scheme == "http" and (r.hostname or "") in ("127.0.0.1", "localhost", "::1"))):
                raise ValueError("redirect_uri must be https or a loopback http URI (the spec's redirect URI rule)")
        if grant not in _GRANTS:
            raise ValueError(f"grant must be one of {', '.join(_GRANTS)}")
        if grant == "client_credentials" and not client_id:
            raise ValueError("the client_credentials grant needs client_id (and client_secret or private_key)")
        if grant == "jwt_bearer" and assertion is None and assertion_file is None and assertion_env is None:
            raise ValueError("the jwt_bearer grant needs assertion, assertion_file or assertion_env")
        if grant == "enterprise" and not (idp_token_endpoint and idp_id_token is not None and client_id):
            raise ValueError("the enterprise grant needs idp_token_endpoint, idp_id_token and client_id")
        self.server_url = server_url
        self.grant = grant
        self._authorizer = authorizer
        self._redirect_uri = redirect_uri
        self._client_id = client_id
        self._client_secret = client_secret
        self._cred_issuer = issuer
        self._auth_method = token_endpoint_auth_method
        self._private_key = private_key
        self._signing_alg = signing_algorithm
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self._scope_override = scope.split() if isinstance(scope, str) else (list(scope) if scope else None)
        self.request_refresh_tokens = request_refresh_tokens
        self._assertion = assertion
        self._assertion_file = assertion_file
        self._assertion_env = assertion_env
        self._idp_token_endpoint = idp_token_endpoint
        self._idp_id_token = idp_id_token
        self._idp_client_id = idp_client_id
        self._idp_client_secret = idp_client_secret
        self.dpop = dpop
        self.storage = storage if storage is not None else InMemoryTokenStorage()
        self.max_authorizations = max_authorizations
        self.timeout = timeout
        self.verify = verify
        self._http_client = http_client
        #: Allow plain-http authorization servers and MCP servers off loopback (never do this
        #: outside a lab: tokens and codes would travel in clear).
        self.allow_http = allow_http
        self.allow_private_network = allow_private_network
        self.allow_cross_origin_metadata = allow_cross_origin_metadata
        #: ``aud`` of private_key_jwt assertions: "issuer" (RFC 7523bis; the default),
        #: "token_endpoint" (RFC 7523's example, some providers want it), or a literal value.
        self.assertion_audience = assertion_audience
        #: For the default loopback authorizer: open the browser (else print the URL).
        self.open_browser = open_browser
        self._key = D.canonical_resource(server_url)
        self._tokens: dict[str, Any] | None = None
        self._loaded = False
        self._as_meta: dict[str, Any] | None = None
        self._requested: list[str] = []
        self._dpop_key: DPoPKey | None = None
        self._as_nonce: str | None = None
        self._rs_nonce: str | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ the hook
    def cache_context(self) -> str:
        import hashlib

        token = (self._tokens or {}).get("access_token", "")
        return hashlib.sha256(f"oauth:{self._key}:{token}".encode()).hexdigest()[:16] if token else ""

    def client_extensions(self) -> dict[str, Any]:
        """The auth extensions this configuration uses, for the client's capabilities (the two
        whose documents ask for a declaration; DPoP and workload identity are negotiated with
        the authorization server's metadata instead)."""
        declared: dict[str, Any] = {}
        if self.grant == "client_credentials":
            declared["io.modelcontextprotocol/oauth-client-credentials"] = {}
        elif self.grant == "enterprise":
            declared["io.modelcontextprotocol/enterprise-managed-authorization"] = {}
        return declared

    async def async_flow(self, request: OutgoingRequest) -> AsyncGenerator[OutgoingRequest, Response]:
        await self._before_send()
        sent = self._apply(request)
        response = yield request
        authorizations = 0
        nonce_retried = refreshed = False
        while True:
            self._note_rs_nonce(response)
            status = response.status
            if status not in (401, 403):
                return
            challenge = parse_www_authenticate(header_values(response.headers, "www-authenticate"))
            if challenge.malformed:
                log.warning("%s: the server's WWW-Authenticate header does not parse; using well-known discovery",
                            self.server_url)
            if status == 401:
                if (challenge.error == "use_dpop_nonce" and self._rs_nonce and self._dpop_key is not None
                        and sent is not None and not nonce_retried):
                    nonce_retried = True
                elif sent is not None and not refreshed and await self._refresh_after_401(sent):
                    refreshed = True
                else:
                    if authorizations >= self.max_authorizations:
                        return
                    authorizations += 1
                    await self._obtain(challenge, sent, step_up=False)
            else:
                if challenge.error != "insufficient_scope" or authorizations >= self.max_authorizations:
                    return
                authorizations += 1
                await self._obtain(challenge, sent, step_up=True)
            sent = self._apply(request)
            response = yield request

    async def authorize(self, *, force: bool = False) -> dict[str, Any]:
        """Authorize now, without waiting for a 401 (``mcpkit login``): discovery from the
        well-known locations, registration, the grant. With stored tokens that are still valid
        this does nothing unless ``force``. Returns the token record (secrets inside)."""
        await self._before_send()
        if self._tokens is not None and not force and not self._expiring(self._tokens):
            return self._tokens
        await self._obtain(WWWAuthenticate(), (self._tokens or {}).get("access_token"), step_up=False)
        assert self._tokens is not None
        return self._tokens

    async def logout(self, *, revoke: bool = True) -> bool:
        """Forget this server's tokens (here and in the storage); first, when the authorization
        server has a ``revocation_endpoint`` (RFC 7009), revoke the refresh token there (best
        effort: a failure is logged, never raised). True if there were tokens."""
        tokens = self._tokens or self.storage.get_tokens(self._key)
        if revoke and tokens and tokens.get("issuer"):
            try:
                await self._revoke(tokens)
            except OAuthError as exc:
                log.info("%s: revoking the token failed (%s)", self.server_url, exc)
        self._tokens = None
        self._loaded = True
        return self.storage.forget(self._key)

    async def _revoke(self, tokens: Mapping[str, Any]) -> None:
        import httpx

        async with self._http() as http:
            meta = await self._fetch_as_metadata(http, str(tokens["issuer"]), legacy=False)
            url = meta.get("revocation_endpoint")
            client = self._client_record(meta)
            if not isinstance(url, str) or client is None:
                return
            await check_url(url, U.NAMED, self._policy, "the revocation endpoint")
            for kind in ("refresh_token", "access_token"):
                if not tokens.get(kind):
                    continue
                form, headers = {"token": str(tokens[kind]), "token_type_hint": kind}, dict[str, str]()
                self._token_auth(meta, client, form, headers)
                try:
                    resp = await http.post(url, data=form, headers=headers)
                except httpx.HTTPError as exc:
                    raise OAuthError(f"the revocation request to {url} failed: {type(exc).__name__}",
                                     error="revocation_failed") from None
                if resp.status_code != 200:
                    raise self._error_from(resp, "the revocation request", url)

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
        token = tokens["access_token"]
        if str(tokens.get("token_type", "")).lower() == "dpop" and self._dpop_key is not None:
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = self._dpop_key.proof(request.http_method, D.htu(self.server_url), access_token=token,
                                                           nonce=self._rs_nonce)
        else:
            request.headers["Authorization"] = f"Bearer {token}"
            request.headers.pop("DPoP", None)
        return str(token)

    def _note_rs_nonce(self, response: Response) -> None:
        values = header_values(response.headers, "dpop-nonce")
        if values:
            self._rs_nonce = values[-1].strip()

    async def _before_send(self) -> None:
        if not self._loaded:
            self._loaded = True
            stored = self.storage.get_tokens(self._key)
            if stored and str(stored.get("token_type", "")).lower() == "dpop" and self._dpop_key is None:
                stored = self._load_dpop_key(stored)
            if stored:
                self._tokens = stored
                self._requested = str(stored.get("scope_requested") or "").split()
        tokens = self._tokens
        if not tokens or not self._expiring(tokens):
            return
        async with self._lock_():
            if self._tokens is tokens and tokens.get("refresh_token"):
                if not await self._refresh(tokens):
                    self._set_tokens(None)

    def _load_dpop_key(self, stored: dict[str, Any]) -> dict[str, Any] | None:
        """DPoP-bound tokens come back only with the key they are bound to."""
        jwk, alg = stored.get("dpop_jwk"), stored.get("dpop_alg") or "ES256"
        if not isinstance(jwk, dict) or self.dpop is False:
            return None
        from ._jose import DPoPKey

        try:
            self._dpop_key = DPoPKey(str(alg), private_jwk=jwk)
        except (ValueError, TypeError, KeyError):
            return None
        return stored

    @staticmethod
    def _expiring(tokens: Mapping[str, Any]) -> bool:
        expires_at = tokens.get("expires_at")
        return isinstance(expires_at, int | float) and time.time() > expires_at - _REFRESH_MARGIN

    def _set_tokens(self, tokens: dict[str, Any] | None) -> None:
        self._tokens = tokens
        self.storage.set_tokens(self._key, tokens)

    @property
    def tokens(self) -> dict[str, Any] | None:
        """The current token record (contains secrets: never log it)."""
        return self._tokens

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
                async with self._http() as http:
                    meta = await self._fetch_as_metadata(http, str(tokens.get("issuer")), legacy=False)
                self._as_meta = meta
            client = self._client_record(meta)
            if client is None:
                return False
            form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
            if tokens.get("resource"):
                form["resource"] = tokens["resource"]
            new = await self._token_request(meta, form, client)
        except OAuthError as exc:
            log.info("%s: refreshing the token failed (%s); authorizing again", self.server_url, exc)
            return False
        if not new.get("refresh_token"):
            new["refresh_token"] = tokens["refresh_token"]
        self._store(new, meta, tokens.get("resource"), self._requested)
        return True

    # ------------------------------------------------------------------ authorization
    @asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http_client is not None:  # the caller's pool: used, never closed here
            yield self._http_client
            return
        import httpx

        async with httpx.AsyncClient(timeout=self.timeout, verify=self.verify, follow_redirects=False,
                                     headers={"Accept": "application/json"}) as http:
            yield http

    async def _obtain(self, challenge: WWWAuthenticate, sent: str | None, *, step_up: bool) -> None:
        async with self._lock_():
            current = (self._tokens or {}).get("access_token")
            if current is not None and current != sent:
                return  # another request already got a new token
            check_url_now(self.server_url, U.SERVER, self._policy, "the MCP server")
            async with self._http() as http:
                prm, meta = await self._discover(http, challenge)
                for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
                    if isinstance(meta.get(key), str):
                        await check_url(meta[key], U.NAMED, self._policy, f"the authorization server's {key}")
                if self._idp_token_endpoint is not None:
                    check_url_now(self._idp_token_endpoint, U.CONFIGURED, self._policy,
                                  "the identity provider's token endpoint")
                if self._client_id:
                    self._client_record(meta)  # bound credentials: refused here, before anything is sent
                self._as_meta = meta
                resource = prm.get("resource") if prm is not None else None
                scopes = self._select_scopes(challenge, prm, meta)
                if self.grant == "authorization_code":
                    tokens = await self._authorization_code(http, meta, resource, scopes)
                elif self.grant == "client_credentials":
                    tokens = await self._client_credentials(meta, resource, scopes)
                elif self.grant == "jwt_bearer":
                    tokens = await self._jwt_bearer(meta, resource, scopes, await self._workload_token())
                else:
                    tokens = await self._enterprise(http, meta, resource, scopes)
            self._requested = scopes
            self._store(tokens, meta, resource, scopes)

    @property
    def _policy(self) -> U.UrlPolicy:
        return U.UrlPolicy(self.server_url, self.allow_http, self.allow_private_network,
                           self.allow_cross_origin_metadata)

    def _store(self, tokens: dict[str, Any], meta: Mapping[str, Any], resource: str | None, scopes: list[str]) -> None:
        record: dict[str, Any] = {
            "access_token": tokens["access_token"],
            "token_type": tokens.get("token_type") or "Bearer",
            "issuer": meta.get("issuer"),
            "resource": resource,
            "scope_requested": " ".join(scopes),
        }
        if self._client_id:  # the pre-registered client: its credentials stay bound to this issuer
            record["client_id"] = self._client_id
        if tokens.get("refresh_token"):
            record["refresh_token"] = tokens["refresh_token"]
        if tokens.get("scope"):
            record["scope"] = tokens["scope"]
        expires_in = tokens.get("expires_in")
        if isinstance(expires_in, str) and expires_in.strip().isdigit():
            expires_in = int(expires_in)  # some servers send a string
        if isinstance(expires_in, int | float) and expires_in > 0:
            record["expires_at"] = time.time() + float(expires_in)
        if str(record["token_type"]).lower() == "dpop" and self._dpop_key is not None:
            # The bound tokens are useless without their key, and the key is no more secret
            # than the refresh token beside it: both are kept (the file store is 0600).
            record["dpop_jwk"] = self._dpop_key.private_jwk()
            record["dpop_alg"] = self._dpop_key.alg
        self._set_tokens(record)

    def _select_scopes(self, challenge: WWWAuthenticate, prm: Mapping[str, Any] | None,
                       meta: Mapping[str, Any]) -> list[str]:
        """Scope selection: the challenge's ``scope``, else the resource's ``scopes_supported``,
        else none; united with what was requested before (step-up keeps earlier grants)."""
        if self._scope_override is not None:
            base = list(self._scope_override)
        elif challenge.scope:
            base = challenge.scope.split()
        elif prm is not None and isinstance(prm.get("scopes_supported"), list):
            base = [s for s in prm["scopes_supported"] if isinstance(s, str)]
        else:
            base = []
        scopes = list(dict.fromkeys([*self._requested, *base]))
        as_scopes = meta.get("scopes_supported")
        if (self.grant == "authorization_code" and self.request_refresh_tokens and scopes
                and isinstance(as_scopes, list) and "offline_access" in as_scopes and "offline_access" not in scopes):
            scopes.append("offline_access")
        return scopes

    async def _discover(self, http: httpx.AsyncClient,
                        challenge: WWWAuthenticate) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """Protected resource metadata (None when the server has none: the 2025-03-26 way),
        then the authorization server's metadata, both validated."""
        prm = await self._fetch_prm(http, challenge)
        if prm is None:
            # 2025-03-26: no resource metadata; the MCP server's origin is the authorization server.
            issuer = D.legacy_endpoints(self.server_url)["issuer"]
            return None, await self._fetch_as_metadata(http, issuer, legacy=True)
        servers = prm.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
            raise OAuthError(f"the protected resource metadata of {self.server_url} names no authorization server",
                             error="invalid_metadata")
        return prm, await self._fetch_as_metadata(http, servers[0], legacy=False)

    async def _fetch_prm(self, http: httpx.AsyncClient, challenge: WWWAuthenticate) -> dict[str, Any] | None:
        problems: list[str] = []
        if challenge.resource_metadata:
            await check_url(challenge.resource_metadata, U.RESOURCE_METADATA, self._policy,
                            "the challenge's resource_metadata")
        urls = D.prm_urls(self.server_url, challenge.resource_metadata)
        async for url, prm in _documents(http, urls, "the protected resource metadata", problems):
            resource = prm.get("resource")
            if not isinstance(resource, str) or not D.resource_covers(resource, self.server_url):
                raise OAuthError(f"the protected resource metadata at {url} is for {_short(resource)!s}, not for "
                                 f"{self.server_url}: refusing to authorize", error="resource_mismatch")
            return prm
        if problems:
            hint = " (and the WWW-Authenticate header did not parse)" if challenge.malformed else ""
            raise OAuthError(f"no usable protected resource metadata for {self.server_url}{hint}: "
                             + "; ".join(problems), error="discovery_failed")
        return None

    async def _fetch_as_metadata(self, http: httpx.AsyncClient, issuer: str, *, legacy: bool) -> dict[str, Any]:
        problems: list[str] = []
        await check_url(issuer, U.NAMED, self._policy, "the authorization server")
        async for url, meta in _documents(http, D.as_metadata_urls(issuer), "the authorization server metadata", problems):
            if meta.get("issuer") != issuer:
                raise OAuthError(f"the authorization server metadata at {url} names issuer "
                                 f"{_short(meta.get('issuer'))!s}, not {issuer}: refusing to use it",
                                 error="issuer_mismatch")
            for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
                if key in meta and not isinstance(meta[key], str):
                    raise OAuthError(f"the authorization server metadata at {url} has a bad {key}",
                                     error="invalid_metadata")
            return meta
        if legacy and not problems:
            return D.legacy_endpoints(self.server_url)
        raise OAuthError(f"no usable authorization server metadata for {issuer}"
                         + (": " + "; ".join(problems) if problems else " (none of the well-known URLs answered)"),
                         error="discovery_failed")

    # ------------------------------------------------------------------ client registration
    def _client_record(self, meta: Mapping[str, Any]) -> dict[str, Any] | None:
        issuer = str(meta.get("issuer"))
        if self._client_id:  # pre-registered credentials stay with one authorization server
            self._cred_issuer = bind(self._client_id, issuer, bound=self._cred_issuer,
                                     stored=self._tokens or self.storage.get_tokens(self._key),
                                     confidential=bool(self._client_secret or self._private_key))
            record: dict[str, Any] = {"client_id": self._client_id}
            if self._client_secret:
                record["client_secret"] = self._client_secret
            if self._auth_method:
                record["token_endpoint_auth_method"] = self._auth_method
            return record
        stored = self.storage.get_client(issuer)
        expires = (stored or {}).get("client_secret_expires_at")
        if stored is not None and isinstance(expires, int | float) and 0 < expires < time.time():
            self.storage.set_client(issuer, None)  # the registration's secret expired: register again
            return None
        return stored

    def _redirect(self, registered: str | None = None) -> str:
        """The redirect URI; without an authorizer, a loopback listener serves it (on the
        given loopback URI's port and path; else on the port this client registered, when it
        is free; else on a free port)."""
        if self._authorizer is None:
            from ._loopback import LoopbackRedirect

            if self._redirect_uri is None:
                loop = None
                r = urlsplit(registered or "")
                if r.scheme == "http" and r.hostname == "127.0.0.1" and r.port:
                    try:
                        loop = LoopbackRedirect(port=r.port, path=r.path or "/", open_browser=self.open_browser)
                    except OSError:
                        loop = None  # taken: RFC 8252 §7.3 lets the port vary
                if loop is None:
                    loop = LoopbackRedirect(open_browser=self.open_browser)
            else:
                p = urlsplit(self._redirect_uri)
                if p.scheme != "http" or p.hostname not in ("127.0.0.1", "localhost") or not p.port:
                    raise OAuthError(f"no authorizer for the redirect URI {self._redirect_uri}: give authorizer=, or a "
                                     "loopback redirect URI with a port (http://127.0.0.1:PORT/...)",
                                     error="no_authorizer")
                loop = LoopbackRedirect(port=p.port, path=p.path or "/", open_browser=self.open_browser)
                loop.redirect_uri = self._redirect_uri
            self._authorizer = loop
            self._redirect_uri = loop.redirect_uri
        elif self._redirect_uri is None:
            self._redirect_uri = "http://127.0.0.1/callback"
        return self._redirect_uri

    async def _client_for(self, http: httpx.AsyncClient, meta: Mapping[str, Any], scopes: list[str]) -> dict[str, Any]:
        record = self._client_record(meta)
        if record is not None:
            return record
        issuer = str(meta.get("issuer"))
        if meta.get("client_id_metadata_document_supported") is True and self.client_metadata_url:
            record = {"client_id": self.client_metadata_url, "token_endpoint_auth_method": "none"}
        elif isinstance(meta.get("registration_endpoint"), str):
            record = await self._register(http, meta, scopes)
        else:
            raise OAuthError(f"cannot register with {issuer}: it offers no dynamic registration"
                             + (" and no Client ID Metadata Documents" if not self.client_metadata_url else "")
                             + "; give pre-registered credentials (client_id, client_secret)",
                             error="registration_unavailable")
        self.storage.set_client(issuer, record)
        return record

    async def _register(self, http: httpx.AsyncClient, meta: Mapping[str, Any], scopes: list[str]) -> dict[str, Any]:
        import httpx

        redirect = self._redirect()
        host = (urlsplit(redirect).hostname or "").lower()
        native = host in ("127.0.0.1", "localhost", "::1") or urlsplit(redirect).scheme not in ("http", "https")
        supported = meta.get("token_endpoint_auth_methods_supported")
        if not isinstance(supported, list) or not supported:
            method = "client_secret_basic"
        elif "none" in supported:
            method = "none"
        elif "client_secret_basic" in supported:
            method = "client_secret_basic"
        else:
            method = "client_secret_post" if "client_secret_post" in supported else str(supported[0])
        grant_types = ["authorization_code"] + (["refresh_token"] if self.request_refresh_tokens else [])
        body: dict[str, Any] = {
            "client_name": self.client_name, "redirect_uris": [redirect], "grant_types": grant_types,
            "response_types": ["code"], "token_endpoint_auth_method": method,
            "application_type": "native" if native else "web",
        }
        as_scopes = meta.get("scopes_supported")
        if scopes and isinstance(as_scopes, list) and set(scopes) <= set(as_scopes):
            # Optional (RFC 7591 §2); sent only when the AS lists every scope, since real servers
            # refuse registrations naming scopes they do not publish (resource-server scopes).
            body["scope"] = " ".join(scopes)
        url = str(meta["registration_endpoint"])
        try:
            resp = await http.post(url, json=body)
        except httpx.HTTPError as exc:
            raise OAuthError(f"dynamic client registration at {url} failed: {type(exc).__name__}",
                             error="registration_failed") from None
        if resp.status_code not in (200, 201):
            raise self._error_from(resp, "dynamic client registration", url)
        data = _json_object(resp, "the registration response")
        if not isinstance(data.get("client_id"), str):
            raise OAuthError(f"the registration response from {url} has no client_id", error="registration_failed")
        record = {"client_id": data["client_id"], "registered": True, "redirect_uri": redirect}
        if isinstance(data.get("client_secret"), str):
            record["client_secret"] = data["client_secret"]
        if isinstance(data.get("client_secret_expires_at"), int | float):
            record["client_secret_expires_at"] = data["client_secret_expires_at"]
        if isinstance(data.get("token_endpoint_auth_method"), str):
            record["token_endpoint_auth_method"] = data["token_endpoint_auth_method"]
        # RFC 7591 §3.2.1: the server may change what was asked; refuse what cannot work now
        # rather than fail later at the token endpoint.
        granted = record.get("token_endpoint_auth_method")
        if granted in ("client_secret_basic", "client_secret_post") and "client_secret" not in record:
            raise OAuthError(f"{url} registered the client for {granted} but issued no client_secret",
                             error="registration_unusable")
        if granted is not None and granted not in ("none", "client_secret_basic", "client_secret_post", "private_key_jwt"):
            raise OAuthError(f"{url} registered the client with token_endpoint_auth_method {_short(granted, 60)}, "
                             "which this client does not implement", error="registration_unusable")
        if granted == "private_key_jwt" and self._private_key is None:
            raise OAuthError(f"{url} registered the client for private_key_jwt, but no private_key is configured",
                             error="registration_unusable")
        return record

    # ------------------------------------------------------------------ grants
    async def _authorization_code(self, http: httpx.AsyncClient, meta: Mapping[str, Any], resource: str | None,
                                  scopes: list[str]) -> dict[str, Any]:
        methods = meta.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            raise OAuthError(f"the authorization server {meta.get('issuer')} does not advertise PKCE S256 "
                             "(code_challenge_methods_supported): refusing to authorize", error="pkce_unsupported")
        endpoint = meta.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise OAuthError(f"the authorization server {meta.get('issuer')} has no authorization_endpoint",
                             error="invalid_metadata")
        client = await self._client_for(http, meta, scopes)
        redirect = self._redirect(client.get("redirect_uri"))
        verifier, state = new_verifier(), new_state()
        recorded_issuer = meta.get("issuer")
        params = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
                  "code_challenge": s256(verifier), "code_challenge_method": "S256", "state": state}
        if scopes:
            params["scope"] = " ".join(scopes)
            if "offline_access" in scopes:
                params["prompt"] = "consent"  # OpenID Connect Core §11: offline_access needs consent
        if resource:
            params["resource"] = resource
        url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
        assert self._authorizer is not None  # set by _redirect()
        callback = await self._authorizer(url, redirect)
        answer = AuthorizationResponse.from_url(callback)
        if answer.state is None or not hmac.compare_digest(answer.state, state):
            raise OAuthError("the authorization response's state does not match the request: refusing the code "
                             "(a forged or stale redirect)", error="state_mismatch")
        if answer.error:
            desc = f" ({_short(answer.error_description)})" if answer.error_description else ""
            raise OAuthError(f"the authorization server refused: {_short(answer.error, 60)}{desc}", error=answer.error,
                             description=answer.error_description)
        # RFC 9207 §2.4: a present iss is compared exactly; a missing one is refused if advertised.
        if answer.iss is not None:
            if answer.iss != recorded_issuer:
                raise OAuthError(f"the authorization response comes from issuer {_short(answer.iss)}, not "
                                 f"{recorded_issuer}: refusing the code (mix-up defence, RFC 9207)",
                                 error="issuer_mismatch")
        elif meta.get("authorization_response_iss_parameter_supported") is True:
            raise OAuthError(f"the authorization response lacks the iss parameter that {recorded_issuer} "
                             "advertises: refusing the code (RFC 9207)", error="issuer_missing")
        if not answer.code:
            raise OAuthError("the authorization response carries no code", error="invalid_response")
        form = {"grant_type": "authorization_code", "code": answer.code, "redirect_uri": redirect,
                "code_verifier": verifier}
        if resource:
            form["resource"] = resource
        return await self._token_request(meta, form, client)

    async def _client_credentials(self, meta: Mapping[str, Any], resource: str | None,
                                  scopes: list[str]) -> dict[str, Any]:
        client = self._client_record(meta) or {}  # raises when the credentials belong elsewhere
        form = {"grant_type": "client_credentials"}
        if scopes:
            form["scope"] = " ".join(scopes)
        if resource:
            form["resource"] = resource
        return await self._token_request(meta, form, client)

    async def _workload_token(self) -> str:
        if self._assertion is not None:
            return await _resolve(self._assertion)
        if self._assertion_file is not None:
            try:
                return await _resolve(Path(self._assertion_file).read_text("utf-8"))
            except OSError as exc:
                raise OAuthError(f"cannot read the workload token file: {exc.strerror}", error="invalid_assertion") from None
        value = os.environ.get(self._assertion_env or "")
        if not value:
            raise OAuthError(f"the environment variable {self._assertion_env} holds no workload token",
                             error="invalid_assertion")
        return await _resolve(value)

    async def _jwt_bearer(self, meta: Mapping[str, Any], resource: str | None, scopes: list[str],
                          assertion: str) -> dict[str, Any]:
        client = self._client_record(meta) or {}
        form = {"grant_type": GRANT_JWT_BEARER, "assertion": assertion}
        if scopes:
            form["scope"] = " ".join(scopes)
        if resource:
            form["resource"] = resource
        # Errors (invalid_grant...) surface as OAuthError: never retried, never another grant.
        return await self._token_request(meta, form, client)

    async def _enterprise(self, http: httpx.AsyncClient, meta: Mapping[str, Any], resource: str | None,
                          scopes: list[str]) -> dict[str, Any]:
        """SEP-990: RFC 8693 token exchange at the IdP (ID token → ID-JAG), then RFC 7523."""
        import httpx

        assert self._idp_token_endpoint is not None and self._idp_id_token is not None
        form = {"grant_type": GRANT_TOKEN_EXCHANGE, "requested_token_type": TOKEN_TYPE_ID_JAG,
                "subject_token": await _resolve(self._idp_id_token), "subject_token_type": TOKEN_TYPE_ID_TOKEN,
                "audience": str(meta.get("issuer"))}
        if resource:
            form["resource"] = resource
        if scopes:
            form["scope"] = " ".join(scopes)
        headers: dict[str, str] = {}
        if self._idp_client_id and self._idp_client_secret:
            headers["Authorization"] = _basic(self._idp_client_id, self._idp_client_secret)
        elif self._idp_client_id:
            form["client_id"] = self._idp_client_id
        url = self._idp_token_endpoint
        try:
            resp = await http.post(url, data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise OAuthError(f"the token exchange at {url} failed: {type(exc).__name__}", error="token_exchange_failed") from None
        if resp.status_code != 200:
            raise self._error_from(resp, "the token exchange at the identity provider", url)
        data = _json_object(resp, "the token exchange response")
        jag = data.get("access_token")
        if not isinstance(jag, str) or data.get("issued_token_type") not in (None, TOKEN_TYPE_ID_JAG):
            raise OAuthError(f"the identity provider at {url} returned no ID-JAG", error="token_exchange_failed")
        return await self._jwt_bearer(meta, resource, scopes, jag)

    # ------------------------------------------------------------------ the token endpoint
    def _dpop_for(self, meta: Mapping[str, Any]) -> DPoPKey | None:
        if self.dpop is False:
            return None
        algs = meta.get("dpop_signing_alg_values_supported")
        offered = [a for a in algs if a in _DPOP_ALGS] if isinstance(algs, list) else []
        if not offered and self.dpop is not True:
            return None
        if self._dpop_key is None:
            from ._jose import DPoPKey

            self._dpop_key = DPoPKey(offered[0] if offered else "ES256")
        return self._dpop_key

    def _token_auth(self, meta: Mapping[str, Any], client: Mapping[str, Any], form: dict[str, str],
                    headers: dict[str, str]) -> None:
        client_id = client.get("client_id")
        if not client_id:
            return
        secret = client.get("client_secret")
        supported = meta.get("token_endpoint_auth_methods_supported")
        supported = supported if isinstance(supported, list) and supported else ["client_secret_basic"]
        method = client.get("token_endpoint_auth_method")
        if method is None:
            if self._private_key is not None and client_id == self._client_id:
                method = "private_key_jwt"
            elif secret:
                if "client_secret_basic" in supported:
                    method = "client_secret_basic"
                elif "client_secret_post" in supported:
                    method = "client_secret_post"
                else:
                    method = "none" if "none" in supported else "client_secret_basic"
            else:
                method = "none"
        if method == "client_secret_basic" and secret:
            headers["Authorization"] = _basic(str(client_id), str(secret))
        elif method == "client_secret_post" and secret:
            form["client_id"] = str(client_id)
            form["client_secret"] = str(secret)
        elif method == "private_key_jwt":
            if self._private_key is None:
                raise OAuthError("private_key_jwt needs private_key", error="invalid_client")
            from ._jose import client_assertion, load_private_key

            key = load_private_key(self._private_key, self._signing_alg)
            form["client_id"] = str(client_id)
            form["client_assertion_type"] = ASSERTION_TYPE_JWT
            audience = {"issuer": meta.get("issuer"), "token_endpoint": meta.get("token_endpoint")}.get(
                self.assertion_audience, self.assertion_audience)
            form["client_assertion"] = client_assertion(key, self._signing_alg, str(client_id), str(audience))
        else:
            form["client_id"] = str(client_id)

    async def _token_request(self, meta: Mapping[str, Any], form: dict[str, str],
                             client: Mapping[str, Any]) -> dict[str, Any]:
        import httpx

        url = meta.get("token_endpoint")
        if not isinstance(url, str):
            raise OAuthError(f"the authorization server {meta.get('issuer')} has no token_endpoint",
                             error="invalid_metadata")
        key = self._dpop_for(meta)
        async with self._http() as http:
            for attempt in range(2):
                body, headers = dict(form), dict[str, str]()
                self._token_auth(meta, client, body, headers)
                if key is not None:
                    headers["DPoP"] = key.proof("POST", D.htu(url), nonce=self._as_nonce)
                try:
                    resp = await http.post(url, data=body, headers=headers)
                except httpx.HTTPError as exc:
                    raise OAuthError(f"the token request to {url} failed: {type(exc).__name__}",
                                     error="token_request_failed") from None
                nonce = resp.headers.get("dpop-nonce")
                if key is not None and nonce:
                    self._as_nonce = nonce.strip()
                if resp.status_code == 200:
                    break
                if key is not None and attempt == 0 and nonce and resp.status_code in (400, 401):
                    try:
                        err = resp.json().get("error")
                    except (ValueError, AttributeError):
                        err = None
                    if err == "use_dpop_nonce":
                        continue
                error = self._error_from(resp, f"the {form.get('grant_type', 'token')} token request", url)
                if error.error == "invalid_client" and client.get("registered"):
                    # The server no longer knows our registration: the next attempt registers again.
                    self.storage.set_client(str(meta.get("issuer")), None)
                raise error
        data = _json_object(resp, "the token response")
        if not isinstance(data.get("access_token"), str) or not data["access_token"]:
            raise OAuthError(f"the token response from {url} has no access_token", error="invalid_response")
        token_type = str(data.get("token_type") or "Bearer")
        if token_type.lower() not in ("bearer", "dpop"):
            raise OAuthError(f"the token response from {url} has unsupported token_type {_short(token_type, 40)}",
                             error="invalid_response")
        if token_type.lower() == "dpop" and key is None:
            raise OAuthError(f"{url} issued a DPoP-bound token without a DPoP proof", error="invalid_response")
        return data

    @staticmethod
    def _error_from(resp: httpx.Response, what: str, url: str) -> OAuthError:
        error, desc = None, None
        try:
            data = resp.json()
            if isinstance(data, dict):
                error, desc = data.get("error"), data.get("error_description")
        except ValueError:
            pass
        parts = f"{what} at {url} failed: HTTP {resp.status_code}"
        if isinstance(error, str):
            parts += f", {_short(error, 60)}"
        if isinstance(desc, str):
            parts += f" ({_short(desc)})"
        return OAuthError(parts, error=error if isinstance(error, str) else "server_error", status=resp.status_code)


def _basic(client_id: str, secret: str) -> str:
    """``client_secret_basic`` (RFC 6749 §2.3.1: form-encode each part, then Base64)."""
    raw = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")
