"""The OAuth client, along its flow: the hook (:class:`OAuth`), discovery, registration, one
object per grant, the token endpoint with its client authentication, DPoP state.

``mcpkit.auth`` is the public face of this package (``from mcpkit.auth import OAuth``). Names
load lazily: importing this package pulls in neither httpx nor the JOSE library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "OAuth": "mcpkit.client.oauth._hook",
    "OAuthError": "mcpkit.client.oauth._errors",
    "Grant": "mcpkit.client.oauth.grants",
    "AuthorizationCode": "mcpkit.client.oauth.grants",
    "ClientCredentials": "mcpkit.client.oauth.grants",
    "JWTBearer": "mcpkit.client.oauth.grants",
    "EnterpriseManaged": "mcpkit.client.oauth.grants",
    "Registration": "mcpkit.client.oauth._options",
    "Network": "mcpkit.client.oauth._options",
    "AuthorizationResponse": "mcpkit.client.oauth._redirects",
    "follow_redirects": "mcpkit.client.oauth._redirects",
    "TokenStorage": "mcpkit.client.oauth._storage",
    "InMemoryTokenStorage": "mcpkit.client.oauth._storage",
    "FileTokenStorage": "mcpkit.client.oauth._storage",
    "default_storage_dir": "mcpkit.client.oauth._storage",
    "LoopbackRedirect": "mcpkit.client.oauth._loopback",
    "WWWAuthenticate": "mcpkit.client.oauth._challenge",
    "parse_www_authenticate": "mcpkit.client.oauth._challenge",
    "canonical_resource": "mcpkit.client.oauth._discovery",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._challenge import WWWAuthenticate as WWWAuthenticate
    from ._challenge import parse_www_authenticate as parse_www_authenticate
    from ._discovery import canonical_resource as canonical_resource
    from ._errors import OAuthError as OAuthError
    from ._hook import OAuth as OAuth
    from ._loopback import LoopbackRedirect as LoopbackRedirect
    from ._options import Network as Network
    from ._options import Registration as Registration
    from ._redirects import AuthorizationResponse as AuthorizationResponse
    from ._redirects import follow_redirects as follow_redirects
    from ._storage import FileTokenStorage as FileTokenStorage
    from ._storage import InMemoryTokenStorage as InMemoryTokenStorage
    from ._storage import TokenStorage as TokenStorage
    from ._storage import default_storage_dir as default_storage_dir
    from .grants import AuthorizationCode as AuthorizationCode
    from .grants import ClientCredentials as ClientCredentials
    from .grants import EnterpriseManaged as EnterpriseManaged
    from .grants import Grant as Grant
    from .grants import JWTBearer as JWTBearer


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
