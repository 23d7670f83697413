"""A hook on what a client sends and receives (:mod:`mcpkit.observability` installs one).

``observer(client, method, request_id, body)`` is called for each JSON-RPC request once its
``_meta`` is stamped and its id assigned, before it is handed to the transport; it may add
to ``body["_meta"]`` (trace context) and returns a function that wraps the awaitable of the
answer (time limit included). The other methods of :class:`ClientObserver` see the rounds of
an MRTR call, the connection opening and closing, the notifications in both directions and
the server's own requests. None, the default, costs one attribute read at each of those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..protocol import codec
    from ._client import Client
    from ._transport import OnNote, Response

#: Wraps the awaitable answer of one request.
Around = Callable[[Awaitable["Response | codec.Response"]], Awaitable["Response | codec.Response"]]


class ClientObserver(Protocol):
    def __call__(self, client: Client, method: str, request_id: Any, body: dict[str, Any]) -> Around:
        """One request leaving (``body`` is its params)."""
        ...

    def rounds(self, client: Client, method: str) -> AbstractContextManager[None]:
        """Around every round of one call that may be answered ``input_required`` (MRTR)."""
        ...

    def opened(self, client: Client) -> None:
        """The client starts connecting."""
        ...

    def closed(self, client: Client, error: BaseException | None = None) -> None:
        """The client's connection is closed (``error``: what ended it, if anything did)."""
        ...

    def notify(self, client: Client, method: str, params: dict[str, Any],
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> Awaitable[None]:
        """A notification leaving: ``send(params)`` sends it."""
        ...

    def received(self, client: Client, method: str, params: dict[str, Any], handle: Callable[[], None]) -> None:
        """A notification from the server: ``handle()`` handles it."""
        ...

    def listener(self, client: Client, on_note: OnNote) -> OnNote:
        """A request's own notification callback, observed."""
        ...

    def serve(self, client: Client, method: str, params: dict[str, Any],
              answer: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> Awaitable[Any]:
        """A request from the server: ``answer(method, params)`` answers it."""
        ...


#: The earlier name of :class:`ClientObserver`.
RequestObserver = ClientObserver

#: The observer of every Client of this process (None: none).
observer: ClientObserver | None = None


def request_observer() -> ClientObserver | None:
    """The observer of every Client's requests in this process (None: none)."""
    return observer


def set_request_observer(new: ClientObserver | None) -> None:
    """Make ``new`` the observer of every Client's requests in this process (None: none)."""
    global observer
    observer = new
