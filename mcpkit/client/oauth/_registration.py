"""Who the client is at an authorization server, in order: the pre-registered credentials
(bound to one issuer, see :mod:`._binding`), a registration kept from an earlier run, the
client's metadata document (Client ID Metadata Documents), or dynamic client registration
(RFC 7591). Registrations are kept per issuer: another authorization server means
registering anew, never reusing another server's credentials."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._binding import bind
from ._client_auth import METHODS
from ._errors import OAuthError
from ._wire import error_from, json_object, short

if TYPE_CHECKING:
    import httpx

    from ._options import Registration
    from ._storage import TokenStorage

#: ``redirect(registered)``: the redirect URI to use (given the one a kept registration has).
RedirectFor = Callable[[str | None], str]


class Clients:
    """The registration step of one OAuth client (``resource``: the MCP server's key in the
    token store, where the binding of pre-registered credentials is remembered)."""

    def __init__(self, options: Registration, storage: TokenStorage, resource: str) -> None:
        self.options = options
        self.storage = storage
        self.resource = resource
        #: The issuer the pre-registered credentials are bound to (given, remembered or first used).
        self.bound_issuer = options.issuer

    def record(self, meta: Mapping[str, Any], tokens: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The client record for this authorization server without registering: the
        pre-registered one (after the binding check, which raises before anything is sent),
        or one kept from an earlier registration (unless its secret expired); else None."""
        issuer = str(meta.get("issuer"))
        o = self.options
        if o.client_id:
            self.bound_issuer = bind(o.client_id, issuer, bound=self.bound_issuer,
                                     stored=tokens or self.storage.get_tokens(self.resource), confidential=o.confidential)
            record: dict[str, Any] = {"client_id": o.client_id}
            if o.client_secret:
                record["client_secret"] = o.client_secret
            if o.token_endpoint_auth_method:
                record["token_endpoint_auth_method"] = o.token_endpoint_auth_method
            return record
        stored = self.storage.get_client(issuer)
        expires = (stored or {}).get("client_secret_expires_at")
        if stored is not None and isinstance(expires, int | float) and 0 < expires < time.time():
            self.storage.set_client(issuer, None)  # the registration's secret expired: register again
            return None
        return stored

    async def ensure(self, http: httpx.AsyncClient, meta: Mapping[str, Any], scopes: list[str],
                     tokens: Mapping[str, Any] | None, redirect: RedirectFor, *,
                     refresh_tokens: bool) -> dict[str, Any]:
        """The client record, registering when there is none (for the authorization code
        grant: ``redirect`` gives the redirect URI to register)."""
        record = self.record(meta, tokens)
        if record is not None:
            return record
        issuer = str(meta.get("issuer"))
        cimd = self.options.client_metadata_url
        if meta.get("client_id_metadata_document_supported") is True and cimd:
            record = {"client_id": cimd, "token_endpoint_auth_method": "none"}
        elif isinstance(meta.get("registration_endpoint"), str):
            record = await self.register(http, meta, scopes, redirect(None), refresh_tokens=refresh_tokens)
        else:
            raise OAuthError(f"cannot register with {issuer}: it offers no dynamic registration"
                             + (" and no Client ID Metadata Documents" if not cimd else "")
                             + "; give pre-registered credentials (client_id, client_secret)",
                             error="registration_unavailable")
        self.storage.set_client(issuer, record)
        return record

    async def register(self, http: httpx.AsyncClient, meta: Mapping[str, Any], scopes: list[str], redirect: str, *,
                       refresh_tokens: bool) -> dict[str, Any]:
        """Dynamic client registration (RFC 7591); the record of what the server granted."""
        import httpx

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
        grant_types = ["authorization_code"] + (["refresh_token"] if refresh_tokens else [])
        body: dict[str, Any] = {
            "client_name": self.options.client_name, "redirect_uris": [redirect], "grant_types": grant_types,
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
            raise error_from(resp, "dynamic client registration", url)
        data = json_object(resp, "the registration response")
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
        if granted is not None and granted not in METHODS:
            raise OAuthError(f"{url} registered the client with token_endpoint_auth_method {short(granted, 60)}, "
                             "which this client does not implement", error="registration_unusable")
        if granted == "private_key_jwt" and self.options.private_key is None:
            raise OAuthError(f"{url} registered the client for private_key_jwt, but no private_key is configured",
                             error="registration_unusable")
        return record
