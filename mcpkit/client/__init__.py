"""Client side: discover, list and call over stdio, in-memory or HTTP."""

from ..errors import HttpStatusError, ProtocolError, ResponseTooLarge, SkillVerificationError, TransportClosed, TransportError
from ._auth import Auth, BearerAuth, OutgoingRequest
from ._client import Client
from ._era import EraCache
from ._listen import Notification
from ._restart import Recovery, RequestNotRetried
from ._skills import LoadedSkill
from ._tasks import TaskCancelled, TaskHandle
from ._transport import Capabilities, ClientTransport, Response

__all__ = [
    "Auth", "BearerAuth", "Capabilities", "Client", "ClientTransport", "EraCache", "HttpStatusError", "LoadedSkill",
    "Notification", "SkillVerificationError",
    "OutgoingRequest", "ProtocolError", "Recovery", "RequestNotRetried", "Response", "ResponseTooLarge", "TaskCancelled",
    "TaskHandle",
    "TransportClosed", "TransportError",
]
