"""The client transport contract: what a transport declares, and what one request returns.

A transport sends one JSON-RPC request and returns a :class:`Response`: the message, plus
the HTTP status and headers of *that* exchange when there is HTTP underneath. What a
transport can do is declared up front in its :class:`Capabilities`; the client reads those,
never probes for attributes.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal, NamedTuple

from ..errors import HttpStatusError
from ..errors import NoAnswer as NoAnswer
from ..protocol import codec, errors

#: A request's credentials when it carries none (stdio, in-memory): see ``_credentials``.
NO_CREDENTIALS = ""

log = logging.getLogger("mcpkit.client")

#: Receives (method, params) of a notification.
OnNote = Callable[[str, dict[str, Any]], Any]
#: Answers a server-to-client request (legacy sessions, ping): (method, params) -> result.
OnRequest = Callable[[str, dict[str, Any]], Awaitable[Any]]
Era = Literal["modern", "legacy"]


class Capabilities(NamedTuple):
    """What a transport is and can do, declared by its class."""

    #: ``"memory"`` (a Server object in this process: it speaks 2026-07-28, no era probe),
    #: ``"stdio"`` (a subprocess) or ``"http"`` (statuses and headers come with each Response).
    kind: Literal["stdio", "http", "memory"]
    #: A 2025-11-25 session (``Mcp-Session-Id``) is bound to this transport object.
    sessionful: bool = False
    #: Requests carry ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` headers mirroring the body:
    #: tool annotations matter, and a -32020 header mismatch is worth a re-list and retry.
    supports_header_mirroring: bool = False
    #: Only ``initialize``-handshake sessions (2025-11-25 and earlier) travel over it (the
    #: 2024-11-05 HTTP+SSE transport): no era probe, the handshake at once.
    legacy_only: bool = False

    @property
    def http(self) -> bool:
        """Whether the transport is HTTP (headers, statuses and header mirroring apply)."""
        return self.kind == "http"


class Response:
    """One request's answer: the JSON-RPC ``message``, and for HTTP its ``status`` and
    ``headers`` (None elsewhere). ``message`` is None when an HTTP answer carried no
    JSON-RPC response (a plain 401, a 502 page...); ``problem`` then says what was wrong.

    ``credentials`` is the partition of the credentials the request carried (a keyed hash of
    its credential headers, see ``_credentials``): private cache entries are kept in it. None
    (the default) means the transport cannot tell, and private results are then not cached."""

    __slots__ = ("message", "status", "headers", "body", "problem", "credentials")

    def __init__(self, message: codec.Response | None, status: int | None = None,
                 headers: Mapping[str, str] | None = None, body: bytes = b"", problem: str = "",
                 credentials: str | None = None) -> None:
        self.message = message
        self.status = status
        self.headers = headers
        self.body = body
        self.problem = problem
        self.credentials = credentials

    # The message's fields, for code that only cares about JSON-RPC.
    @property
    def id(self) -> codec.RequestId | None:
        """The JSON-RPC id of the answer, or None without a message."""
        return self.message.id if self.message is not None else None

    @property
    def result(self) -> Any:
        """The JSON-RPC ``result``, or None (an error, or no message)."""
        return self.message.result if self.message is not None else None

    @property
    def error(self) -> Any:
        """The JSON-RPC ``error`` object, or None."""
        return self.message.error if self.message is not None else None

    def http_error(self) -> HttpStatusError:
        """The error to raise for an answer without a JSON-RPC message (or with one that is
        an HTTP refusal, a 401 or 403: its error's message is then the error's text)."""
        status = self.status or 0
        said = self.error.get("message") if isinstance(self.error, dict) else None
        problem = self.problem or (said if isinstance(said, str) and said else f"HTTP {status} without a JSON-RPC response")
        return HttpStatusError(status, problem, self.body, self.headers)

    def require_message(self) -> codec.Response:
        """The JSON-RPC message; :class:`~mcpkit.errors.HttpStatusError` when the answer had none."""
        if self.message is None:
            raise self.http_error()
        return self.message

    def __repr__(self) -> str:
        return f"Response(status={self.status!r}, message={self.message!r})"


class ClientTransport(abc.ABC):
    """Sends requests to one server. Subclasses declare :attr:`capabilities` and implement
    :meth:`request`; the rest has sensible no-op defaults.

    The client sets :attr:`on_notification` (notifications that belong to no request) and
    :attr:`on_request` (the server's own requests: ping, and in legacy sessions sampling,
    elicitation and roots) before :meth:`start`.
    """

    #: A transport that declares nothing is treated as an in-process one: no era probe,
    #: no HTTP semantics.
    capabilities: ClassVar[Capabilities] = Capabilities(kind="memory")
    on_notification: OnNote | None = None
    on_request: OnRequest | None = None

    @property
    def closed(self) -> bool:
        """Whether the server is known to be gone (a stdio server that exited)."""
        return False

    async def start(self) -> None:
        """Connect (spawn, open a pool...). Called again after :meth:`close` to restart."""
        return None

    @abc.abstractmethod
    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        """Send one request and return its answer. ``on_note`` gets the notifications that
        belong to it (progress, logs, a listen stream's changes); ``headers`` are extra HTTP
        headers (e.g. ``Authorization`` from an auth flow), ignored off HTTP."""

    async def notify(self, method: str, params: dict[str, Any] | None, *, headers: Mapping[str, str] | None = None) -> None:
        """Send a notification (nothing comes back)."""
        return None

    async def close(self) -> None:
        """Disconnect; a later :meth:`start` begins afresh."""
        return None

    async def abandon(self) -> None:
        """Disconnect at once, because the server is being replaced (it may be stuck): no
        grace for a polite exit. A later :meth:`start` begins afresh."""
        await self.close()

    def for_era(self, era: Era) -> ClientTransport:
        """The transport to use for ``era``: itself, unless the era needs another kind of
        connection (HTTP: a 2025-11-25 session vs stateless POSTs). A new transport takes
        over this one's connection pool and callbacks."""
        return self

    async def fallback(self, refusal: Response) -> ClientTransport | None:
        """The transport to use instead after the ``initialize`` handshake got ``refusal`` (HTTP:
        a 2024-11-05 HTTP+SSE server at the same URL, started), or None to keep this one."""
        return None

    def session_started(self, version: str) -> None:
        """A 2025-11-25 ``initialize`` settled on ``version`` (sent on later requests)."""
        return None

    async def open_session_stream(self) -> None:
        """After ``notifications/initialized``: open the channel for the server's own messages."""
        return None

    def use_tool_annotations(self, annotations: dict[str, dict[str, tuple[str, ...]]]) -> None:
        """The ``x-mcp-header`` annotations of the listed tools (header mirroring only)."""
        return None

    async def outgoing_credentials(self, headers: Mapping[str, str] | None = None) -> str | None:
        """The partition (see :attr:`Response.credentials`) a request would go out in now,
        given the auth hook's ``headers``: what a cache lookup of a private entry needs.
        None (the default) when the transport cannot tell: private results are not cached."""
        return None


async def answer_request(on_request: OnRequest | None, msg: codec.Request) -> bytes:
    """The encoded response to a server's request, from the client's ``on_request``."""
    params = msg.params if isinstance(msg.params, dict) else {}
    if on_request is None:
        return codec.encode_error(msg.id, errors.method_not_found(msg.method))
    try:
        result = await on_request(msg.method, params)
    except errors.MCPError as exc:
        return codec.encode_error(msg.id, exc)
    except Exception as exc:
        log.exception("answering the server's %s failed", msg.method)
        return codec.encode_error(msg.id, errors.internal_error(f"the client failed to answer {msg.method}: {exc}"))
    return codec.encode_result(msg.id, result)
