"""What the message-stream client transports (stdio, 2024-11-05 HTTP+SSE) share: the table of
requests waiting on an answer, the routes of their notifications, and the dispatch of what the
server sends (a response to its waiting request, a notification to its route, a server
request to the transport's ``_answer``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from ..protocol import codec
from ..protocol import meta as M
from ._transport import OnNote

log = logging.getLogger("mcpkit.client")

#: Where a notification is routed: a progress token, or ``("listen", <id type>, <id>)`` for a
#: listen stream's (matched by its ``subscriptionId``, JSON type included).
RouteKey = Any


class PendingRequests:
    """Mixed into a transport that reads messages off one stream: ``pending`` futures by id,
    ``note_routes`` by progress token or listen key, ``_closed`` once the stream is gone."""

    on_notification: OnNote | None

    def _init_pending(self) -> None:
        self.pending: dict[codec.RequestId, asyncio.Future[codec.Response]] = {}
        self.note_routes: dict[RouteKey, OnNote] = {}  # progress token or listen key -> the request's callback
        self._closed: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _answer(self, msg: codec.Request) -> Awaitable[None]:
        raise NotImplementedError

    def _dispatch(self, msg: codec.Message) -> None:
        """One decoded message from the server, handed to whoever waits for it."""
        if type(msg) is codec.Response:
            fut = self.pending.pop(msg.id, None) if msg.id is not None else None
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif type(msg) is codec.Notification:
            self._route(msg)
        elif type(msg) is codec.Request:
            task = asyncio.ensure_future(self._answer(msg))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _route(self, msg: codec.Notification) -> None:
        params = msg.params or {}
        meta = params.get("_meta")
        sid = meta.get(M.SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        cb: OnNote | None
        if sid is not None:
            cb = self.note_routes.get(("listen", type(sid).__name__, sid))
        elif msg.method == "notifications/progress":
            token = params.get(M.PROGRESS_TOKEN)
            cb = self.note_routes.get(token) if token is not None else None
        else:
            cb = None
        if cb is None:
            cb = self.on_notification
        if cb is not None:
            try:
                cb(msg.method, params)
            except Exception:
                log.exception("notification callback failed")

    def _fail_all(self, exc: BaseException) -> None:
        """The stream is gone: every waiting request fails with ``exc``, and so will new ones."""
        self._closed = exc
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()

    def _open(self, id: codec.RequestId, method: str, params: dict[str, Any],
              on_note: OnNote | None) -> tuple[asyncio.Future[codec.Response], RouteKey]:
        """A request about to be sent: its future, and the key its notifications are routed by
        (None: none); raises what closed the stream, if it is closed."""
        if self._closed is not None:
            raise self._closed
        fut: asyncio.Future[codec.Response] = asyncio.get_running_loop().create_future()
        self.pending[id] = fut
        token: RouteKey = (params.get("_meta") or {}).get(M.PROGRESS_TOKEN)
        if method == "subscriptions/listen":
            token = ("listen", type(id).__name__, id)  # matched by subscriptionId, JSON type included
        if on_note is not None and token is not None:
            self.note_routes[token] = on_note
        return fut, token

    def _release(self, id: codec.RequestId, token: RouteKey) -> None:
        """A request is answered or abandoned: forget it and its route."""
        self.pending.pop(id, None)
        if token is not None:
            self.note_routes.pop(token, None)
