"""The OAuth resource server side: protect an mcpkit HTTP server with access tokens.

One line for the common case (JWTs from one issuer, audience = this server's URL)::

    from mcpkit.auth.server import ResourceServerAuth

    server.run("http", auth=ResourceServerAuth(issuer="https://auth.example.com", scopes=["mcp:tools"]))

Names load lazily: importing this package loads neither httpx nor the JOSE library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ResourceServerAuth": "mcpkit.auth.server._gate",
    "metadata_url": "mcpkit.auth.server._gate",
    "JWTVerifier": "mcpkit.auth.server._jwt",
    "IntrospectionVerifier": "mcpkit.auth.server._introspection",
    "DPoPChecker": "mcpkit.auth.server._dpop",
    "ReplayCache": "mcpkit.auth.server._dpop",
    "Principal": "mcpkit.auth.server._principal",
    "TokenRequest": "mcpkit.auth.server._principal",
    "TokenVerifier": "mcpkit.auth.server._principal",
    "InvalidToken": "mcpkit.auth.server._principal",
    "ScopeRule": "mcpkit.auth.server._principal",
    "exact_scopes": "mcpkit.auth.server._principal",
    "hierarchical_scopes": "mcpkit.auth.server._principal",
    "build_auth_from_cli": "mcpkit.auth.server._cli",
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
