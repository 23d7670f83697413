"""Former home of the client transports, kept as aliases for code that imports from here.

The contract is in ``_transport``; the transports are in ``_stdio``, ``_http`` and ``_memory``.
"""

from ..errors import TransportClosed, TransportError
from ._transport import ClientTransport, OnNote, OnRequest, answer_request

__all__ = ["ClientTransport", "OnNote", "OnRequest", "TransportClosed", "TransportError", "answer_request"]
