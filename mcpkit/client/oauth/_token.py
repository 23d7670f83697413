"""The token endpoint (RFC 6749 §3.2) and the revocation endpoint (RFC 7009): one grant's
form in, a checked token response out. The client authenticates with its strategy (see
:mod:`._client_auth`), afresh on each attempt; with DPoP the request carries a proof and is
sent once more when the server asks for a nonce (RFC 9449 §8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _urls as U
from ._client_auth import choose
from ._errors import OAuthError
from ._urlguard import check_url
from ._wire import error_from, json_object, short

if TYPE_CHECKING:
    import httpx

    from ._dpop import DPoPState
    from ._options import Network, Registration
    from ._storage import TokenStorage


class TokenEndpoint:
    def __init__(self, registration: Registration, network: Network, dpop: DPoPState, storage: TokenStorage) -> None:
        self.registration = registration
        self.network = network
        self.dpop = dpop
        self.storage = storage

    def authenticate(self, meta: Mapping[str, Any], client: Mapping[str, Any], form: dict[str, str],
                     headers: dict[str, str]) -> None:
        strategy = choose(client, meta, self.registration)
        if strategy is not None:
            strategy.apply(form, headers, meta)

    async def request(self, meta: Mapping[str, Any], form: dict[str, str], client: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``form`` (a grant's parameters) as ``client``; the token response, checked."""
        import httpx

        url = meta.get("token_endpoint")
        if not isinstance(url, str):
            raise OAuthError(f"the authorization server {meta.get('issuer')} has no token_endpoint",
                             error="invalid_metadata")
        key = self.dpop.key_for(meta)
        async with self.network.client() as http:
            for attempt in range(2):
                body, headers = dict(form), dict[str, str]()
                self.authenticate(meta, client, body, headers)
                if key is not None:
                    headers["DPoP"] = self.dpop.token_proof(url)
                try:
                    resp = await http.post(url, data=body, headers=headers)
                except httpx.HTTPError as exc:
                    raise OAuthError(f"the token request to {url} failed: {type(exc).__name__}",
                                     error="token_request_failed") from None
                nonce = self.dpop.note_as_nonce(resp.headers)
                if resp.status_code == 200:
                    break
                if key is not None and attempt == 0 and nonce and resp.status_code in (400, 401):
                    try:
                        err = resp.json().get("error")
                    except (ValueError, AttributeError):
                        err = None
                    if err == "use_dpop_nonce":
                        continue
                error = error_from(resp, f"the {form.get('grant_type', 'token')} token request", url)
                if error.error == "invalid_client" and client.get("registered"):
                    # The server no longer knows our registration: the next attempt registers again.
                    self.storage.set_client(str(meta.get("issuer")), None)
                raise error
        data = json_object(resp, "the token response")
        if not isinstance(data.get("access_token"), str) or not data["access_token"]:
            raise OAuthError(f"the token response from {url} has no access_token", error="invalid_response")
        token_type = str(data.get("token_type") or "Bearer")
        if token_type.lower() not in ("bearer", "dpop"):
            raise OAuthError(f"the token response from {url} has unsupported token_type {short(token_type, 40)}",
                             error="invalid_response")
        if token_type.lower() == "dpop" and key is None:
            raise OAuthError(f"{url} issued a DPoP-bound token without a DPoP proof", error="invalid_response")
        return data

    async def revoke(self, http: httpx.AsyncClient, meta: Mapping[str, Any], client: Mapping[str, Any],
                     tokens: Mapping[str, Any], policy: U.UrlPolicy) -> None:
        """Revoke the refresh token, then the access token, where the server has a
        ``revocation_endpoint`` (else nothing)."""
        import httpx

        url = meta.get("revocation_endpoint")
        if not isinstance(url, str):
            return
        await check_url(url, U.NAMED, policy, "the revocation endpoint")
        for kind in ("refresh_token", "access_token"):
            if not tokens.get(kind):
                continue
            form, headers = {"token": str(tokens[kind]), "token_type_hint": kind}, dict[str, str]()
            self.authenticate(meta, client, form, headers)
            try:
                resp = await http.post(url, data=form, headers=headers)
            except httpx.HTTPError as exc:
                raise OAuthError(f"the revocation request to {url} failed: {type(exc).__name__}",
                                 error="revocation_failed") from None
            if resp.status_code != 200:
                raise error_from(resp, "the revocation request", url)
