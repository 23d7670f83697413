"""Client side: discover, list and call over stdio, in-memory or HTTP."""

from ._client import Client, ProtocolError
from ._transports import TransportClosed, TransportError

__all__ = ["Client", "ProtocolError", "TransportClosed", "TransportError"]
