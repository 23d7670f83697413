"""What a transport needs from a server: the typed seam between ``server/`` and ``transports/``.

Imports run one way: ``mcpkit.server`` may import ``mcpkit.transports`` (for ``run()`` and
``http_app()``), and transports never import ``mcpkit.server``; they depend on these
protocols, which :class:`mcpkit.Server` and its legacy sessions satisfy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol import codec, errors
from ._envelope import Envelope as Envelope
from ._envelope import Serving as Serving

if TYPE_CHECKING:
    import asyncio


#: Sends one notification (method, params) on a request's own stream.
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
#: Sends one encoded JSON-RPC message to the client.
SendRaw = Callable[[bytes], Awaitable[None]]


class LegacyPeer(Protocol):
    """One 2025-11-25 session (a stdio process, or one ``Mcp-Session-Id``)."""

    #: The tasks serving this session's requests, by request id. The transport registers each
    #: one (and removes it when done) so that ``notifications/cancelled``, which the session
    #: handles, can cancel it; :meth:`close` cancels what is left.
    inflight: dict[Any, asyncio.Task[Any]]
    #: The address that opened the session over HTTP (the transport sets it): its requests' ``ctx.peer``.
    address: str | None

    @property
    def closed(self) -> bool: ...

    async def handle(self, req: codec.Request, emit_raw: SendRaw | None = None, *, auth: Any = None) -> codec.Reply:
        """Answer one session request; ``emit_raw`` is the request's own stream, if any;
        ``auth`` is the authenticated caller (an :class:`AuthPrincipal`), when there is one."""
        ...

    def handle_notification(self, note: codec.Notification) -> None:
        """``notifications/initialized``, ``notifications/cancelled`` (cancels by id) and others."""
        ...

    def handle_response(self, resp: codec.Response) -> None:
        """The client's answer to a server-to-client request (elicitation, sampling, roots)."""
        ...

    def close(self) -> None: ...

    def export_state(self) -> dict[str, Any]:
        """What the session keeps between requests, as plain data (for a shared session store)."""
        ...

    def apply_state(self, state: dict[str, Any]) -> None:
        """Take on state exported by this session's replica on another worker."""
        ...




class NoteObserver(Protocol):
    """Telemetry's view of the notifications no legacy session handles (a 2026-07-28 client's)."""

    def notified(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        """``note`` arrived; ``handle()`` acts on it."""
        ...


class Dispatcher(Protocol):
    """The server as transports see it: its serving settings, one call per request, the
    scopes a request needs (for a 401 challenge), and the legacy sessions' factory."""

    @property
    def serving(self) -> Serving:
        """How to serve this server (fixed for an app or a stdio loop once it starts)."""
        ...

    def serve(self, req: codec.Request, envelope: Envelope) -> Coroutine[Any, Any, codec.Reply]:
        """Answer one modern request: the inbound check (the header rules too, when the
        envelope has headers), the scopes its caller needs, then its handler.

        Never raises but for cancellation and :class:`~mcpkit.protocol.errors.InsufficientScope`
        (the envelope's principal lacks scopes the request needs; raised before anything runs).
        A reply that failed the check is marked ``rejected``.
        """
        ...

    def required_scopes(self, method: str, params: Any) -> Collection[str]:
        """The OAuth scopes a request needs, from its raw params (a 401 challenge names them;
        a legacy session request is authorized with them before it is delivered)."""
        ...

    def open_legacy_session(self, *, send: SendRaw | None = None, state: dict[str, Any] | None = None,
                            id_prefix: str | None = None) -> LegacyPeer:
        """A new legacy session; ``send`` is its session-level channel (stdio, or the GET stream).

        ``state`` (from :meth:`LegacyPeer.export_state`) resumes a session started on another
        worker; ``id_prefix`` makes this replica's request ids name the worker, so the
        client's answers can be routed back to it.
        """
        ...

    def close_listeners(self) -> None:
        """End every open ``subscriptions/listen`` stream gracefully (before shutdown)."""
        ...

    def running(self) -> AbstractAsyncContextManager[Any]:
        """Runs the lifespan around serving: transports enter it once per process; a
        failure on the way in is :class:`~mcpkit.errors.LifespanError`."""
        ...

    async def readiness(self, timeout: float = ...) -> dict[str, str]:
        """The readiness checks that fail, by name (``{}``: ready), for ``GET /readyz``."""
        ...

    @property
    def session_observer(self) -> NoteObserver | None:
        """Telemetry (None, the default: off); transports hand it the notifications they handle themselves."""
        ...


# ---------------------------------------------------------------------- authorization
class AuthPrincipal(Protocol):
    """An authenticated caller, as transports see it (``mcpkit.auth.server.Principal``)."""

    @property
    def key(self) -> str | None:
        """Identifies the caller for bindings (sessions, MRTR state, tasks); None when the
        caller has no identity to bind to (then every binding is refused, never shared)."""
        ...

    @property
    def list_all(self) -> bool:
        """Lists show everything, whatever the scopes (else only what the caller may use)."""
        ...

    def allows(self, needed: Collection[str]) -> bool:
        """Whether the caller's scopes cover every scope in ``needed``."""
        ...


@dataclass(slots=True)
class AuthRefusal:
    """A request the authenticator turns away: the HTTP status, the ``WWW-Authenticate``
    challenge, the JSON-RPC error for the body, and any extra headers (``DPoP-Nonce``)."""

    status: int
    challenge: str
    error: errors.MCPError
    headers: tuple[tuple[bytes, bytes], ...] = ()
    #: The OAuth error code and description (to build the challenge again with more scopes).
    oauth_error: str | None = None
    description: str = ""
    scheme: str | None = None


class Authenticator(Protocol):
    """Guards an HTTP endpoint with OAuth access tokens (``mcpkit.auth.server.ResourceServerAuth``)."""

    @property
    def resource(self) -> str | None:
        """The configured canonical URL of the endpoint (None: the app works it out)."""
        ...

    @property
    def serve_root_metadata(self) -> bool:
        """Whether the metadata is also served at the root well-known URL (no path suffix)."""
        ...

    def resource_url(self, scheme: str, host: str | None, path: str) -> str:
        """The canonical URL of the endpoint at ``path``: the configured one, else built from
        ``host``, the ``host:port`` of the local socket (never the request's ``Host`` header)."""
        ...

    def metadata_document(self, resource: str) -> bytes:
        """The protected resource metadata (RFC 9728) for ``resource``, as JSON."""
        ...

    async def authenticate(self, method: str, resource: str, headers: Mapping[str, str],
                           query: bytes) -> AuthPrincipal | AuthRefusal:
        """The caller of one request, or why it is refused (401 with a challenge)."""
        ...

    def authorize(self, principal: AuthPrincipal, needed: Collection[str], resource: str) -> AuthRefusal | None:
        """None when ``principal`` may run an operation needing ``needed``; else a 403."""
        ...

    def rescope(self, refusal: AuthRefusal, needed: Collection[str], resource: str) -> AuthRefusal:
        """``refusal`` (a 401) naming also the scopes the refused operation needs."""
        ...
