"""The envelope of one request: what a transport hands the server beside the request.

Its own module, free of asyncio and dataclasses, so that the stdio opening (which answers
the first lines before an event loop exists) can build one. Re-exported by ``_interface``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ._interface import AuthPrincipal


class Envelope(NamedTuple):
    """What a transport hands the server with one request (``Dispatcher.serve``).

    ``headers``: the HTTP request's headers (names lower-cased), for the header rules; None
    where there are none (stdio, in memory). ``principal``: the authenticated caller, when
    the endpoint checks access tokens. ``emit``: sends one notification (method, params) on
    the request's own stream. ``peer``: the caller's network address (HTTP: the socket's peer,
    or the client a trusted proxy names), None where there is none (stdio, in memory).
    """

    headers: Mapping[str, str] | None = None
    principal: AuthPrincipal | None = None
    emit: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    peer: str | None = None


#: The envelope of a request with no headers, no caller and no stream of its own.
BARE = Envelope()
