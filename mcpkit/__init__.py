"""mcpkit: the Model Context Protocol (2026-07-28, stateless; 2025-11-25 legacy) for Python.

Public names are loaded lazily, so ``import mcpkit`` costs almost nothing and never pulls
in the HTTP stack or the client unless they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

_EXPORTS = {
    "Server": "mcpkit.server",
    "Context": "mcpkit.server",
    "Header": "mcpkit.server",
    "ToolError": "mcpkit.server",
    "text": "mcpkit.server",
    "image": "mcpkit.server",
    "audio": "mcpkit.server",
    "embedded": "mcpkit.server",
    "resource_contents": "mcpkit.server",
    "user": "mcpkit.server",
    "assistant": "mcpkit.server",
    "Client": "mcpkit.client",
    "TransportError": "mcpkit.client",
    "ProtocolError": "mcpkit.client",
    "EraCache": "mcpkit.client._era",
    "KeyRing": "mcpkit.server._state",
    "Bus": "mcpkit.server._bus",
    "InMemoryBus": "mcpkit.server._bus",
    "Change": "mcpkit.server._bus",
    "MCPError": "mcpkit.protocol.errors",
    "types": "mcpkit.protocol.types",
    "LATEST_PROTOCOL_VERSION": "mcpkit.protocol.versions",
}
__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:
    from .client import Client, ProtocolError, TransportError
    from .client._era import EraCache
    from .server._bus import Bus, Change, InMemoryBus
    from .server._state import KeyRing
    from .protocol import types
    from .protocol.errors import MCPError
    from .protocol.versions import LATEST as LATEST_PROTOCOL_VERSION
    from .server import (Context, Header, Server, ToolError, assistant, audio, embedded, image,
                         resource_contents, text, user)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'mcpkit' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(mod)
    value = module if name == "types" else getattr(module, "LATEST" if name == "LATEST_PROTOCOL_VERSION" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
