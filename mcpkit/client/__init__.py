"""Client side: discover, list and call over stdio, in-memory or HTTP."""

from ..errors import HttpStatusError, ProtocolError, ResponseTooLarge, SkillVerificationError, TransportClosed, TransportError
from ._auth import Auth, BearerAuth, OutgoingRequest
from ._client import Client
from ._era import EraCache
from ._hooks import Around as Around
from ._hooks import ClientObserver as ClientObserver
from ._hooks import RequestObserver as RequestObserver
from ._hooks import request_observer as request_observer
from ._hooks import set_request_observer as set_request_observer
from ._listen import Notification
from ._restart import Recovery, RequestNotRetried
from ._skills import LoadedSkill
from ._tasks import TaskCancelled, TaskHandle
from ._transport import Capabilities, ClientTransport, Response
from ._transport import OnNote as OnNote

__all__ = [
    "Auth", "BearerAuth", "Capabilities", "Client", "ClientTransport", "EraCache", "HttpStatusError", "LoadedSkill",
    "Notification", "SkillVerificationError",
    "OutgoingRequest", "ProtocolError", "Recovery", "RequestNotRetried", "Response", "ResponseTooLarge", "TaskCancelled",
    "TaskHandle",
    "TransportClosed", "TransportError",
]
# Around, ClientObserver (RequestObserver), request_observer and set_request_observer (the
# hook on what every Client sends and receives) are for mcpkit.observability, not in __all__.
