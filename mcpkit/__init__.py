"""mcpkit: the Model Context Protocol (2026-07-28, stateless; 2025-11-25 legacy) for Python.

Public names are loaded lazily, so ``import mcpkit`` costs almost nothing and never pulls
in the HTTP stack or the client unless they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _lean_msgspec
from ._lazy import lazy_exports as _lazy_exports
from ._version import __version__ as __version__

_EXPORTS = {
    # server
    "Server": "mcpkit.server",
    "Context": "mcpkit.server",
    "Header": "mcpkit.server",
    "text": "mcpkit.server",
    "image": "mcpkit.server",
    "audio": "mcpkit.server",
    "embedded": "mcpkit.server",
    "resource_contents": "mcpkit.server",
    "user": "mcpkit.server",
    "assistant": "mcpkit.server",
    "KeyRing": "mcpkit.server",
    "Bus": "mcpkit.server",
    "InMemoryBus": "mcpkit.server",
    "Change": "mcpkit.server",
    # client
    "Client": "mcpkit.client",
    "Auth": "mcpkit.client",
    "BearerAuth": "mcpkit.client",
    "EraCache": "mcpkit.client",
    # errors
    "MCPKitError": "mcpkit.errors",
    "MCPError": "mcpkit.errors",
    "ToolError": "mcpkit.errors",
    "TransportError": "mcpkit.errors",
    "TransportClosed": "mcpkit.errors",
    "ProtocolError": "mcpkit.errors",
    "HttpStatusError": "mcpkit.errors",
    # wire types and versions
    "types": "mcpkit.protocol.types:",
    "LATEST_PROTOCOL_VERSION": "mcpkit.protocol.versions:LATEST",
}
__all__ = [
    "LATEST_PROTOCOL_VERSION", "Auth", "BearerAuth", "Bus", "Change", "Client", "Context", "EraCache", "Header",
    "HttpStatusError", "InMemoryBus", "KeyRing", "MCPError", "MCPKitError", "ProtocolError", "Server", "ToolError",
    "TransportClosed", "TransportError", "__version__", "assistant", "audio", "embedded", "image",
    "resource_contents", "text", "types", "user",
]

if TYPE_CHECKING:
    from .client import Auth as Auth
    from .client import BearerAuth as BearerAuth
    from .client import Client as Client
    from .client import EraCache as EraCache
    from .errors import HttpStatusError as HttpStatusError
    from .errors import MCPError as MCPError
    from .errors import MCPKitError as MCPKitError
    from .errors import ProtocolError as ProtocolError
    from .errors import ToolError as ToolError
    from .errors import TransportClosed as TransportClosed
    from .errors import TransportError as TransportError
    from .protocol import types as types
    from .protocol.versions import LATEST as LATEST_PROTOCOL_VERSION
    from .server import Bus as Bus
    from .server import Change as Change
    from .server import Context as Context
    from .server import Header as Header
    from .server import InMemoryBus as InMemoryBus
    from .server import KeyRing as KeyRing
    from .server import Server as Server
    from .server import assistant as assistant
    from .server import audio as audio
    from .server import embedded as embedded
    from .server import image as image
    from .server import resource_contents as resource_contents
    from .server import text as text
    from .server import user as user

_lean_msgspec.install()
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
