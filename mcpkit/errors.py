"""Every public exception of mcpkit, in one place.

``MCPKitError`` is the base. ``MCPError`` is a JSON-RPC error (raised by handlers to answer
with one, and by the client when a server answers with one). ``ToolError`` is a tool's own
failure, reported to the model as ``isError: true``. ``TransportError`` and its subclasses
are local failures: the connection, the process, or an answer that is not MCP at all.
``ServerLoadError`` says in one line why a server file could not be loaded.
"""

from __future__ import annotations

from typing import Any

from .protocol.errors import MCPError, MCPKitError, ResourceNotFound

__all__ = [
    "HttpStatusError", "MCPError", "MCPKitError", "ProtocolError", "ResourceNotFound", "ResponseTooLarge", "ServerLoadError",
    "ToolError", "TransportClosed", "TransportError",
]


class ToolError(MCPKitError):
    """Raise inside a tool to report a failure the model should see (``isError: true``)."""


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
