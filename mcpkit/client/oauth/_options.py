"""The option objects of :class:`~mcpkit.auth.OAuth`: who the client is at the authorization
server (:class:`Registration`) and how it reaches the network and which URLs it trusts
(:class:`Network`). Plain values; secrets stay out of their ``repr``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ._urls import UrlPolicy

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class Registration:
    """The client's registration with the authorization server.

    Pre-registered: ``client_id`` with ``client_secret`` (``client_secret_basic`` or
    ``client_secret_post``, whichever the server supports, unless
    ``token_endpoint_auth_method`` names one) or ``private_key`` (PEM; ``private_key_jwt``
    signed with ``signing_algorithm``, ES256 or RS256, for the audience
    ``assertion_audience``: "issuer" (RFC 7523bis, the default), "token_endpoint" (RFC
    7523's example; some providers want it) or a literal value). These credentials are bound
    to the authorization server ``issuer``: they are never sent to another one (the token
    store remembers the binding, so later runs may omit ``issuer``); a secret or key with no
    issuer given or remembered is refused (``issuer_required``), a public ``client_id`` alone
    is bound to the first authorization server it is used with.

    Without a ``client_id`` the client registers itself: with its Client ID Metadata
    Document at ``client_metadata_url`` (an https URL with a path) when the server supports
    those, else by dynamic client registration (RFC 7591) as ``client_name``.
    """

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    issuer: str | None = None
    private_key: str | bytes | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"
    token_endpoint_auth_method: str | None = None
    assertion_audience: str = "issuer"
    client_metadata_url: str | None = None
    client_name: str = "mcpkit"

    def __post_init__(self) -> None:
        if self.client_metadata_url is not None:
            p = urlsplit(self.client_metadata_url)
            if p.scheme != "https" or p.path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")

    @property
    def confidential(self) -> bool:
        """A secret or a private key: the credentials must not reach another server."""
        return bool(self.client_secret or self.private_key)


@dataclass(frozen=True)
class Network:
    """How the OAuth client reaches its servers, and which URLs it trusts.

    ``timeout`` and ``verify`` apply to its own HTTP client; ``http_client`` is a caller's
    ``httpx.AsyncClient`` to use instead (used, never closed). URLs a server names are
    checked before they are contacted: https only (plain http only to loopback hosts, or
    with ``allow_http``, never outside a lab: tokens and codes would travel in clear); the
    challenge's ``resource_metadata`` only on the MCP server's origin unless
    ``allow_cross_origin_metadata``; loopback only when the MCP server is on loopback, and
    private, link-local or other non-public addresses (literal, or what a name resolves to)
    only with ``allow_private_network``.
    """

    timeout: float = 30.0
    verify: bool = True
    http_client: httpx.AsyncClient | None = None
    allow_http: bool = False
    allow_private_network: bool = False
    allow_cross_origin_metadata: bool = False

    def policy(self, server_url: str) -> UrlPolicy:
        """The URL rules for the MCP server at ``server_url``."""
        return UrlPolicy(server_url, self.allow_http, self.allow_private_network, self.allow_cross_origin_metadata)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        """The HTTP client for one step: the caller's, or a fresh one closed afterwards."""
        if self.http_client is not None:  # the caller's pool: used, never closed here
            yield self.http_client
            return
        import httpx

        async with httpx.AsyncClient(timeout=self.timeout, verify=self.verify, follow_redirects=False,
                                     headers={"Accept": "application/json"}) as http:
            yield http
