"""The resource server: who may call an HTTP endpoint, and what it tells those who may not.

:class:`ResourceServerAuth` is what ``server.http_app(auth=...)`` takes. It reads the token
from the ``Authorization`` header only (a token in the query string is refused, the body is
never looked at), hands it to a :class:`TokenVerifier`, checks a DPoP proof for bound
tokens, and answers refusals with RFC 6750 / RFC 9449 challenges that name the protected
resource metadata (RFC 9728) and the scopes wanted. Tokens are never logged.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ...protocol import errors
from ...transports import AuthRefusal
from ._compact import MAX_TOKEN_LENGTH
from ._dpop import DPoPChecker
from ._principal import InvalidToken, Principal, ScopeRule, TokenRequest, TokenVerifier, exact_scopes

log = logging.getLogger("mcpkit.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: Never asked for in a challenge: it is about refresh tokens, not this resource.
_NEVER_CHALLENGED = frozenset({"offline_access"})
#: JSON-RPC code of the body of a 401/403 (the HTTP status carries the meaning).
UNAUTHORIZED = -32001


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def metadata_url(resource: str) -> str:
    """The path-inserted RFC 9728 URL of ``resource``: ``origin/.well-known/oauth-protected-resource/path``."""
    u = urlsplit(resource)
    path = u.path.rstrip("/")
    return f"{u.scheme}://{u.netloc}{WELL_KNOWN}{path}"


class ResourceServerAuth:
    """Protect an MCP endpoint with OAuth access tokens.

    ``verifier``: a :class:`TokenVerifier` (a :class:`JWTVerifier`, an
    :class:`IntrospectionVerifier`, or yours); ``issuer`` alone makes a JWTVerifier.
    ``resource``: the canonical URL of the endpoint, mount path included (behind a proxy,
    the public one): the audience tokens must name. By default it is the address the server
    is bound to (``http://127.0.0.1:8000/mcp``), fixed when ``run("http")`` or ``mcpkit serve``
    binds it (a wildcard bind such as ``0.0.0.0`` needs ``resource=``); under another ASGI
    server, the local address of the socket each request came in on. Never the ``Host``
    header, which the client chooses.
    ``scopes``: required for every request (and named in 401 challenges).
    ``scopes_supported``: published in the metadata (default: ``scopes``, the minimal set
    for basic use, as the MCP spec asks; the scopes of single operations are asked for by
    403 challenges when needed: step-up authorization).
    ``scope_rule``: whether granted scopes cover a needed one (e.g. :func:`hierarchical_scopes`).
    ``dpop``: ``"allow"`` (default: bound tokens need a proof, bearer tokens pass),
    ``"require"`` (every token must be DPoP-bound) or ``"off"`` (refuse the DPoP scheme).
    ``use_dpop_nonce``: demand server nonces in DPoP proofs.
    ``list_mode``: ``"filter"`` (``tools/list`` etc. show only what the token may use) or
    ``"all"`` (list everything; calls without the scope get 403).
    ``max_token_length``: longer access tokens are refused (401 ``invalid_token``) before
    the verifier sees them. Every malformed token or DPoP proof is a 401 with a challenge.
    """

    def __init__(
        self,
        verifier: TokenVerifier | None = None,
        *,
        issuer: str | None = None,
        resource: str | None = None,
        authorization_servers: Iterable[str] | None = None,
        scopes: Iterable[str] = (),
        scopes_supported: Iterable[str] | None = None,
        scope_rule: ScopeRule = exact_scopes,
        dpop: str = "allow",
        use_dpop_nonce: bool = False,
        dpop_checker: DPoPChecker | None = None,
        list_mode: str = "filter",
        resource_name: str | None = None,
        resource_documentation: str | None = None,
        serve_root_metadata: bool = True,
        metadata_extra: Mapping[str, Any] | None = None,
        max_token_length: int = MAX_TOKEN_LENGTH,
    ) -> None:
        if verifier is None:
            if issuer is None:
                raise ValueError("ResourceServerAuth needs a verifier= or an issuer=")
            from ._jwt import JWTVerifier

            verifier = JWTVerifier(issuer, scope_rule=scope_rule)
        if dpop not in ("allow", "require", "off"):
            raise ValueError("dpop must be 'allow', 'require' or 'off'")
        if list_mode not in ("filter", "all"):
            raise ValueError("list_mode must be 'filter' or 'all'")
        self.verifier = verifier
        # The verifier may be the user's own (a TokenVerifier needs only verify()); one that has
        # an ``issuer`` (mcpkit's JWTVerifier, or yours) names the authorization server.
        issuer = issuer or getattr(verifier, "issuer", None)
        servers = list(authorization_servers) if authorization_servers is not None else ([issuer] if issuer else [])
        if not servers:
            raise ValueError("name the authorization server(s): authorization_servers=[...] or issuer=")
        self.authorization_servers = servers
        self.resource = resource.rstrip("/") if resource else None
        self.scopes = tuple(dict.fromkeys(scopes))
        #: What every request needs (``offline_access`` is about refresh tokens: never required).
        self.required = tuple(s for s in self.scopes if s not in _NEVER_CHALLENGED)
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.scope_rule = scope_rule
        self.dpop = dpop
        self.dpop_checker = dpop_checker or DPoPChecker(use_nonce=use_dpop_nonce)
        self.list_mode = list_mode
        self._list_all = list_mode == "all"
        self._adjust = self._list_all or scope_rule is not exact_scopes
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        self.serve_root_metadata = serve_root_metadata
        self.metadata_extra = dict(metadata_extra or {})
        self.max_token_length = max_token_length
        self._docs: dict[str, bytes] = {}
        self._resources: dict[tuple[str, str | None, str], str] = {}

    # ------------------------------------------------------------------ metadata
    def resource_url(self, scheme: str, host: str | None, path: str) -> str:
        """The configured ``resource``, else ``scheme://host/path`` where ``host`` is the
        authority of the local socket the server is reached on (the app passes it; never a
        request's ``Host`` header)."""
        if self.resource is not None:
            return self.resource
        key = (scheme, host, path)
        url = self._resources.get(key)
        if url is None:
            url = f"{scheme}://{(host or 'localhost').lower()}{path}".rstrip("/")
            if len(self._resources) > 256:
                self._resources.clear()
            self._resources[key] = url
        return url

    def metadata(self, resource: str) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728 §2) for ``resource``."""
        supported = self.scopes_supported
        if supported is None:
            supported = list(self.scopes)
        doc: dict[str, Any] = {
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        if supported:
            doc["scopes_supported"] = supported
        if self.dpop != "off":
            doc["dpop_signing_alg_values_supported"] = list(self.dpop_checker.algorithms)
        if self.dpop == "require":
            doc["dpop_bound_access_tokens_required"] = True
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation:
            doc["resource_documentation"] = self.resource_documentation
        doc.update(self.metadata_extra)
        return doc

    def metadata_document(self, resource: str) -> bytes:
        doc = self._docs.get(resource)
        if doc is None:
            doc = json.dumps(self.metadata(resource), separators=(",", ":")).encode()
            if len(self._docs) > 64:
                self._docs.clear()
            self._docs[resource] = doc
        return doc

    # ------------------------------------------------------------------ challenges
    def challenge(self, resource: str, *, error: str | None = None, description: str | None = None,
                  scope: Collection[str] | None = None, scheme: str | None = None) -> str:
        """One ``WWW-Authenticate`` value (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1)."""
        wanted = [s for s in (self.required if scope is None else scope) if s not in _NEVER_CHALLENGED]
        params = [f"resource_metadata={_quote(metadata_url(resource))}"]
        if wanted:
            params.append(f"scope={_quote(' '.join(wanted))}")
        if error:
            params.append(f"error={_quote(error)}")
            if description:
                params.append(f"error_description={_quote(description)}")
        if scheme is None:
            scheme = "DPoP" if self.dpop == "require" else "Bearer"
        value = f"{scheme} " + ", ".join(params)
        if scheme == "DPoP":
            value += f", algs={_quote(' '.join(self.dpop_checker.algorithms))}"
        elif self.dpop != "off":
            # Offer DPoP beside Bearer so a client knows it may bind its tokens.
            value += f", DPoP algs={_quote(' '.join(self.dpop_checker.algorithms))}"
        return value

    def _refuse(self, status: int, resource: str, *, error: str | None, description: str,
                scope: Collection[str] | None = None, scheme: str | None = None,
                headers: tuple[tuple[bytes, bytes], ...] = ()) -> AuthRefusal:
        challenge = self.challenge(resource, error=error, description=description if error else None, scope=scope,
                                   scheme=scheme)
        message = ("Forbidden: " if status == 403 else "Unauthorized: ") + description
        data = {"error": error} if error else None
        return AuthRefusal(status, challenge, errors.MCPError(UNAUTHORIZED, message, data), headers, error, description,
                           scheme)

    # ------------------------------------------------------------------ per request
    async def authenticate(self, method: str, resource: str, headers: Mapping[str, str],
                           query: bytes) -> Principal | AuthRefusal:
        if query and b"access_token" in query and any(
                part.split(b"=", 1)[0] == b"access_token" for part in query.split(b"&")):
            return self._refuse(401, resource, error="invalid_request",
                                description="access tokens are accepted in the Authorization header only")
        raw = headers.get("authorization")
        if not raw:
            return self._refuse(401, resource, error=None, description="an access token is required")
        scheme, _, token = raw.strip().partition(" ")
        token = token.strip()
        kind = scheme.lower()
        if kind not in ("bearer", "dpop") or not token or "," in token or " " in token:
            return self._refuse(401, resource, error="invalid_request",
                                description="send the access token as 'Authorization: Bearer <token>' (or DPoP)")
        if kind == "dpop" and self.dpop == "off":
            return self._refuse(401, resource, error="invalid_request", description="DPoP is not accepted here")
        if len(token) > self.max_token_length:
            return self._refuse(401, resource, error="invalid_token", description="the access token is too long",
                                scheme="DPoP" if kind == "dpop" else None)
        request = TokenRequest(method, resource, "DPoP" if kind == "dpop" else "Bearer", headers)
        try:
            try:
                principal = await self.verifier.verify(token, request)
            except (InvalidToken, errors.MCPError):
                raise
            except Exception as exc:
                # A verifier that trips over a malformed token must not turn it into a 500.
                log.warning("the token verifier failed (%s): refusing the token", type(exc).__name__)
                raise InvalidToken("the access token could not be checked") from None
            if principal is None:
                raise InvalidToken()
            if principal.jkt is not None or kind == "dpop" or self.dpop == "require":
                await self._check_dpop(principal, token, kind, request)
        except errors.MCPError as exc:
            # A shared store (Redis) the check needs is unreachable: refuse for now, never let through.
            log.warning("could not check a token: %s", exc.message)
            return AuthRefusal(503, self.challenge(resource), exc, ((b"retry-after", b"1"),))
        except InvalidToken as exc:
            nonce = exc.dpop_nonce
            extra = ((b"dpop-nonce", nonce.encode()),) if nonce else ()
            scheme_out = "DPoP" if (kind == "dpop" or exc.error in ("invalid_dpop_proof", "use_dpop_nonce")) else None
            log.info("refused a token: %s", exc.description)
            return self._refuse(401, resource, error=exc.error, description=exc.description, scheme=scheme_out,
                                headers=extra)
        if self._adjust and (principal.rule is not self.scope_rule or principal.list_all != self._list_all):
            principal = dataclasses.replace(principal, rule=self.scope_rule, list_all=self._list_all)
        if self.required and not principal.allows(self.required):
            return self._refuse(403, resource, error="insufficient_scope",
                                description="the access token lacks a scope this server requires", scope=self.required)
        return principal

    async def _check_dpop(self, principal: Principal, token: str, kind: str, request: TokenRequest) -> None:
        if principal.jkt is None:
            if self.dpop == "require":
                raise InvalidToken("this server takes DPoP-bound tokens only")
            # The DPoP scheme with an unbound token (RFC 9449 §7.2): refuse.
            raise InvalidToken("the DPoP scheme needs a DPoP-bound token")
        if kind != "dpop":
            raise InvalidToken("a DPoP-bound token must be sent with the DPoP scheme")
        try:
            await self.dpop_checker.check(request.headers.get("dpop"), token, principal.jkt, request)
        except (InvalidToken, errors.MCPError):
            raise
        except Exception as exc:
            log.warning("the DPoP check failed (%s): refusing the proof", type(exc).__name__)
            raise InvalidToken("the DPoP proof could not be checked", error="invalid_dpop_proof") from None

    def authorize(self, principal: Any, needed: Collection[str], resource: str) -> AuthRefusal | None:
        if not needed or principal.allows(needed):
            return None
        wanted = list(dict.fromkeys([*self.required, *needed]))
        return self._refuse(403, resource, error="insufficient_scope",
                            description="the access token lacks the scope this operation requires", scope=wanted)

    def rescope(self, refusal: AuthRefusal, needed: Collection[str], resource: str) -> AuthRefusal:
        """A 401 for an operation that needs more than the server-wide scopes names them all,
        so the client asks for everything in one authorization (the MCP spec's scope rule)."""
        wanted = list(dict.fromkeys([*self.required, *needed]))
        if refusal.status != 401 or wanted == list(self.required):
            return refusal
        return self._refuse(401, resource, error=refusal.oauth_error, description=refusal.description, scope=wanted,
                            scheme=refusal.scheme, headers=refusal.headers)
