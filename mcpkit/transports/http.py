"""Streamable HTTP (2026-07-28, stateless) as a plain ASGI application.

Every JSON-RPC message is its own POST. A request is answered with ``application/json``,
or with a ``text/event-stream`` that belongs to that request alone when the handler sends
progress or log notifications (or runs long enough to need keep-alives). Headers that
mirror the body are checked against it; Origin and Host are checked against an allow-list;
bodies are size-limited; a client disconnect cancels the handler.

The same endpoint serves 2025-11-25 sessions (``_http_legacy``); where each request goes
is decided by :mod:`mcpkit.protocol.routing`, and the response plumbing of both eras is
in ``_asgi``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, assert_never

from .._timers import Schedule, schedule_for
from ..protocol import codec, errors, routing
from ..protocol.routing import OpenSession, ServeModern
from . import _asgi, _limits, _resource, routes
from ._asgi import OnSuspend, Receive, Scope, Send, respond_json
from ._envelope import Envelope
from ._gate import FORBIDDEN_HOST, PRM_PREFIX, Gate
from ._hosts import LOOPBACK_HOSTS, HostPolicy
from ._http_legacy import LegacyEndpoint, SessionStore
from ._interface import Authenticator, AuthPrincipal, Dispatcher

if TYPE_CHECKING:
    from ._peer import TrustedProxies

__all__ = ["DEFAULT_MAX_BODY", "LOOPBACK_HOSTS", "HostPolicy", "HttpApp", "run_http_server"]

log = logging.getLogger("mcpkit.http")

#: Seconds a stateless request's handler waits before a task watches for its client going away.
WATCH_AFTER = 0.05

DEFAULT_MAX_BODY = 4 * 1024 * 1024

# Errors of the inbound check (the request never reached a handler) whose HTTP status the
# spec fixes; a handler's errors are 200 but for these few.
_REJECTED_STATUS = {
    errors.PARSE_ERROR: 400,
    errors.INVALID_REQUEST: 400,
    errors.INVALID_PARAMS: 400,  # missing or malformed _meta
    errors.HEADER_MISMATCH: 400,
    errors.UNSUPPORTED_PROTOCOL_VERSION: 400,
    errors.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    errors.METHOD_NOT_FOUND: 404,
}
_DISPATCH_STATUS = {errors.MISSING_REQUIRED_CLIENT_CAPABILITY: 400, errors.UNSUPPORTED_PROTOCOL_VERSION: 400,
                    errors.HEADER_MISMATCH: 400, errors.RATE_LIMITED: 429}

_WANTED_HEADERS = frozenset({b"host", b"origin", b"accept", b"content-length", b"content-type", b"authorization",
                             b"last-event-id", b"dpop"})
#: Header names as ``str``, decoded once: the wanted ones and the standard ``Mcp-*`` ones.
_NAMES = {k: k.decode("latin-1") for k in _WANTED_HEADERS | {
    b"mcp-protocol-version", b"mcp-method", b"mcp-name", b"mcp-session-id"}}


class HttpApp:
    """The ASGI application behind ``Server.http_app()``."""

    def __init__(
        self,
        server: Dispatcher,
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        keepalive_interval: float = 15.0,
        session_idle_timeout: float = 1800.0,
        session_unused_timeout: float | None = 30.0,
        max_sessions: int = 1000,
        max_sessions_per_client: int | None = 16,
        auth: Authenticator | None = None,
        session_store: SessionStore | None = None,
        public_url: str | None = None,
        healthz: str | None = "/healthz",
        readyz: str | None = "/readyz",
        trusted_proxies: Iterable[str] | None = None,
    ) -> None:
        self.server = server
        serving = server.serving
        self.path = path.rstrip("/") or "/"
        from ._health import health_paths

        #: The probe paths (``healthz=``/``readyz=``; None or "" turns one off): path -> kind.
        self.probes = health_paths(self.path, healthz, readyz)
        #: Whose ``X-Forwarded-For`` names the caller (``ctx.peer``); None: nobody's (the default).
        self.trusted_proxies: TrustedProxies | None = None
        if trusted_proxies is not None:
            from ._peer import TrustedProxies

            self.trusted_proxies = TrustedProxies(trusted_proxies)
        self.policy = HostPolicy(allowed_hosts, allowed_origins)
        #: OAuth protection (``mcpkit.auth.server.ResourceServerAuth``): ``auth``, else the
        #: server's own ``Server(auth=...)``; None (open to all) only when neither is set.
        self.auth: Authenticator | None = _resource.serving_auth(server, auth)
        auth = self.auth
        #: The protected resource URL when fixed (the auth's ``resource=``, else ``public_url``);
        #: None: the local address of each request's socket (never a request header).
        self.resource = _resource.fixed_resource(auth, public_url, self.policy.any_host)
        self.gate = Gate(auth, self.resource, self.path, self.policy) if auth is not None else None
        self.max_body = max_body_bytes
        self.keepalive = keepalive_interval
        #: The stateless exchanges' due times (disconnect watchers, keep-alives): one timer.
        self.timers: Schedule | None = None
        #: Whether 2025-11-25 sessions are served beside the stateless wire (fixed at creation).
        self.legacy = serving.legacy
        if session_store is None:
            session_store = serving.session_store  # a server backed by a shared store brings its own
        self.legacy_endpoint = LegacyEndpoint(
            server, idle_timeout=session_idle_timeout, max_sessions=max_sessions, keepalive=keepalive_interval,
            store=session_store, max_per_client=max_sessions_per_client, unused_timeout=session_unused_timeout)
        #: The live legacy sessions (empty when the server serves 2026-07-28 only).
        self.sessions = self.legacy_endpoint.sessions
        #: Extra HTTP routes beside the MCP endpoint (server cards...), by absolute path.
        self.routes = routes.mount(serving.http_routes, self.path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """guard -> authenticate -> read -> decode -> route -> serve -> respond."""
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await _asgi.lifespan(receive, send, self.server)
            return
        hdrs = await self._guard(scope, send)
        if hdrs is None:
            return
        principal: AuthPrincipal | None = None
        resource = ""
        if self.gate is not None:
            caller = await self.gate.caller(scope, hdrs, receive, send, self.server, self.max_body)
            if caller is None:
                return
            principal, resource = caller
        method = scope["method"]
        if method != "POST":
            await self._not_post(method, hdrs, receive, send, principal)
            return
        body = await _asgi.read_body(receive, send, hdrs.get("content-length"), self.max_body)
        if body is None:
            return
        try:
            msg = codec.decode(body)
        except codec.InvalidMessage as exc:
            await _asgi.respond_error(send, 400, exc.error, exc.id)
            return
        route = routing.route_post(msg, hdrs, self.legacy)
        if isinstance(route, ServeModern):  # the hot path
            assert type(msg) is codec.Request
            client = scope.get("client")
            peer = client[0] if client else None
            if self.trusted_proxies is not None:
                peer = self.trusted_proxies.peer(peer, scope["headers"])
            await _Exchange(self, msg, hdrs, receive, send, principal, resource, peer).run()
        elif isinstance(route, OpenSession):
            assert type(msg) is codec.Request
            client = scope.get("client")
            if self.trusted_proxies is not None and client:  # the session quota's caller, as ctx.peer
                client = (self.trusted_proxies.peer(client[0], scope["headers"]),)
            await self.legacy_endpoint.initialize(msg, send, principal, client)
        else:
            await self._settle(route, msg, send, principal, resource)

    # ------------------------------------------------------------------ steps
    async def _guard(self, scope: Scope, send: Send) -> dict[str, str] | None:
        """The headers that matter (names lower-cased), once the path, ``Host``/``Origin``,
        ``Content-Type`` and ``Accept`` passed; None: answered already (404, 403, 415, 406,
        or the protected resource metadata)."""
        path = scope["path"]
        if path != self.path and path.rstrip("/") != self.path:
            probe = self.probes.get(path)
            if probe is not None:  # before auth, rate limits and the Host check: see _health
                from ._health import answer

                await answer(probe, scope, send, self.server, self.policy)
                return None
            if self.gate is not None and path.startswith(PRM_PREFIX):
                await self.gate.metadata(scope, send)
                return None
            if self.routes and (route := self.routes.get(path)) is not None:
                await routes.serve(route, scope, send, self.policy.host_ok, self.path)
                return None
            await _asgi.respond_plain(send, 404, b"Not Found")
            return None
        hdrs: dict[str, str] = {}
        names = _NAMES
        for k, v in scope["headers"]:
            name = names.get(k)
            if name is None:
                if k[:4] != b"mcp-":
                    continue
                name = k.decode("latin-1")  # Mcp-Param-* and other Mcp- headers
            value = v.decode("latin-1")
            hdrs[name] = f"{hdrs[name]}, {value}" if name in hdrs else value
        if not self.policy.host_ok(hdrs.get("host")) or not self.policy.origin_ok(hdrs.get("origin")):
            await _asgi.respond_error(send, 403, FORBIDDEN_HOST)
            return None
        method = scope["method"]
        refused = (_limits.check_post(hdrs) if method == "POST"
                   else _limits.check_get(hdrs) if method == "GET" and self.legacy else None)
        if refused is not None:  # Content-Type (415) and Accept (406)
            await _asgi.respond_error(send, *refused)
            return None
        return hdrs

    async def _settle(self, route: routing.Accept | routing.ToSession | routing.RefuseHttp, msg: codec.Message,
                      send: Send, principal: AuthPrincipal | None = None, resource: str = "") -> None:
        """Every POST route but a stateless request and a new session."""
        match route:
            case routing.Accept():
                observer = self.server.session_observer
                if observer is not None and type(msg) is codec.Notification:  # telemetry: a SERVER span
                    observer.notified(msg, _nothing)
                await _asgi.respond_empty(send, 202)
            case routing.ToSession(session_id=sid):
                if principal is not None and type(msg) is codec.Request:
                    # A session request: the same scopes as the request would need statelessly.
                    assert self.gate is not None
                    needed = self.server.required_scopes(msg.method, codec.params_dict(msg.params))
                    if not await self.gate.admit(send, principal, needed, resource, msg.id):
                        return
                await self.legacy_endpoint.deliver(sid, msg, send, principal)
            case routing.RefuseHttp():
                await _refuse(send, route)
            case unexpected:
                assert_never(unexpected)

    async def _not_post(self, method: str, hdrs: dict[str, str], receive: Receive, send: Send,
                        principal: AuthPrincipal | None = None) -> None:
        match routing.route_method(method, hdrs, self.legacy):
            case routing.SessionStream(session_id=sid):
                await self.legacy_endpoint.open_stream(sid, receive, send, principal)
            case routing.EndSession(session_id=sid):
                await self.legacy_endpoint.end(sid, send, principal)
            case routing.RefuseHttp() as route:
                await _refuse(send, route)
            case unexpected:
                assert_never(unexpected)


async def _refuse(send: Send, route: routing.RefuseHttp) -> None:
    extra = [(b"allow", route.allow.encode())] if route.allow is not None else ()
    await _asgi.respond_error(send, route.status, route.error, route.request_id, extra)


class _Exchange(_asgi.Exchange):
    """One stateless request's answer: JSON by default, switching to SSE on the first
    notification; a client disconnect cancels the handler."""

    __slots__ = ("app", "req", "hdrs", "receive", "sse_ok", "done", "task", "watcher", "timers", "watch_key",
                 "keepalive_key", "principal", "resource", "peer")

    def __init__(self, app: HttpApp, req: codec.Request, hdrs: dict[str, str], receive: Receive, send: Send,
                 principal: AuthPrincipal | None, resource: str, peer: str | None = None) -> None:
        self.send = send  # the base's two fields, set here: no super() call on the hot path
        self.streaming = False
        self.app = app
        self.req = req
        self.hdrs = hdrs
        self.receive = receive
        accept = hdrs.get("accept", "")
        self.sse_ok = "text/event-stream" in accept or "*/*" in accept or not accept
        self.done = False
        self.task: asyncio.Task[Any] | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.timers: Schedule | None = None
        self.watch_key: int | None = None
        self.keepalive_key: int | None = None
        self.principal = principal
        self.resource = resource
        self.peer = peer

    def _suspended(self) -> None:
        """The handler is waiting on something: a disconnect must cancel it, and a long wait
        needs keep-alives. (A handler that never suspends needs neither, so the common fast
        call costs no extra task.) Both are entries on the app's one timer (no timer handle
        per request): the watcher task starts only once the handler has waited
        :data:`WATCH_AFTER` (most waits, e.g. a proxy's backend round trip, are over by then);
        it then sees a client already gone at once."""
        self.task = asyncio.current_task()
        app = self.app
        app.timers = timers = schedule_for(app.timers)
        self.timers = timers
        now = timers.loop.time()
        self.watch_key = timers.add(now + WATCH_AFTER, _Exchange._watch, self)
        if self.sse_ok:
            self.keepalive_key = timers.add(now + app.keepalive, _Exchange._keepalive_due, self)

    def _watch(self) -> None:
        if not self.done:
            self.watcher = asyncio.get_running_loop().create_task(
                _asgi.watch_disconnect(self.receive, self._disconnected))

    async def run(self) -> None:
        """The one call into the server, then the answer."""
        try:
            reply = await OnSuspend(self.app.server.serve(self.req, Envelope(self.hdrs, self.principal, self._emit, self.peer)),
                                    self._suspended)
        except errors.InsufficientScope as need:
            assert self.app.gate is not None and self.principal is not None
            await self.app.gate.forbid(self.send, self.principal, need.scopes, self.resource, self.req.id)
            return
        except asyncio.CancelledError:
            if not self.done:
                # Our own cancellation (client went away): nothing more is sent for this request.
                log.debug("request %r cancelled by client disconnect", self.req.id)
                return
            raise
        finally:
            self.done = True
            if self.timers is not None:
                self.timers.drop(self.watch_key)  # type: ignore[arg-type]
                if self.keepalive_key is not None:
                    self.timers.drop(self.keepalive_key)
            if self.watcher is not None:
                self.watcher.cancel()
        if self.streaming:
            await _asgi.end_stream(self.send, reply.body)
        else:
            code = reply.error_code
            status = ((_REJECTED_STATUS if reply.rejected else _DISPATCH_STATUS).get(code, 200) if code else 200)
            if status == 429:  # over a rate limit: say when to come back (the body's data.retryAfter)
                await _asgi.respond_json_with(self.send, status, reply.body, [(b"retry-after", _retry_after(reply.body))])
            else:
                await respond_json(self.send, status, reply.body)

    def _disconnected(self) -> None:
        if not self.done and self.task is not None:
            self.task.cancel()

    async def _emit(self, method: str, params: dict[str, Any]) -> None:
        if not self.sse_ok or self.done:
            return  # the client cannot take a stream: notifications are optional, the result is not
        await self.message(codec.encode_notification(method, params))

    def _keepalive_due(self) -> None:
        if not self.done:
            asyncio.get_running_loop().create_task(self._keepalive())

    def _is_done(self) -> bool:
        return self.done

    async def _keepalive(self) -> None:
        try:
            if not self.streaming:
                await self.start_stream()
        except Exception:  # the connection is gone; the disconnect watcher cancels the handler
            return
        await _asgi.keep_alive(self.send, self.app.keepalive, self._is_done)


def _retry_after(body: bytes) -> bytes:
    """The ``Retry-After`` seconds of a rate-limit refusal's JSON-RPC body (1 when it names none)."""
    import json

    try:
        seconds = json.loads(body)["error"]["data"]["retryAfter"]
    except (ValueError, KeyError, TypeError):
        seconds = 1
    return str(max(1, int(seconds)) if isinstance(seconds, (int, float)) else 1).encode()


def run_http_server(
    server: Dispatcher,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    access_log: bool = False,
    log_level: str = "warning",
    sockets: list[Any] | None = None,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    runner: Callable[[Coroutine[Any, Any, None]], object] | None = None,
    loop: str = "auto",
    **app_options: Any,
) -> None:
    """Serve ``server`` on uvicorn (httptools and uvloop when installed, h11 otherwise).

    ``sockets``: already-listening sockets to serve (workers sharing one; then ``host`` and
    ``port`` are not bound). ``on_shutdown`` runs after the server stopped accepting.
    ``runner`` runs the serving coroutine instead of uvicorn's own ``asyncio.run`` (a proxy
    runs it on its backend's loop, so that the front and the backend client share one loop).
    ``loop``: ``"auto"`` (uvloop where it is installed, else asyncio's), ``"asyncio"`` or ``"uvloop"``.
    The server's own ``auth`` applies (unless ``auth=`` names another); its audience is the
    auth's ``resource=``, else ``public_url``, else the address bound here (a wildcard host
    without either is refused with ValueError).
    ``app_options`` are :class:`HttpApp`'s (``allowed_hosts``, ``max_body_bytes``...) and the
    limits of :class:`mcpkit.transports._limits.Limits`: ``max_header_bytes``, ``max_headers``,
    ``request_timeout``, ``keep_alive_timeout``, ``max_connections``, ``max_inflight``,
    ``retry_after`` (see the README's "Limits").
    """
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise SystemExit("mcpkit: serving HTTP needs uvicorn: pip install 'mcpkit[http]'") from exc
    from ._loops import loop_factory

    loop_factory(loop)  # ValueError now for an unknown loop, or uvloop where it is not installed
    if app_options.get("allowed_hosts") is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("binding %s with the loopback-only Host allow-list; pass allowed_hosts= for remote clients", host)
    limits = _limits.Limits.pop_from(app_options)
    _resource.bind(server, app_options, host, port, path, sockets)  # the audience: the address bound
    app = HttpApp(server, path=path, **app_options)
    # proxy_headers off: X-Forwarded-* is not trusted (the peer address is a session quota key).
    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, log_level=log_level, lifespan="off",
                            server_header=False, date_header=False, proxy_headers=False, loop=loop,
                            **_limits.uvicorn_options(limits))

    class _Server(uvicorn.Server):
        async def serve(self, sockets: Any = None) -> None:
            if not server.serving.lifespan:
                await super().serve(sockets)
                return
            # uvicorn re-raises the signal that stopped it as it returns: hold it until the
            # lifespan has shut down, then let the process's own handler have it.
            held: list[int] = []
            originals = _hold_signals(held)
            try:
                async with server.running():  # once per process, around serving (LifespanError: not started)
                    if not held:
                        await super().serve(sockets)
            finally:
                _release_signals(originals, held)

        async def shutdown(self, sockets: Any = None) -> None:
            # Listen streams never end on their own: close them gracefully so shutdown can finish.
            server.close_listeners()
            app.legacy_endpoint.close_all()
            await super().shutdown(sockets)
            if on_shutdown is not None:
                await on_shutdown()

    if runner is None:
        _Server(config).run(sockets=sockets)
    else:
        runner(_Server(config).serve(sockets=sockets))


def _hold_signals(held: list[int]) -> dict[int, Any]:
    """Record SIGINT/SIGTERM in ``held`` instead of acting on them (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, lambda signum, _frame: held.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}


def _release_signals(originals: dict[int, Any], held: list[int]) -> None:
    import signal

    for sig, handler in originals.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    for sig in dict.fromkeys(held):
        signal.raise_signal(sig)


def _nothing() -> None:
    """What a stateless server does with a notification it accepts."""
