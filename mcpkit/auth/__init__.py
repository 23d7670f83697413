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
    "OAuth": "mcpkit.auth._oauth",
    "OAuthError": "mcpkit.auth._errors",
    "AuthorizationResponse": "mcpkit.auth._redirects",
    "follow_redirects": "mcpkit.auth._redirects",
    "TokenStorage": "mcpkit.auth._storage",
    "InMemoryTokenStorage": "mcpkit.auth._storage",
    "FileTokenStorage": "mcpkit.auth._storage",
    "default_storage_dir": "mcpkit.auth._storage",
    "LoopbackRedirect": "mcpkit.auth._loopback",
    "WWWAuthenticate": "mcpkit.auth._challenge",
    "parse_www_authenticate": "mcpkit.auth._challenge",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._challenge import WWWAuthenticate as WWWAuthenticate
    from ._challenge import parse_www_authenticate as parse_www_authenticate
    from ._errors import OAuthError as OAuthError
    from ._loopback import LoopbackRedirect as LoopbackRedirect
    from ._oauth import OAuth as OAuth
    from ._redirects import AuthorizationResponse as AuthorizationResponse
    from ._redirects import follow_redirects as follow_redirects
    from ._storage import FileTokenStorage as FileTokenStorage
    from ._storage import InMemoryTokenStorage as InMemoryTokenStorage
    from ._storage import TokenStorage as TokenStorage
    from ._storage import default_storage_dir as default_storage_dir


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
