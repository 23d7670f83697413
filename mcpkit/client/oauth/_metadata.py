"""Discovery: the protected resource metadata (RFC 9728) and the authorization server
metadata (RFC 8414 / OpenID Connect Discovery), fetched from the locations of
:mod:`._discovery` and checked: the resource must name this MCP server, the issuer must be
the one asked for, every URL must pass the URL rules before it is contacted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _discovery as D
from . import _urls as U
from ._errors import OAuthError
from ._urlguard import check_url
from ._wire import documents, short

if TYPE_CHECKING:
    import httpx

    from ._challenge import WWWAuthenticate

#: The endpoints of the authorization server metadata that must be strings and pass the URL rules.
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "registration_endpoint")


class Discovery:
    def __init__(self, server_url: str, policy: U.UrlPolicy) -> None:
        self.server_url = server_url
        self.policy = policy

    async def discover(self, http: httpx.AsyncClient,
                       challenge: WWWAuthenticate) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """Protected resource metadata (None when the server has none: the 2025-03-26 way),
        then the authorization server's metadata, both validated; its endpoints checked."""
        prm = await self.resource_metadata(http, challenge)
        if prm is None:
            # 2025-03-26: no resource metadata; the MCP server's origin is the authorization server.
            issuer = D.legacy_endpoints(self.server_url)["issuer"]
            meta = await self.authorization_server(http, issuer, legacy=True)
        else:
            servers = prm.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
                raise OAuthError(f"the protected resource metadata of {self.server_url} names no authorization server",
                                 error="invalid_metadata")
            meta = await self.authorization_server(http, servers[0], legacy=False)
        for key in ENDPOINTS:
            if isinstance(meta.get(key), str):
                await check_url(meta[key], U.NAMED, self.policy, f"the authorization server's {key}")
        return prm, meta

    async def resource_metadata(self, http: httpx.AsyncClient, challenge: WWWAuthenticate) -> dict[str, Any] | None:
        problems: list[str] = []
        if challenge.resource_metadata:
            await check_url(challenge.resource_metadata, U.RESOURCE_METADATA, self.policy,
                            "the challenge's resource_metadata")
        urls = D.prm_urls(self.server_url, challenge.resource_metadata)
        async for url, prm in documents(http, urls, "the protected resource metadata", problems):
            resource = prm.get("resource")
            if not isinstance(resource, str) or not D.resource_covers(resource, self.server_url):
                raise OAuthError(f"the protected resource metadata at {url} is for {short(resource)!s}, not for "
                                 f"{self.server_url}: refusing to authorize", error="resource_mismatch")
            return prm
        if problems:
            hint = " (and the WWW-Authenticate header did not parse)" if challenge.malformed else ""
            raise OAuthError(f"no usable protected resource metadata for {self.server_url}{hint}: "
                             + "; ".join(problems), error="discovery_failed")
        return None

    async def authorization_server(self, http: httpx.AsyncClient, issuer: str, *, legacy: bool) -> dict[str, Any]:
        problems: list[str] = []
        await check_url(issuer, U.NAMED, self.policy, "the authorization server")
        async for url, meta in documents(http, D.as_metadata_urls(issuer), "the authorization server metadata",
                                         problems):
            if meta.get("issuer") != issuer:
                raise OAuthError(f"the authorization server metadata at {url} names issuer "
                                 f"{short(meta.get('issuer'))!s}, not {issuer}: refusing to use it",
                                 error="issuer_mismatch")
            for key in ENDPOINTS:
                if key in meta and not isinstance(meta[key], str):
                    raise OAuthError(f"the authorization server metadata at {url} has a bad {key}",
                                     error="invalid_metadata")
            return meta
        if legacy and not problems:
            return D.legacy_endpoints(self.server_url)
        raise OAuthError(f"no usable authorization server metadata for {issuer}"
                         + (": " + "; ".join(problems) if problems else " (none of the well-known URLs answered)"),
                         error="discovery_failed")
