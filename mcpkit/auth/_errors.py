"""The one error type of the OAuth client. Messages never carry tokens or secrets."""

from __future__ import annotations

from ..errors import MCPKitError


class OAuthError(MCPKitError):
    """Authorization could not be obtained: discovery, registration, the authorization
    response or a token request failed. ``error`` is the OAuth error code when a server gave
    one (``invalid_grant``...), else a short local code (``discovery_failed``...).
    ``description`` is the authorization server's ``error_description`` as it came (data
    from a server: sanitize it before printing it on a terminal)."""

    def __init__(self, message: str, *, error: str = "oauth_error", status: int | None = None,
                 description: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.status = status
        self.description = description
