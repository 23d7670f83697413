"""The authorization response (the redirect's parameters) and the headless authorizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urljoin, urlsplit

from ._errors import OAuthError

if TYPE_CHECKING:
    import httpx

#: ``authorizer(authorization_url, redirect_uri)`` → the URL the user agent was redirected to.
Authorizer = Callable[[str, str], Awaitable[str]]


@dataclass
class AuthorizationResponse:
    """The parameters the authorization server put on the redirect URI."""

    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None

    @classmethod
    def from_url(cls, url: str) -> AuthorizationResponse:
        query = parse_qs(urlsplit(url).query, keep_blank_values=True)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        return cls(one("code"), one("state"), one("iss"), one("error"), one("error_description"))


def follow_redirects(*, max_hops: int = 10, verify: bool = True,
                     http_client: httpx.AsyncClient | None = None) -> Authorizer:
    """A headless authorizer: GET the authorization URL and follow redirects until one points
    at the redirect URI (for authorization servers that approve without a person, e.g. test
    servers). Anything else than a redirect is an :class:`OAuthError`."""

    async def authorize(url: str, redirect_uri: str) -> str:
        import httpx

        target = redirect_uri.split("?", 1)[0]
        async with httpx.AsyncClient(follow_redirects=False, verify=verify, timeout=30.0) as own:
            http = http_client if http_client is not None else own
            for _ in range(max_hops):
                resp = await http.get(url, follow_redirects=False)
                location = resp.headers.get("location")
                if resp.status_code in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)
                    if url.split("?", 1)[0] == target:
                        return url
                    continue
                raise OAuthError(f"the authorization endpoint answered HTTP {resp.status_code} instead of redirecting "
                                 "back (it needs a person: use the interactive login)", error="interaction_required")
        raise OAuthError(f"more than {max_hops} redirects from the authorization endpoint", error="too_many_redirects")

    return authorize
