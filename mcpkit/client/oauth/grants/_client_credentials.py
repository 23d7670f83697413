"""The client credentials grant (RFC 6749 §4.4; the MCP extension
``io.modelcontextprotocol/oauth-client-credentials``): the client acts on its own behalf
with its pre-registered credentials, no person involved."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Grant, GrantContext, scoped

if TYPE_CHECKING:
    from .._options import Network, Registration


class ClientCredentials(Grant):
    """Needs ``Registration(client_id=..., client_secret=...)`` (or ``private_key=``)."""

    name = "client_credentials"
    extension = "io.modelcontextprotocol/oauth-client-credentials"

    def __repr__(self) -> str:
        return "ClientCredentials()"

    def validate(self, registration: Registration, network: Network) -> None:
        if not registration.client_id:
            raise ValueError("the client_credentials grant needs client_id (and client_secret or private_key)")

    async def obtain(self, ctx: GrantContext) -> dict[str, Any]:
        client = ctx.client()  # raises when the credentials belong elsewhere
        return await ctx.token(scoped({"grant_type": "client_credentials"}, ctx.scopes, ctx.resource), client)
