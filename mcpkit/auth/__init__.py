"""OAuth 2.1 authorization for mcpkit's client (the MCP authorization spec, 2026-07-28 and
2025-11-25, plus the auth extensions: client credentials, enterprise-managed authorization,
DPoP and workload identity federation).

Use it through the client's auth hook::

    from mcpkit import Client as Client
    from mcpkit.auth import OAuth as OAuth

    async with Client(url, auth=OAuth(url)) as client: ...

Names load lazily: ``import mcpkit.auth`` pulls in neither httpx nor the JOSE library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports as _lazy_exports

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
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ..client.oauth._challenge import WWWAuthenticate as WWWAuthenticate
    from ..client.oauth._challenge import parse_www_authenticate as parse_www_authenticate
    from ..client.oauth._errors import OAuthError as OAuthError
    from ..client.oauth._hook import OAuth as OAuth
    from ..client.oauth._loopback import LoopbackRedirect as LoopbackRedirect
    from ..client.oauth._options import Network as Network
    from ..client.oauth._options import Registration as Registration
    from ..client.oauth._redirects import AuthorizationResponse as AuthorizationResponse
    from ..client.oauth._redirects import follow_redirects as follow_redirects
    from ..client.oauth._storage import FileTokenStorage as FileTokenStorage
    from ..client.oauth._storage import InMemoryTokenStorage as InMemoryTokenStorage
    from ..client.oauth._storage import TokenStorage as TokenStorage
    from ..client.oauth._storage import default_storage_dir as default_storage_dir
    from ..client.oauth.grants import AuthorizationCode as AuthorizationCode
    from ..client.oauth.grants import ClientCredentials as ClientCredentials
    from ..client.oauth.grants import EnterpriseManaged as EnterpriseManaged
    from ..client.oauth.grants import Grant as Grant
    from ..client.oauth.grants import JWTBearer as JWTBearer


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
