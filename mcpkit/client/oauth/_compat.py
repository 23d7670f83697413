"""The older spelling of ``OAuth(...)``: one flat keyword per option (``grant="client_credentials",
client_id=..., allow_private_network=True``...). Each keyword maps onto the option object it
belongs to (a grant, :class:`Registration`, :class:`Network`); mixing a keyword with the
object it belongs to is refused, so no option is silently dropped."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypedDict

from ._options import Network, Registration
from .grants import BY_NAME, Grant, TokenSource
from .grants._code import check_redirect_uri

if TYPE_CHECKING:
    import httpx

    from ._redirects import Authorizer


class LegacyKeywords(TypedDict, total=False):
    """The flat keywords of the older spelling (see the option objects for each one)."""

    # AuthorizationCode
    authorizer: Authorizer | None
    redirect_uri: str | None
    open_browser: bool
    request_refresh_tokens: bool
    # JWTBearer
    assertion: TokenSource | None
    assertion_file: str | os.PathLike[str] | None
    assertion_env: str | None
    # EnterpriseManaged
    idp_token_endpoint: str | None
    idp_id_token: TokenSource | None
    idp_client_id: str | None
    idp_client_secret: str | None
    # Registration
    client_id: str | None
    client_secret: str | None
    issuer: str | None
    token_endpoint_auth_method: str | None
    private_key: str | bytes | None
    signing_algorithm: str
    assertion_audience: str
    client_metadata_url: str | None
    client_name: str
    # Network
    timeout: float
    verify: bool
    http_client: httpx.AsyncClient | None
    allow_http: bool
    allow_private_network: bool
    allow_cross_origin_metadata: bool


_GRANT_KEYS = {
    "authorization_code": ("authorizer", "redirect_uri", "open_browser", "request_refresh_tokens"),
    "client_credentials": (),
    "jwt_bearer": ("assertion", "assertion_file", "assertion_env"),
    "enterprise": ("idp_token_endpoint", "idp_id_token", "idp_client_id", "idp_client_secret"),
}
_REGISTRATION_KEYS = frozenset(f.name for f in fields(Registration))
_NETWORK_KEYS = frozenset(f.name for f in fields(Network))
_ALL = frozenset(LegacyKeywords.__annotations__)


def _take(legacy: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {k: legacy.pop(k) for k in list(legacy) if k in keys}


def options(grant: Grant | str | None, registration: Registration | None, network: Network | None,
            keywords: Mapping[str, Any]) -> tuple[Grant, Registration, Network]:
    """The grant and option objects for ``OAuth(...)``'s arguments, old keywords folded in."""
    legacy = dict(keywords)
    unknown = sorted(set(legacy) - _ALL)
    if unknown:
        raise TypeError(f"OAuth() got an unexpected keyword argument {unknown[0]!r}")
    for given, keys, what in ((registration, _REGISTRATION_KEYS, "registration"), (network, _NETWORK_KEYS, "network")):
        clash = sorted(k for k in legacy if k in keys)
        if given is not None and clash:
            raise TypeError(f"OAuth(): give {what}= or {clash[0]}=, not both ({clash[0]} is a field of {what})")
    registration = registration if registration is not None else Registration(**_take(legacy, _REGISTRATION_KEYS))
    network = network if network is not None else Network(**_take(legacy, _NETWORK_KEYS))
    check_redirect_uri(legacy.get("redirect_uri"), allow_http=network.allow_http)
    if isinstance(grant, Grant):
        if legacy:
            raise TypeError(f"OAuth(): {sorted(legacy)[0]}= configures the grant: give it to the grant object")
        return grant, registration, network
    name = grant if grant is not None else "authorization_code"
    if name not in BY_NAME:
        raise ValueError(f"grant must be one of {', '.join(BY_NAME)}")
    own = {k: legacy[k] for k in _GRANT_KEYS[name] if k in legacy}  # the other grants' keywords do nothing
    return BY_NAME[name].from_keywords(own), registration, network
