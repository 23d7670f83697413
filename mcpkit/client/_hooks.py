"""A hook on the client's requests as they leave (:mod:`mcpkit.observability` installs one).

``observer(client, method, request_id, body)`` is called for each JSON-RPC request once its
``_meta`` is stamped and its id assigned, before it is handed to the transport; it may add
to ``body["_meta"]`` (trace context) and returns a function that wraps the awaitable of the
answer (time limit included). None, the default, costs one attribute read per request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..protocol import codec
    from ._client import Client
    from ._transport import Response

#: Wraps the awaitable answer of one request.
Around = Callable[[Awaitable["Response | codec.Response"]], Awaitable["Response | codec.Response"]]


class RequestObserver(Protocol):
    def __call__(self, client: Client, method: str, request_id: Any, body: dict[str, Any]) -> Around: ...


#: The observer of every Client's requests in this process (None: none).
observer: RequestObserver | None = None


def request_observer() -> RequestObserver | None:
    """The observer of every Client's requests in this process (None: none)."""
    return observer


def set_request_observer(new: RequestObserver | None) -> None:
    """Make ``new`` the observer of every Client's requests in this process (None: none)."""
    global observer
    observer = new
