"""Client side: discover, list and call over stdio, in-memory or HTTP.

Public names are loaded lazily (as in ``mcpkit``): ``from mcpkit.client import Client`` loads
the client and what a call needs, not tasks, skills, listen streams or recovery policies
until they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "Auth": "mcpkit.client._auth",
    "BearerAuth": "mcpkit.client._auth",
    "OutgoingRequest": "mcpkit.client._auth",
    "Capabilities": "mcpkit.client._transport",
    "ClientTransport": "mcpkit.client._transport",
    "Response": "mcpkit.client._transport",
    "OnNote": "mcpkit.client._transport",
    "Client": "mcpkit.client._client",
    "EraCache": "mcpkit.client._era",
    "Around": "mcpkit.client._hooks",
    "ClientObserver": "mcpkit.client._hooks",
    "RequestObserver": "mcpkit.client._hooks",
    "request_observer": "mcpkit.client._hooks",
    "set_request_observer": "mcpkit.client._hooks",
    "Notification": "mcpkit.client._listen",
    "asking_params": "mcpkit.client._input",
    "Recovery": "mcpkit.client._restart",
    "RequestNotRetried": "mcpkit.client._restart",
    "LoadedSkill": "mcpkit.client._skills",
    "TaskCancelled": "mcpkit.client._tasks",
    "TaskHandle": "mcpkit.client._tasks",
    "HttpStatusError": "mcpkit.errors",
    "ProtocolError": "mcpkit.errors",
    "ResponseTooLarge": "mcpkit.errors",
    "SkillVerificationError": "mcpkit.errors",
    "TransportClosed": "mcpkit.errors",
    "TransportError": "mcpkit.errors",
}
__all__ = [
    "Auth", "BearerAuth", "Capabilities", "Client", "ClientTransport", "EraCache", "HttpStatusError", "LoadedSkill",
    "Notification", "SkillVerificationError",
    "OutgoingRequest", "ProtocolError", "Recovery", "RequestNotRetried", "Response", "ResponseTooLarge", "TaskCancelled",
    "TaskHandle",
    "TransportClosed", "TransportError",
]
# Around, ClientObserver (RequestObserver), request_observer and set_request_observer (the
# hook on what every Client sends and receives) are for mcpkit.observability, not in __all__;
# asking_params (a server request's raw params, in its handler) is for mcpkit.proxy.

if TYPE_CHECKING:
    from ..errors import HttpStatusError as HttpStatusError
    from ..errors import ProtocolError as ProtocolError
    from ..errors import ResponseTooLarge as ResponseTooLarge
    from ..errors import SkillVerificationError as SkillVerificationError
    from ..errors import TransportClosed as TransportClosed
    from ..errors import TransportError as TransportError
    from ._auth import Auth as Auth
    from ._auth import BearerAuth as BearerAuth
    from ._auth import OutgoingRequest as OutgoingRequest
    from ._client import Client as Client
    from ._era import EraCache as EraCache
    from ._hooks import Around as Around
    from ._hooks import ClientObserver as ClientObserver
    from ._hooks import RequestObserver as RequestObserver
    from ._hooks import request_observer as request_observer
    from ._hooks import set_request_observer as set_request_observer
    from ._input import asking_params as asking_params
    from ._listen import Notification as Notification
    from ._restart import Recovery as Recovery
    from ._restart import RequestNotRetried as RequestNotRetried
    from ._skills import LoadedSkill as LoadedSkill
    from ._tasks import TaskCancelled as TaskCancelled
    from ._tasks import TaskHandle as TaskHandle
    from ._transport import Capabilities as Capabilities
    from ._transport import ClientTransport as ClientTransport
    from ._transport import OnNote as OnNote
    from ._transport import Response as Response

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
