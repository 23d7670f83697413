"""JSON-RPC and MCP error codes, and the exception type that carries them.

``MCPKitError`` is the base of every exception mcpkit raises; it and the protocol layer's own
exceptions live here (not in :mod:`mcpkit.errors`, which re-exports them) so that the pure
protocol layer can use them.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: mcpkit's code for a request over its rate limit (``data.retryAfter``: seconds); HTTP answers it 429.
RATE_LIMITED = -32029
#: mcpkit's code for a tool call over its budget (``data.limit``: ``maxSeconds`` or ``maxBodyBytes``).
BUDGET_EXCEEDED = -32030
#: Legacy (2025-11-25 and earlier) "resource not found"; never emitted to modern clients.
LEGACY_RESOURCE_NOT_FOUND = -32002

#: The codes whose meaning is modern-only; a reply carrying one proves a modern peer.
MODERN_ERROR_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


class MCPKitError(Exception):
    """The base of every exception mcpkit raises on purpose."""


class MCPError(MCPKitError):
    """A JSON-RPC error: raised by handlers to answer with an error, and by clients on receipt."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object: ``code``, ``message`` and ``data`` when there is any."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r}, data={self.data!r})"


class InvalidMessage(MCPKitError):
    """Raised by :func:`mcpkit.protocol.codec.decode`: ``error`` is what to answer, ``id`` the
    request id if it was readable."""

    def __init__(self, error: MCPError, id: int | str | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.id = id


class InvalidHeaderAnnotation(MCPKitError, ValueError):
    """A tool's ``x-mcp-header`` annotations break the spec rules; the whole tool is invalid."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InsufficientScope(MCPKitError):
    """The authenticated caller's token lacks scopes one request needs (``scopes``, all of
    them). Raised by the server's entry for transports before anything runs; the transport
    answers it (HTTP: 403 with a challenge naming the scopes)."""

    def __init__(self, scopes: frozenset[str]) -> None:
        super().__init__(f"the access token lacks a scope this request needs: {' '.join(sorted(scopes))}")
        self.scopes = scopes


class RoutingError(MCPKitError):
    """The router was used out of order (after ``close()``, or a legacy session never bound).

    A programming error in the transport, not something a peer can cause. Once raised, the
    router stays in :attr:`StdioState.ERROR` and every later call raises again.
    """


def parse_error(detail: str = "") -> MCPError:
    return MCPError(PARSE_ERROR, f"Parse error: {detail}" if detail else "Parse error")


def invalid_request(detail: str) -> MCPError:
    return MCPError(INVALID_REQUEST, f"Invalid request: {detail}")


def method_not_found(method: str) -> MCPError:
    return MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")


def invalid_params(message: str, data: Any = None) -> MCPError:
    return MCPError(INVALID_PARAMS, message, data)


class ResourceNotFound(MCPError):
    """-32602 with ``data.uri`` (2026-07-28); legacy sessions answer it as -32002."""

    def __init__(self, uri: str) -> None:
        super().__init__(INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        self.uri = uri


def internal_error(message: str = "Internal error") -> MCPError:
    return MCPError(INTERNAL_ERROR, message)


def header_mismatch(message: str) -> MCPError:
    return MCPError(HEADER_MISMATCH, message)


def unsupported_version(requested: str, supported: list[str] | tuple[str, ...]) -> MCPError:
    return MCPError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}; supported: {', '.join(supported)}",
        {"supported": list(supported), "requested": requested},
    )


def initialize_refused(params: Any, supported: list[str] | tuple[str, ...]) -> MCPError:
    """The answer of a 2026-07-28-only server to ``initialize`` (``params``: its raw params)."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    exc = unsupported_version(str(requested or "unknown"), supported)
    exc.message = (f"This server speaks only stateless MCP ({', '.join(supported)}): "
                   "there is no initialize handshake; send server/discover with params._meta")
    return exc


def missing_capability(required: dict[str, Any]) -> MCPError:
    names = ", ".join(sorted(required))
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"This request needs client capabilities the request did not declare: {names}",
        {"requiredCapabilities": required},
    )
