"""What a transport needs from a server: the typed seam between ``server/`` and ``transports/``.

Imports run one way: ``mcpkit.server`` may import ``mcpkit.transports`` (for ``run()`` and
``http_app()``), and transports never import ``mcpkit.server``; they depend on these
protocols, which :class:`mcpkit.Server` and its legacy sessions satisfy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..protocol import codec, errors, inbound

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


class Dispatcher(Protocol):
    """The server as transports see it."""

    @property
    def legacy(self) -> bool:
        """Whether 2025-11-25 clients are served too (the ``initialize`` handshake)."""
        ...

    @property
    def supported_versions(self) -> tuple[str, ...]: ...

    def check(self, req: codec.Request) -> inbound.Checked:
        """Run the inbound ladder (raises ``MCPError``)."""
        ...

    async def run_checked(self, req: codec.Request, checked: inbound.Checked, emit: Emit | None = None, *,
                          principal: str | None = None, auth: Any = None) -> codec.Reply:
        """Answer a modern request that passed :meth:`check`; never raises but for cancellation.
        ``auth`` is the authenticated caller (an :class:`AuthPrincipal`), ``principal`` its key."""
        ...

    def required_scopes(self, method: str, params: Any) -> Collection[str]:
        """The OAuth scopes one request needs (its tool, resource, prompt or method's own)."""
        ...

    async def handle(self, req: codec.Request, emit: Emit | None = None) -> codec.Reply:
        """:meth:`check` then :meth:`run_checked`."""
        ...

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The ``x-mcp-header`` annotations of a tool, for checking ``Mcp-Param-*`` headers."""
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


# ---------------------------------------------------------------------- authorization
class AuthPrincipal(Protocol):
    """An authenticated caller, as transports see it (``mcpkit.auth.server.Principal``)."""

    @property
    def key(self) -> str | None:
        """Identifies the caller for bindings (sessions, MRTR state, tasks); None when the
        caller has no identity to bind to (then every binding is refused, never shared)."""
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
