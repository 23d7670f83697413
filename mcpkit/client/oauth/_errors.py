"""The one error type of the OAuth client (defined in :mod:`mcpkit.errors`). Messages never
carry tokens or secrets."""

from __future__ import annotations

from ...errors import OAuthError as OAuthError

__all__ = ["OAuthError"]


