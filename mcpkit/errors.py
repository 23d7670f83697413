"""Every public exception of mcpkit, in one place.

``MCPKitError`` is the base. ``MCPError`` is a JSON-RPC error (raised by handlers to answer
with one, and by the client when a server answers with one). ``ToolError`` is a tool's own
failure, reported to the model as ``isError: true``. ``TransportError`` and its subclasses
are local failures: the connection, the process, or an answer that is not MCP at all.
``ServerLoadError`` says in one line why a server file could not be loaded.

The other classes belong to one part of mcpkit each (the OAuth client, the resource
server, the Redis backend, the command line...) and are also importable from there. This
module imports the standard library only: catching an error never loads its subsystem.
(:class:`mcpkit.server.InputRequired` is not here: it is a ``BaseException`` that unwinds a
handler, so that a handler's ``except Exception`` cannot swallow it.)
"""

from __future__ import annotations

from typing import Any

from .protocol.errors import (
    BUDGET_EXCEEDED,
    INTERNAL_ERROR,
    RATE_LIMITED,
    InvalidHeaderAnnotation,
    InvalidMessage,
    MCPError,
    MCPKitError,
    ResourceNotFound,
    RoutingError,
)

__all__ = [
    "BackendUnavailable", "BudgetExceeded", "CliError", "HttpStatusError", "InvalidHeaderAnnotation", "InvalidMessage",
    "InvalidToken", "LifespanError",
    "MCPError", "MCPKitError", "MalformedJWS", "NoAnswer", "OAuthError", "ProtocolError", "RateLimited", "RequestNotRetried",
    "ResourceNotFound", "ResponseTooLarge", "RoutingError", "ServerLoadError", "SkillVerificationError", "StateError",
    "TaskCancelled", "ToolError",
    "TransportClosed", "TransportError", "WeakKeyError",
]


class ToolError(MCPKitError):
    """Raise inside a tool to report a failure the model should see (``isError: true``)."""


# ====================================================================== client transports
class TransportError(MCPKitError):
    """A local failure (the server went away, a timeout): never a JSON-RPC error from the peer."""


class TransportClosed(TransportError):
    """The connection or the server process is gone."""


class ProtocolError(TransportError):
    """The peer sent something that is not a valid answer to our request."""


class HttpStatusError(TransportError):
    """An HTTP answer that carries no JSON-RPC message (e.g. a plain 404 or 502)."""

    def __init__(self, status: int, message: str, body: bytes = b"", headers: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        #: The response headers (a case-insensitive mapping), when the transport has them.
        self.headers = headers


class ResponseTooLarge(ProtocolError):
    """An HTTP answer longer than the client's ``max_response_bytes``: a JSON body, or one line
    or event of an SSE stream. Nothing past the limit was read; the connection was closed."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        #: The limit that was exceeded, in bytes.
        self.limit = limit


class ServerLoadError(MCPKitError):
    """A server could not be loaded from ``FILE.py[:attr]`` or ``module[:attr]`` (``mcpkit serve``):
    the message is one line saying why (the original exception is its ``__cause__``)."""


class NoAnswer(TransportError):
    """No answer within the request's time limit."""


class RequestNotRetried(TransportClosed):
    """The server died while handling a request that may not be safe to repeat; it was not re-sent."""


# ====================================================================== client
class TaskCancelled(MCPKitError):
    """The task ended ``cancelled`` (by :meth:`~mcpkit.client.TaskHandle.cancel` or by the server)."""


class SkillVerificationError(MCPKitError):
    """A skill's content is not what its entry describes (size, digest, frontmatter, an unlisted
    file), or the entry itself breaks the rules: the skill is not loaded (skills extension)."""


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


# ====================================================================== server
class InvalidToken(MCPKitError):
    """The token is not acceptable: 401 with ``error="invalid_token"`` (or ``error`` given).

    ``description`` goes into the challenge's ``error_description``: keep it generic, it
    never contains the token.
    """

    def __init__(self, description: str = "the access token is invalid", *, error: str = "invalid_token",
                 dpop_nonce: str | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.error = error
        #: A fresh DPoP nonce to send with the answer (``use_dpop_nonce``).
        self.dpop_nonce = dpop_nonce


class MalformedJWS(MCPKitError, ValueError):
    """Not a well-formed compact JWS (or over a limit)."""


class WeakKeyError(MCPKitError, ValueError):
    """A state key that is not at least 32 random bytes; ``str(exc)`` is one line saying what to do."""


class StateError(MCPKitError):
    """requestState failed verification; ``str(exc)`` is the reason for the log."""


class BackendUnavailable(MCPError):
    """Redis cannot be reached: the work that needs it is refused (JSON-RPC -32603)."""

    def __init__(self, what: str = "this request") -> None:
        super().__init__(INTERNAL_ERROR,
                         f"The shared backend (Redis) is unavailable, so {what} cannot be served now; retry shortly")


# ====================================================================== command line
class CliError(MCPKitError):
    """A failure already worded for the user (one line); ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class RateLimited(MCPError):
    """A request over its rate limit (JSON-RPC ``-32029``; ``data.retryAfter`` in seconds).
    Over HTTP it is answered 429 with ``Retry-After``; on stdio it is the JSON-RPC error alone."""

    def __init__(self, retry_after: float, rule: str) -> None:
        import math

        self.retry_after = retry_after
        self.rule = rule
        seconds = max(1, math.ceil(retry_after))
        super().__init__(RATE_LIMITED, f"Rate limit exceeded ({rule}); retry after {seconds} s",
                         {"retryAfter": seconds, "limit": rule})


class BudgetExceeded(MCPError):
    """A tool call over its budget (JSON-RPC ``-32030``): its arguments were larger than
    ``maxBodyBytes``, or it ran longer than ``maxSeconds`` (it was cancelled then).
    ``data``: ``{"limit": "maxSeconds" | "maxBodyBytes", "value": THE_LIMIT, "tool": NAME}``."""

    def __init__(self, limit: str, value: float, tool: str | None) -> None:
        self.limit = limit
        self.value = value
        what = (f"ran longer than its budget of {value:g} s and was cancelled" if limit == "maxSeconds"
                else f"arguments larger than its budget of {int(value)} bytes")
        super().__init__(BUDGET_EXCEEDED, f"Tool {tool or '?'}: {what}",
                         {"limit": limit, "value": value, "tool": tool})


# ====================================================================== operating a server
class LifespanError(MCPKitError):
    """A server's ``lifespan`` failed at startup (the cause is chained); nothing was served.

    ``mcpkit serve`` and ``server.run()`` say it in one line and exit nonzero."""
