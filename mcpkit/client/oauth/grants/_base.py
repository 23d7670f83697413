"""What every grant is given, and what it gives back: the token response of its token
request (see :class:`Grant`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .._errors import OAuthError

if TYPE_CHECKING:
    import httpx

    from .._options import Network, Registration
    from .._registration import Clients
    from .._token import TokenEndpoint
    from .._urls import UrlPolicy

#: A token source: a string, or a (sync or async) callable returning one.
TokenSource = str | Callable[[], "str | Awaitable[str]"]


async def resolve(source: TokenSource) -> str:
    """The token a source gives (stripped), else :class:`OAuthError` (``invalid_assertion``)."""
    value = source() if callable(source) else source
    if not isinstance(value, str):
        value = await value
    if not isinstance(value, str) or not value.strip():
        raise OAuthError("the token source gave no token", error="invalid_assertion")
    return value.strip()


def scoped(form: dict[str, str], scopes: list[str], resource: str | None) -> dict[str, str]:
    """``form`` with the requested ``scope`` and the ``resource`` indicator (RFC 8707)."""
    if scopes:
        form["scope"] = " ".join(scopes)
    if resource:
        form["resource"] = resource
    return form


@dataclass
class GrantContext:
    """One authorization: the authorization server (``meta``, validated), the resource and
    scopes to ask for, and the steps a grant uses (registration, the token endpoint)."""

    http: httpx.AsyncClient
    meta: Mapping[str, Any]
    resource: str | None
    scopes: list[str]
    clients: Clients
    endpoint: TokenEndpoint
    policy: UrlPolicy
    #: The tokens held now (where a pre-registered client's binding may be remembered).
    tokens: Mapping[str, Any] | None = None

    def client(self) -> dict[str, Any]:
        """The known client record (pre-registered or kept), or none (``{}``) for grants that
        need no registration."""
        return self.clients.record(self.meta, self.tokens) or {}

    async def token(self, form: dict[str, str], client: Mapping[str, Any]) -> dict[str, Any]:
        return await self.endpoint.request(self.meta, form, client)


class Grant:
    """One way of getting tokens. Subclasses set :attr:`name` and implement :meth:`obtain`."""

    #: The grant's name (the ``grant=`` string of the older spelling).
    name: ClassVar[str]
    #: The extension to declare in the client's capabilities (when its document asks for one).
    extension: ClassVar[str | None] = None

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> Grant:
        """The grant from the older spelling's flat keywords (its own ones only)."""
        return cls(**keywords)

    @property
    def offline_access(self) -> bool:
        """Add ``offline_access`` to the scopes when the authorization server offers it."""
        return False

    def validate(self, registration: Registration, network: Network) -> None:
        """Raise ValueError when this grant cannot work with these options."""

    def check_urls(self, policy: UrlPolicy) -> None:
        """Check the URLs this grant was configured with (before anything is sent)."""

    async def obtain(self, ctx: GrantContext) -> dict[str, Any]:
        """Run the grant; the token response (errors surface as :class:`OAuthError`: never
        retried, never another grant)."""
        raise NotImplementedError
