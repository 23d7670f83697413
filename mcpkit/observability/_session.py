"""A legacy (2025-11-25 and earlier) session as the server sees it, traced.

:class:`SessionTelemetry` is what ``Server.session_observer.session(...)`` gives each
``LegacySession`` (every transport makes one: a stdio process, one ``Mcp-Session-Id`` on
HTTP). It reports

- a SERVER span for each of the session's own methods (``initialize``, ``ping``,
  ``logging/setLevel``, ``resources/subscribe``, ``resources/unsubscribe``), which no handler
  (and so no middleware) answers;
- a SERVER span for each notification the client sends (``notifications/initialized``,
  ``notifications/cancelled``, ``notifications/roots/list_changed`` ...);
- a CLIENT span for each request the server sends the client (``elicitation/create``,
  ``sampling/createMessage``, ``roots/list``; the context in their ``params._meta``, so the
  client's SERVER span is its child) and for each notification the session pushes;
- one ``mcp.server.session.duration`` point when the session ends, from its creation (the
  ``initialize`` request) to its close (stdio EOF, HTTP ``DELETE``, expiry, shutdown). A
  replica of a session opened on another worker (a shared session store) records none: the
  worker that opened it does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocol import codec
from . import _conv as C
from ._spans import Measured, json_rpc_error, perf

if TYPE_CHECKING:
    from ._server import ServerTelemetry


class SessionTelemetry:
    __slots__ = ("telemetry", "session", "resumed", "start", "ended")

    def __init__(self, telemetry: ServerTelemetry, session: Any, resumed: bool) -> None:
        self.telemetry = telemetry
        self.session = session
        self.resumed = resumed
        self.start = perf()
        self.ended = False

    def _attrs(self) -> dict[str, Any]:
        attrs = dict(self.telemetry.network)
        version = self.session.version
        if version:
            attrs[C.PROTOCOL_VERSION] = version
        return attrs

    async def handled(self, req: codec.Request, answer: Awaitable[codec.Reply]) -> codec.Reply:
        """One of the session's own requests, answered by ``answer``."""
        inst = self.telemetry.instruments
        params = codec.params_dict(req.params)
        params = params if isinstance(params, dict) else {}
        name, attrs = C.target_attributes(req.method, None, params.get("uri"))
        attrs.update(self._attrs())
        rid = C.request_id(req.id)
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        span, inside = inst.receiving(name, attrs, params.get("_meta"))
        with Measured(inst, span, attrs, inst.server_operation, server=True, inside=inside) as m:
            reply = await answer
            if req.method == "initialize" and self.session.version:
                attrs[C.PROTOCOL_VERSION] = self.session.version  # the version just negotiated
                span.set_attribute(C.PROTOCOL_VERSION, self.session.version)
            if reply.error_code is not None:
                m.error = json_rpc_error(span, attrs, reply.error_code, "", server=True)
            return reply

    def received(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        """A notification from the client, handled by ``handle()``."""
        self.telemetry.instruments.handle_note(note.method, codec.params_dict(note.params), self._attrs(), handle)

    async def asked(self, request_id: Any, method: str, params: dict[str, Any],
                    send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Any:
        """A request to the client (``send(params)`` returns its result or raises MCPError)."""
        inst = self.telemetry.instruments
        attrs = self._attrs()
        attrs[C.METHOD] = method
        rid = C.request_id(request_id)
        if rid is not None:
            attrs[C.REQUEST_ID] = rid
        body = dict(params)
        with Measured(inst, inst.sending(method, attrs, body), attrs, inst.client_operation, server=False):
            return await send(body)

    async def pushed(self, method: str, params: dict[str, Any] | None,
                     send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """A notification the session pushes on its own channel (list changes, resource updates)."""
        await self.telemetry.instruments.send_note(method, params or {}, self._attrs(), send)

    def closed(self) -> None:
        """The session ended: one ``mcp.server.session.duration`` point (once; none for a replica
        or for a session that never got through ``initialize``)."""
        if self.ended or self.resumed or not self.session.version:
            return
        self.ended = True
        attrs = self._attrs()
        self.telemetry.instruments.server_session.record(perf() - self.start, C.session_attributes(attrs))
