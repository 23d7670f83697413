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

_NAMES = ("OAuth", "OAuthError", "Grant", "AuthorizationCode", "ClientCredentials", "JWTBearer", "EnterpriseManaged",
          "Registration", "Network", "AuthorizationResponse", "follow_redirects", "TokenStorage",
          "InMemoryTokenStorage", "FileTokenStorage", "default_storage_dir", "LoopbackRedirect", "WWWAuthenticate",
          "parse_www_authenticate")
#: Each name is the attribute of the same name of ``mcpkit.client.oauth`` (itself lazy).
_EXPORTS = dict.fromkeys(_NAMES, "mcpkit.client.oauth")

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ..client.oauth import AuthorizationCode as AuthorizationCode
    from ..client.oauth import AuthorizationResponse as AuthorizationResponse
    from ..client.oauth import ClientCredentials as ClientCredentials
    from ..client.oauth import EnterpriseManaged as EnterpriseManaged
    from ..client.oauth import FileTokenStorage as FileTokenStorage
    from ..client.oauth import Grant as Grant
    from ..client.oauth import InMemoryTokenStorage as InMemoryTokenStorage
    from ..client.oauth import JWTBearer as JWTBearer
    from ..client.oauth import LoopbackRedirect as LoopbackRedirect
    from ..client.oauth import Network as Network
    from ..client.oauth import OAuth as OAuth
    from ..client.oauth import OAuthError as OAuthError
    from ..client.oauth import Registration as Registration
    from ..client.oauth import TokenStorage as TokenStorage
    from ..client.oauth import WWWAuthenticate as WWWAuthenticate
    from ..client.oauth import default_storage_dir as default_storage_dir
    from ..client.oauth import follow_redirects as follow_redirects
    from ..client.oauth import parse_www_authenticate as parse_www_authenticate


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
