"""What a transport needs from a server: the typed seam between ``server/`` and ``transports/``.

Imports run one way: ``mcpkit.server`` may import ``mcpkit.transports`` (for ``run()`` and
``http_app()``), and transports never import ``mcpkit.server``; they depend on these
protocols, which :class:`mcpkit.Server` and its legacy sessions satisfy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..protocol import codec, inbound

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

    async def handle(self, req: codec.Request, emit_raw: SendRaw | None = None) -> codec.Reply:
        """Answer one session request; ``emit_raw`` is the request's own stream, if any."""
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
                          principal: str | None = None) -> codec.Reply:
        """Answer a modern request that passed :meth:`check`; never raises but for cancellation."""
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
