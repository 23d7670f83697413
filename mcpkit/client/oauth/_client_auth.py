"""Client authentication at the token endpoint (RFC 6749 §2.3, RFC 7523 §2.2), one strategy
per method: ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` and
``none`` (a public client names itself). Each adds its part to one request's form and
headers; :func:`choose` picks the strategy for a client record and an authorization server."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol
from urllib.parse import quote

from ._errors import OAuthError

if TYPE_CHECKING:
    from ._options import Registration

ASSERTION_TYPE_JWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: The methods this client implements.
METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")


def basic(client_id: str, secret: str) -> str:
    """``client_secret_basic`` (RFC 6749 §2.3.1: form-encode each part, then Base64)."""
    raw = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


class ClientAuth(Protocol):
    method: ClassVar[str]

    def apply(self, form: dict[str, str], headers: dict[str, str], meta: Mapping[str, Any]) -> None:
        """Authenticate one request (called per attempt: an assertion is never reused)."""


@dataclass
class NoClientAuth:
    """``none``: a public client sends only its ``client_id``."""

    method: ClassVar[str] = "none"
    client_id: str

    def apply(self, form: dict[str, str], headers: dict[str, str], meta: Mapping[str, Any]) -> None:
        form["client_id"] = self.client_id


@dataclass
class ClientSecretBasic:
    method: ClassVar[str] = "client_secret_basic"
    client_id: str
    secret: str = field(repr=False)

    def apply(self, form: dict[str, str], headers: dict[str, str], meta: Mapping[str, Any]) -> None:
        headers["Authorization"] = basic(self.client_id, self.secret)


@dataclass
class ClientSecretPost:
    method: ClassVar[str] = "client_secret_post"
    client_id: str
    secret: str = field(repr=False)

    def apply(self, form: dict[str, str], headers: dict[str, str], meta: Mapping[str, Any]) -> None:
        form["client_id"] = self.client_id
        form["client_secret"] = self.secret


@dataclass
class PrivateKeyJwt:
    """A fresh signed assertion per request; ``audience`` is "issuer", "token_endpoint" or a
    literal value."""

    method: ClassVar[str] = "private_key_jwt"
    client_id: str
    private_key: str | bytes = field(repr=False)
    algorithm: str = "ES256"
    audience: str = "issuer"

    def apply(self, form: dict[str, str], headers: dict[str, str], meta: Mapping[str, Any]) -> None:
        from ._jose import client_assertion, load_private_key

        key = load_private_key(self.private_key, self.algorithm)
        form["client_id"] = self.client_id
        form["client_assertion_type"] = ASSERTION_TYPE_JWT
        audience = {"issuer": meta.get("issuer"), "token_endpoint": meta.get("token_endpoint")}.get(
            self.audience, self.audience)
        form["client_assertion"] = client_assertion(key, self.algorithm, self.client_id, str(audience))


def choose(client: Mapping[str, Any], meta: Mapping[str, Any], registration: Registration) -> ClientAuth | None:
    """The strategy for ``client`` (a client record) at the authorization server ``meta``:
    the record's ``token_endpoint_auth_method`` when it names one; else ``private_key_jwt``
    for the pre-registered client with a private key, a secret's method among those the server supports
    (``client_secret_basic`` first), or ``none``. None when there is no client id."""
    client_id = client.get("client_id")
    if not client_id:
        return None
    client_id = str(client_id)
    secret = client.get("client_secret")
    method = client.get("token_endpoint_auth_method")
    if method is None:
        supported = meta.get("token_endpoint_auth_methods_supported")
        supported = supported if isinstance(supported, list) and supported else ["client_secret_basic"]
        if registration.private_key is not None and client_id == registration.client_id:
            method = "private_key_jwt"
        elif secret:
            if "client_secret_basic" in supported:
                method = "client_secret_basic"
            elif "client_secret_post" in supported:
                method = "client_secret_post"
            else:
                method = "none" if "none" in supported else "client_secret_basic"
        else:
            method = "none"
    if method == "client_secret_basic" and secret:
        return ClientSecretBasic(client_id, str(secret))
    if method == "client_secret_post" and secret:
        return ClientSecretPost(client_id, str(secret))
    if method == "private_key_jwt":
        if registration.private_key is None:
            raise OAuthError("private_key_jwt needs private_key", error="invalid_client")
        return PrivateKeyJwt(client_id, registration.private_key, registration.signing_algorithm,
                             registration.assertion_audience)
    return NoClientAuth(client_id)
