"""The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636, OAuth 2.1): a person
authorizes in a browser; the answer is checked for ``state`` and ``iss`` (RFC 9207) before
its code is exchanged."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from .._errors import OAuthError
from .._pkce import new_state, new_verifier, s256
from .._redirects import AuthorizationResponse, Authorizer
from .._wire import short
from ._base import Grant, GrantContext

if TYPE_CHECKING:
    from .._options import Network, Registration

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def check_redirect_uri(redirect_uri: str | None, *, allow_http: bool = False) -> None:
    """The spec's redirect URI rule: https, or http on a loopback host (ValueError otherwise)."""
    if redirect_uri is None or allow_http:
        return
    r = urlsplit(redirect_uri)
    if not (r.scheme == "https" or (r.scheme == "http" and (r.hostname or "") in _LOOPBACK)):
        raise ValueError("redirect_uri must be https or a loopback http URI (the spec's redirect URI rule)")


class AuthorizationCode(Grant):
    """A person authorizes in a browser (the default grant).

    ``authorizer`` drives that step: ``authorizer(authorization_url, redirect_uri)`` returns
    the URL the browser was sent back to. The default is a
    :class:`~mcpkit.auth.LoopbackRedirect`, a one-shot listener on 127.0.0.1 that opens the
    browser (``open_browser=False`` prints the URL instead), on ``redirect_uri``'s port when
    that is a loopback URI; :func:`~mcpkit.auth.follow_redirects` is the headless one.
    ``request_refresh_tokens`` asks for ``offline_access`` (and registers for the
    refresh_token grant) when the authorization server offers it.
    """

    name = "authorization_code"

    def __init__(self, authorizer: Authorizer | None = None, *, redirect_uri: str | None = None,
                 open_browser: bool = True, request_refresh_tokens: bool = True) -> None:
        self.authorizer = authorizer
        self.redirect_uri = redirect_uri
        self.open_browser = open_browser
        self.request_refresh_tokens = request_refresh_tokens

    def __repr__(self) -> str:
        return f"AuthorizationCode(redirect_uri={self.redirect_uri!r})"

    @property
    def offline_access(self) -> bool:
        """``request_refresh_tokens``: ask for ``offline_access`` when the server offers it."""
        return self.request_refresh_tokens

    def validate(self, registration: Registration, network: Network) -> None:
        check_redirect_uri(self.redirect_uri, allow_http=network.allow_http)

    def redirect(self, registered: str | None = None) -> str:
        """The redirect URI; without an authorizer, a loopback listener serves it (on the
        given loopback URI's port and path; else on the port this client registered
        (``registered``), when it is free; else on a free port)."""
        if self.authorizer is None:
            from .._loopback import LoopbackRedirect

            if self.redirect_uri is None:
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
                p = urlsplit(self.redirect_uri)
                if p.scheme != "http" or p.hostname not in ("127.0.0.1", "localhost") or not p.port:
                    raise OAuthError(f"no authorizer for the redirect URI {self.redirect_uri}: give authorizer=, or a "
                                     "loopback redirect URI with a port (http://127.0.0.1:PORT/...)",
                                     error="no_authorizer")
                loop = LoopbackRedirect(port=p.port, path=p.path or "/", open_browser=self.open_browser)
                loop.redirect_uri = self.redirect_uri
            self.authorizer = loop
            self.redirect_uri = loop.redirect_uri
        elif self.redirect_uri is None:
            self.redirect_uri = "http://127.0.0.1/callback"
        return self.redirect_uri

    async def obtain(self, ctx: GrantContext) -> dict[str, Any]:
        meta, resource, scopes = ctx.meta, ctx.resource, ctx.scopes
        methods = meta.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            raise OAuthError(f"the authorization server {meta.get('issuer')} does not advertise PKCE S256 "
                             "(code_challenge_methods_supported): refusing to authorize", error="pkce_unsupported")
        endpoint = meta.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise OAuthError(f"the authorization server {meta.get('issuer')} has no authorization_endpoint",
                             error="invalid_metadata")
        client = await ctx.clients.ensure(ctx.http, meta, scopes, ctx.tokens, self.redirect,
                                          refresh_tokens=self.request_refresh_tokens)
        redirect = self.redirect(client.get("redirect_uri"))
        verifier, state = new_verifier(), new_state()
        params = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
                  "code_challenge": s256(verifier), "code_challenge_method": "S256", "state": state}
        if scopes:
            params["scope"] = " ".join(scopes)
            if "offline_access" in scopes:
                params["prompt"] = "consent"  # OpenID Connect Core §11: offline_access needs consent
        if resource:
            params["resource"] = resource
        url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
        assert self.authorizer is not None  # set by redirect()
        answer = AuthorizationResponse.from_url(await self.authorizer(url, redirect))
        code = self.check(answer, state, meta.get("issuer"),
                          meta.get("authorization_response_iss_parameter_supported") is True)
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "code_verifier": verifier}
        if resource:
            form["resource"] = resource
        return await ctx.token(form, client)

    @staticmethod
    def check(answer: AuthorizationResponse, state: str, issuer: object, iss_advertised: bool) -> str:
        """The code of an authorization response that answers this request; else OAuthError."""
        if answer.state is None or not hmac.compare_digest(answer.state, state):
            raise OAuthError("the authorization response's state does not match the request: refusing the code "
                             "(a forged or stale redirect)", error="state_mismatch")
        if answer.error:
            desc = f" ({short(answer.error_description)})" if answer.error_description else ""
            raise OAuthError(f"the authorization server refused: {short(answer.error, 60)}{desc}", error=answer.error,
                             description=answer.error_description)
        # RFC 9207 §2.4: a present iss is compared exactly; a missing one is refused if advertised.
        if answer.iss is not None:
            if answer.iss != issuer:
                raise OAuthError(f"the authorization response comes from issuer {short(answer.iss)}, not "
                                 f"{issuer}: refusing the code (mix-up defence, RFC 9207)", error="issuer_mismatch")
        elif iss_advertised:
            raise OAuthError(f"the authorization response lacks the iss parameter that {issuer} "
                             "advertises: refusing the code (RFC 9207)", error="issuer_missing")
        if not answer.code:
            raise OAuthError("the authorization response carries no code", error="invalid_response")
        return answer.code
