"""The in-memory client transport: a ``Server`` object in this process, reached through the
same codec and ladder as a wire. The only client module that touches ``mcpkit.server``."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..protocol import codec
from ._transport import NO_CREDENTIALS, Capabilities, ClientTransport, OnNote, Response

if TYPE_CHECKING:
    from ..server import Server


def is_server(obj: object) -> bool:
    """Whether ``obj`` is an mcpkit ``Server``. Nothing is imported: if ``mcpkit.server`` was
    never loaded, no Server object can exist."""
    mod = sys.modules.get("mcpkit.server")
    server_cls = getattr(mod, "Server", None) if mod is not None else None
    return server_cls is not None and isinstance(obj, server_cls)


class MemoryTransport(ClientTransport):
    """Every request is encoded, decoded and handed to ``server.handle`` like a wire message."""

    capabilities: ClassVar[Capabilities] = Capabilities(kind="memory")

    def __init__(self, server: Server) -> None:
        self.server = server
        self._running: Any = None

    async def start(self) -> None:
        """Enter the server's lifespan (shared with any other client or transport serving it)."""
        if self.server.lifespan is not None and self._running is None:
            running = self.server.running()
            await running.__aenter__()
            self._running = running

    async def close(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            await running.__aexit__(None, None, None)

    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        req = codec.decode(codec.encode_request(id, method, params))
        assert type(req) is codec.Request
        cb = on_note or self.on_notification

        async def emit(m: str, p: dict[str, Any]) -> None:
            note = codec.decode(codec.encode_notification(m, p), parse_params=True)
            if cb is not None and type(note) is codec.Notification:
                cb(note.method, note.params)

        reply = await self.server.handle(req, emit)
        msg = codec.decode(reply.body)
        assert type(msg) is codec.Response
        return Response(msg, credentials=NO_CREDENTIALS)  # headers never reach the server

    async def outgoing_credentials(self, headers: Mapping[str, str] | None = None) -> str | None:
        return NO_CREDENTIALS
