"""Serving 2025-11-25 (and earlier) clients: the ``initialize`` handshake and its session.

A :class:`LegacySession` holds what the legacy protocol keeps between requests (the
negotiated version, client capabilities, log level, resource subscriptions) and turns each
legacy request into the same dispatch a modern request gets, with a ``_meta`` built from
the session and a :class:`~._encode.LegacyEra`: questions (``ctx.elicit`` ...) go to the
client as real requests, results are shaped for the legacy wire. It uses only the
server's public API. Transports feed it messages and give it ways to send.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ..protocol import codec, eras, errors, inbound, versions
from ..protocol import meta as M
from ..protocol.codec import Reply
from ..protocol.routing import cancelled_request_id
from ..protocol.subscriptions import ALL_LISTS, notification_for
from ._context import Emit
from ._encode import LegacyEra
from ._input import InputRequests
from ._resolve import allowed, resource_scopes

if TYPE_CHECKING:
    from ._bus import Subscription
    from ._server import Server

log = logging.getLogger("mcpkit.server")

#: Sends one raw JSON-RPC message (bytes) to the client.
SendRaw = Callable[[bytes], Awaitable[None]]

#: The legacy session's own methods (answered here, not by a handler).
SESSION_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


class SessionObserver(Protocol):
    """Watches one session (:mod:`mcpkit.observability` gives one to each when tracing is on)."""

    def handled(self, req: codec.Request, answer: Awaitable[Reply]) -> Awaitable[Reply]: ...

    def received(self, note: codec.Notification, handle: Callable[[], None]) -> None: ...

    def asked(self, request_id: Any, method: str, params: dict[str, Any],
              send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Awaitable[Any]: ...

    def pushed(self, method: str, params: dict[str, Any] | None,
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> Awaitable[None]: ...

    def closed(self) -> None: ...


class SessionObservers(Protocol):
    """``Server.session_observer``: makes the observer of each new session."""

    def session(self, session: LegacySession, resumed: bool = False) -> SessionObserver: ...

    def notified(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        """A notification outside any legacy session (a 2026-07-28 client's), handled by ``handle()``."""
        ...


class ObserverChain:
    """Two :class:`SessionObservers` as one (``Server.add_session_observer``): ``outer``
    wraps ``inner``, as a middleware added later wraps one added before."""

    __slots__ = ("outer", "inner")

    def __init__(self, outer: SessionObservers, inner: SessionObservers) -> None:
        self.outer = outer
        self.inner = inner

    def session(self, session: LegacySession, resumed: bool = False) -> SessionObserver:
        return _ChainedSession(self.outer.session(session, resumed), self.inner.session(session, resumed))

    def notified(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        inner = self.inner
        self.outer.notified(note, lambda: inner.notified(note, handle))


class _ChainedSession:
    __slots__ = ("outer", "inner")

    def __init__(self, outer: SessionObserver, inner: SessionObserver) -> None:
        self.outer = outer
        self.inner = inner

    def handled(self, req: codec.Request, answer: Awaitable[Reply]) -> Awaitable[Reply]:
        return self.outer.handled(req, self.inner.handled(req, answer))

    def received(self, note: codec.Notification, handle: Callable[[], None]) -> None:
        inner = self.inner
        self.outer.received(note, lambda: inner.received(note, handle))

    def asked(self, request_id: Any, method: str, params: dict[str, Any],
              send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Awaitable[Any]:
        inner = self.inner
        return self.outer.asked(request_id, method, params, lambda body: inner.asked(request_id, method, body, send))

    def pushed(self, method: str, params: dict[str, Any] | None,
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> Awaitable[None]:
        inner = self.inner
        return self.outer.pushed(method, params, lambda body: inner.pushed(method, body, send))

    def closed(self) -> None:
        self.outer.closed()
        self.inner.closed()


class ClientRequests:
    """Legacy questions: each goes to the client as a real request, on the stream of the
    request that asks (or the session's own), and its answer is awaited."""

    __slots__ = ("session", "emit_raw")

    def __init__(self, session: LegacySession, emit_raw: SendRaw | None) -> None:
        self.session = session
        self.emit_raw = emit_raw

    async def ask(self, requests: InputRequests) -> dict[str, Any]:
        keys = list(requests)
        answers = await asyncio.gather(*(
            self.session.request(requests[k]["method"], requests[k].get("params"), self.emit_raw) for k in keys))
        return dict(zip(keys, answers, strict=True))


class LegacySession:
    """One legacy client: a stdio process, or one ``Mcp-Session-Id`` on HTTP."""

    def __init__(self, server: Server, *, send: SendRaw | None = None, request_timeout: float = 600.0,
                 supported_versions: tuple[str, ...] = versions.LEGACY_VERSIONS, state: dict[str, Any] | None = None,
                 id_prefix: str | None = None) -> None:
        self.server = server
        #: Session-level channel (stdio: stdout; HTTP: the GET stream, when one is open).
        self.send = send
        self.request_timeout = request_timeout
        self.supported_versions = supported_versions
        self.version: str | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.initialized = False  # notifications/initialized received
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        #: Requests being answered, by id (transports register them; notifications/cancelled cancels).
        self.inflight: dict[Any, asyncio.Task[Any]] = {}
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        #: Ids of our requests to the client; with a prefix (a worker's id) they say where
        #: the answer must go when sessions are shared by several workers.
        self._ids: Iterator[Any] = (itertools.count(1) if id_prefix is None
                                    else (f"{id_prefix}.{n}" for n in itertools.count(1)))
        self._pump: asyncio.Task[None] | None = None
        self._sub: Subscription | None = None
        self.closed = False
        #: The OAuth caller the session is bound to (set by the transport): resource updates
        #: of resources it may not read are not forwarded.
        self.auth: Any = None
        #: The address that opened the session over HTTP (set by the transport): ``ctx.peer``.
        self.address: str | None = None
        observers = server.session_observer
        #: Telemetry's view of this session (None: tracing is off).
        self.observer = observers.session(self, state is not None) if observers is not None else None
        if state is not None:
            self.apply_state(state)
            if self.version is not None:
                self._start_pump()

    # ------------------------------------------------------------ shared state
    def export_state(self) -> dict[str, Any]:
        """What this session keeps between requests, as plain data (a shared store keeps it)."""
        return {"version": self.version, "capabilities": self.client_capabilities, "clientInfo": self.client_info,
                "initialized": self.initialized, "logLevel": self.log_level, "subscriptions": sorted(self.subscriptions),
                "address": self.address}

    def apply_state(self, state: dict[str, Any]) -> None:
        """Take on the state of this session as another worker left it."""
        self.version = state.get("version")
        self.client_capabilities = state.get("capabilities") or {}
        self.client_info = state.get("clientInfo")
        self.initialized = bool(state.get("initialized"))
        self.log_level = state.get("logLevel")
        self.subscriptions = set(state.get("subscriptions") or ())
        address = state.get("address")
        self.address = address if isinstance(address, str) else None

    # ------------------------------------------------------------ inbound
    #: Checks an ``initialize`` before any session exists for it.
    validate_initialize = staticmethod(eras.validate_initialize)

    async def handle(self, req: codec.Request, emit_raw: SendRaw | None = None, *, auth: Any = None) -> Reply:
        """Answer one legacy request; ``emit_raw`` is the request's own stream, if any;
        ``auth`` is the OAuth caller (the HTTP transport has bound the session to it)."""
        if auth is not None:
            self.auth = auth
        try:
            if self.observer is not None and req.method in SESSION_METHODS:  # telemetry: no handler answers these
                return await self.observer.handled(req, self._handle(req, emit_raw, auth))
            return await self._handle(req, emit_raw, auth)
        except errors.MCPError as exc:
            return Reply(codec.encode_error(req.id, exc), exc.code)

    async def _handle(self, req: codec.Request, emit_raw: SendRaw | None, auth: Any = None) -> Reply:
        method = req.method
        params = codec.params_dict(req.params)
        if method == "initialize":
            return self._initialize(req.id, params)
        if method == "ping":
            return Reply(codec.encode_result(req.id, {}), None)
        if self.version is None:
            raise errors.invalid_request("the session is not initialized: send initialize first")
        if params is not None and not isinstance(params, dict):
            raise errors.invalid_params("params must be an object")
        params = dict(params or {})
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in M.LOG_LEVEL_RANK:
                raise errors.invalid_params(f"unknown log level {level!r}")
            self.log_level = level
            return Reply(codec.encode_result(req.id, {}), None)
        if method in ("resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise errors.invalid_params(f"{method}: uri must be a string")
            if "resources" not in self.server.capability_names:
                raise errors.method_not_found(method)
            subscribe = method == "resources/subscribe"
            if subscribe != (uri in self.subscriptions):
                (self.subscriptions.add if subscribe else self.subscriptions.discard)(uri)
                self.server.subscription_changed(uri, subscribe, *self._who())
            return Reply(codec.encode_result(req.id, {}), None)
        if method in eras.MODERN_ONLY_METHODS:
            raise errors.method_not_found(method)
        # Everything else is the modern handler with a _meta built from this session.
        given = params.get("_meta")
        if given is not None and not isinstance(given, dict):
            raise errors.invalid_params("params._meta must be an object")
        meta = dict(given or {})
        meta[M.PROTOCOL_VERSION] = self.version
        meta[M.CLIENT_CAPABILITIES] = self.client_capabilities
        if self.client_info is not None:
            meta[M.CLIENT_INFO] = self.client_info
        if self.log_level is not None:
            meta[M.LOG_LEVEL] = self.log_level
        params["_meta"] = meta
        added = self.server.extension_methods  # extensions' methods serve this era too
        checked = inbound.check_request(method, params, (self.version,), self.server.capability_names,
                                        dict(added) if added else None)
        era = LegacyEra(ClientRequests(self, emit_raw))
        if auth is not None:
            return await self.server.dispatch(req, checked, self._emitter(emit_raw), era=era, principal=auth.key,
                                              auth=auth, peer=self.address)
        return await self.server.dispatch(req, checked, self._emitter(emit_raw), era=era, peer=self.address)

    def _initialize(self, rid: Any, params: Any) -> Reply:
        if self.version is not None:
            raise errors.invalid_request("already initialized: initialize may be sent once per session")
        bad = self.validate_initialize(params)
        if bad is not None:
            raise bad
        self.version = eras.negotiate_legacy(params["protocolVersion"], self.supported_versions)
        self.client_capabilities = params["capabilities"]
        self.client_info = params["clientInfo"]
        server = self.server
        result: dict[str, Any] = {
            "protocolVersion": self.version,
            "capabilities": {**msgspec.to_builtins(server.capabilities), **server.legacy_capabilities},
            "serverInfo": msgspec.to_builtins(server.info),
        }
        if server.instructions is not None:
            result["instructions"] = server.instructions
        self._start_pump()
        return Reply(codec.encode_result(rid, result), None)

    def handle_notification(self, note: codec.Notification) -> None:
        if self.observer is not None:  # telemetry: a SERVER span around handling it
            self.observer.received(note, lambda: self._notification(note))
        else:
            self._notification(note)

    def _notification(self, note: codec.Notification) -> None:
        if note.method == "notifications/initialized":
            self.initialized = True
        elif note.method == "notifications/cancelled":
            rid = cancelled_request_id(note.params)
            task = self.inflight.get(rid) if rid is not None else None
            if task is not None:
                task.cancel()
        # notifications/roots/list_changed and others: nothing is cached, so nothing to do.

    def handle_response(self, resp: codec.Response) -> None:
        """A client's answer to one of our requests."""
        fut = self._pending.pop(resp.id, None)
        if fut is None or fut.done():
            log.debug("ignoring a response to unknown request %r", resp.id)
            return
        if resp.error is not None:
            err = resp.error
            fut.set_exception(errors.MCPError(err.get("code", 0), err.get("message", ""), err.get("data")))
        else:
            fut.set_result(resp.result if resp.result is not None else {})

    # ------------------------------------------------------------ outbound
    def _emitter(self, emit_raw: SendRaw | None) -> Emit:
        async def emit(method: str, params: dict[str, Any]) -> None:
            target = emit_raw or self.send
            if target is not None:
                await target(codec.encode_notification(method, params))

        return emit

    async def request(self, method: str, params: dict[str, Any] | None, emit_raw: SendRaw | None = None) -> Any:
        """Send a server-to-client request (sampling, elicitation, roots) and await the answer."""
        target = emit_raw or self.send
        if target is None:
            raise errors.internal_error(f"no channel to send {method} to the client")
        rid = next(self._ids)
        if self.observer is not None:  # telemetry: a CLIENT span, its context in params._meta
            return await self.observer.asked(rid, method, params or {}, lambda body: self._ask(target, rid, method, body))
        return await self._ask(target, rid, method, params)

    async def _ask(self, target: SendRaw, rid: Any, method: str, params: dict[str, Any] | None) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await target(codec.encode_request(rid, method, params or {}))
            return await asyncio.wait_for(fut, self.request_timeout)
        except TimeoutError:
            raise errors.internal_error(f"the client did not answer {method} in time") from None
        finally:
            self._pending.pop(rid, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self.send is not None and not self.closed:
            try:
                if self.observer is not None:  # telemetry: a CLIENT span, its context in params._meta
                    await self.observer.pushed(method, params, self._push(method))
                else:
                    await self.send(codec.encode_notification(method, params))
            except Exception:  # the session's stream is gone; the client re-opens or ends it
                log.debug("dropped %s: the session stream is closed", method)

    def _push(self, method: str) -> Callable[[dict[str, Any]], Awaitable[None]]:
        async def push(params: dict[str, Any]) -> None:
            if self.send is not None:
                await self.send(codec.encode_notification(method, params))

        return push

    def _start_pump(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._sub = self.server.bus.subscribe()
        self._pump = asyncio.ensure_future(self._forward(self._sub))

    async def _forward(self, sub: Subscription) -> None:
        """Push every list change and subscribed resource updates, as 2025-11-25 sessions expect."""
        while True:
            async for change in sub:
                note = notification_for(change.kind, change.uri, lists=ALL_LISTS, uris=self.subscriptions)
                if note is not None and (self.auth is None or change.uri is None or allowed(
                        self.auth, resource_scopes(self.server.resources, self.server.resource_templates, change.uri))):
                    await self.notify(*note)
            if self.closed:
                return
            # The bus ended our subscription (a shared bus lost its connection): subscribe again.
            await asyncio.sleep(0.5)
            if self.closed:
                return
            sub = self._sub = self.server.bus.subscribe()

    def _who(self) -> tuple[str | None, dict[str, Any] | None]:
        """This session's caller key and client capabilities (for subscription watchers)."""
        return (self.auth.key if self.auth is not None else None), self.client_capabilities

    def close(self) -> None:
        if not self.closed:
            if self.observer is not None:  # telemetry: mcp.server.session.duration
                self.observer.closed()
            for uri in self.subscriptions:
                self.server.subscription_changed(uri, False, *self._who())
        self.closed = True
        if self._sub is not None:
            self._sub.close()
        if self._pump is not None:
            self._pump.cancel()
        for task in list(self.inflight.values()):
            task.cancel()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(errors.internal_error("the session ended"))
        self._pending.clear()
