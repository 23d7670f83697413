"""The refresh token grant (RFC 6749 §6): new tokens for the same resource, before the old
ones expire or once after a 401. A server that issues no new refresh token leaves the old
one in force."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._token import TokenEndpoint


class RefreshToken:
    name = "refresh_token"

    @staticmethod
    def form(tokens: Mapping[str, Any]) -> dict[str, str]:
        form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        if tokens.get("resource"):
            form["resource"] = tokens["resource"]
        return form

    async def obtain(self, endpoint: TokenEndpoint, meta: Mapping[str, Any], client: Mapping[str, Any],
                     tokens: Mapping[str, Any]) -> dict[str, Any]:
        new = await endpoint.request(meta, self.form(tokens), client)
        if not new.get("refresh_token"):
            new["refresh_token"] = tokens["refresh_token"]
        return new
