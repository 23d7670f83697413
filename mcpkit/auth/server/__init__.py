"""The OAuth resource server, under its public name: protect an mcpkit HTTP server with access tokens.

The code lives in :mod:`mcpkit.server.auth` (beside the server it guards); this package
re-exports its public names, lazily, so ``from mcpkit.auth.server import ResourceServerAuth``
keeps working and importing this package loads neither httpx nor the JOSE library::

    from mcpkit.auth.server import ResourceServerAuth

    server.run("http", auth=ResourceServerAuth(issuer="https://auth.example.com", scopes=["mcp:tools"]))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports as _lazy_exports

_NAMES = ("ResourceServerAuth", "metadata_url", "JWTVerifier", "IntrospectionVerifier", "DPoPChecker", "ReplayCache",
          "Principal", "TokenRequest", "TokenVerifier", "InvalidToken", "ScopeRule", "exact_scopes",
          "hierarchical_scopes", "build_auth_from_cli")
#: Each name is the attribute of the same name of ``mcpkit.server.auth`` (itself lazy).
_EXPORTS = dict.fromkeys(_NAMES, "mcpkit.server.auth")

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from ...server.auth import DPoPChecker as DPoPChecker
    from ...server.auth import IntrospectionVerifier as IntrospectionVerifier
    from ...server.auth import InvalidToken as InvalidToken
    from ...server.auth import JWTVerifier as JWTVerifier
    from ...server.auth import Principal as Principal
    from ...server.auth import ReplayCache as ReplayCache
    from ...server.auth import ResourceServerAuth as ResourceServerAuth
    from ...server.auth import ScopeRule as ScopeRule
    from ...server.auth import TokenRequest as TokenRequest
    from ...server.auth import TokenVerifier as TokenVerifier
    from ...server.auth import build_auth_from_cli as build_auth_from_cli
    from ...server.auth import exact_scopes as exact_scopes
    from ...server.auth import hierarchical_scopes as hierarchical_scopes
    from ...server.auth import metadata_url as metadata_url


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
