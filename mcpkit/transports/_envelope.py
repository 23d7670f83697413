"""The envelope of one request: what a transport hands the server beside the request.

Its own module, free of asyncio and dataclasses, so that the stdio opening (which answers
the first lines before an event loop exists) can build one; :class:`Serving`, what a
transport reads of a server when it starts, lives here for the same reason. Both are
re-exported by ``_interface``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ._http_legacy import SessionStore
    from ._interface import Authenticator, AuthPrincipal
    from .routes import HttpRoute


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


class Serving(NamedTuple):
    """How a server asks to be served, read once when a transport starts serving it
    (``Dispatcher.serving``)."""

    #: Whether 2025-11-25 clients are served too (the ``initialize`` handshake).
    legacy: bool
    #: The server's own OAuth protection for HTTP (None: open), unless the app is given another.
    auth: Authenticator | None = None
    #: Where legacy HTTP sessions live when workers share them (None: this process).
    session_store: SessionStore | None = None
    #: Extra read-only HTTP routes to mount beside the MCP endpoint (:mod:`.routes`), by path.
    http_routes: Mapping[str, HttpRoute] = MappingProxyType({})
    #: Whether the server has a lifespan (``Server(lifespan=...)``) that
    #: ``Dispatcher.running`` enters around serving.
    lifespan: bool = False
