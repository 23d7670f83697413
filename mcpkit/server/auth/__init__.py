"""The OAuth resource server side: protect an mcpkit HTTP server with access tokens.

One line for the common case (JWTs from one issuer, audience = this server's URL)::

    from mcpkit.auth.server import ResourceServerAuth

    server.run("http", auth=ResourceServerAuth(issuer="https://auth.example.com", scopes=["mcp:tools"]))

Names load lazily: importing this package loads neither httpx nor the JOSE library. The
public spelling is ``mcpkit.auth.server`` (a re-export of this package); ``mcpkit.server``
never imports it unless a name from it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ResourceServerAuth": "mcpkit.server.auth._gate",
    "metadata_url": "mcpkit.server.auth._gate",
    "JWTVerifier": "mcpkit.server.auth._jwt",
    "IntrospectionVerifier": "mcpkit.server.auth._introspection",
    "DPoPChecker": "mcpkit.server.auth._dpop",
    "ReplayCache": "mcpkit.server.auth._dpop",
    "Principal": "mcpkit.server.auth._principal",
    "TokenRequest": "mcpkit.server.auth._principal",
    "TokenVerifier": "mcpkit.server.auth._principal",
    "InvalidToken": "mcpkit.server.auth._principal",
    "ScopeRule": "mcpkit.server.auth._principal",
    "exact_scopes": "mcpkit.server.auth._principal",
    "hierarchical_scopes": "mcpkit.server.auth._principal",
    "build_auth_from_cli": "mcpkit.server.auth._cli",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ._cli import build_auth_from_cli as build_auth_from_cli
    from ._dpop import DPoPChecker as DPoPChecker
    from ._dpop import ReplayCache as ReplayCache
    from ._gate import ResourceServerAuth as ResourceServerAuth
    from ._gate import metadata_url as metadata_url
    from ._introspection import IntrospectionVerifier as IntrospectionVerifier
    from ._jwt import JWTVerifier as JWTVerifier
    from ._principal import InvalidToken as InvalidToken
    from ._principal import Principal as Principal
    from ._principal import ScopeRule as ScopeRule
    from ._principal import TokenRequest as TokenRequest
    from ._principal import TokenVerifier as TokenVerifier
    from ._principal import exact_scopes as exact_scopes
    from ._principal import hierarchical_scopes as hierarchical_scopes


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
