"""Enterprise-managed authorization (SEP-990; the MCP extension
``io.modelcontextprotocol/enterprise-managed-authorization``): a token exchange at the
enterprise identity provider (RFC 8693: the user's ID token for an ID-JAG, an identity
assertion for this authorization server), then the JWT bearer grant with it (RFC 7523)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _urls as U
from .._client_auth import basic
from .._errors import OAuthError
from .._urlguard import check_url_now
from .._wire import error_from, json_object
from ._base import Grant, GrantContext, TokenSource, resolve
from ._jwt_bearer import jwt_bearer

if TYPE_CHECKING:
    from .._options import Network, Registration

GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


@dataclass(eq=False)
class EnterpriseManaged(Grant):
    """``idp_token_endpoint`` is the identity provider's token endpoint; ``idp_id_token``
    the user's ID token there (a string or a callable); ``idp_client_id`` (and
    ``idp_client_secret``) the client at the identity provider. The MCP authorization
    server's client is the :class:`~mcpkit.auth.Registration`'s ``client_id``."""

    idp_token_endpoint: str
    idp_id_token: TokenSource = field(repr=False)
    idp_client_id: str | None = None
    idp_client_secret: str | None = field(default=None, repr=False)

    name = "enterprise"
    extension = "io.modelcontextprotocol/enterprise-managed-authorization"

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> Grant:
        """The grant from the older spelling's ``idp_*`` keywords (ValueError without the two it needs)."""
        if not (keywords.get("idp_token_endpoint") and keywords.get("idp_id_token") is not None):
            raise ValueError("the enterprise grant needs idp_token_endpoint, idp_id_token and client_id")
        return cls(**keywords)

    def validate(self, registration: Registration, network: Network) -> None:
        if not (self.idp_token_endpoint and self.idp_id_token is not None and registration.client_id):
            raise ValueError("the enterprise grant needs idp_token_endpoint, idp_id_token and client_id")

    def check_urls(self, policy: U.UrlPolicy) -> None:
        check_url_now(self.idp_token_endpoint, U.CONFIGURED, policy, "the identity provider's token endpoint")

    async def obtain(self, ctx: GrantContext) -> dict[str, Any]:
        return await jwt_bearer(ctx, await self.id_jag(ctx), ctx.client())

    async def id_jag(self, ctx: GrantContext) -> str:
        """The RFC 8693 exchange at the identity provider: the ID-JAG for this authorization server."""
        import httpx

        form = {"grant_type": GRANT_TOKEN_EXCHANGE, "requested_token_type": TOKEN_TYPE_ID_JAG,
                "subject_token": await resolve(self.idp_id_token), "subject_token_type": TOKEN_TYPE_ID_TOKEN,
                "audience": str(ctx.meta.get("issuer"))}
        if ctx.resource:
            form["resource"] = ctx.resource
        if ctx.scopes:
            form["scope"] = " ".join(ctx.scopes)
        headers: dict[str, str] = {}
        if self.idp_client_id and self.idp_client_secret:
            headers["Authorization"] = basic(self.idp_client_id, self.idp_client_secret)
        elif self.idp_client_id:
            form["client_id"] = self.idp_client_id
        url = self.idp_token_endpoint
        try:
            resp = await ctx.http.post(url, data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise OAuthError(f"the token exchange at {url} failed: {type(exc).__name__}",
                             error="token_exchange_failed") from None
        if resp.status_code != 200:
            raise error_from(resp, "the token exchange at the identity provider", url)
        data = json_object(resp, "the token exchange response")
        jag = data.get("access_token")
        if not isinstance(jag, str) or data.get("issued_token_type") not in (None, TOKEN_TYPE_ID_JAG):
            raise OAuthError(f"the identity provider at {url} returned no ID-JAG", error="token_exchange_failed")
        return jag
