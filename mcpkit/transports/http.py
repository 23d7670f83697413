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
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, assert_never

from ..protocol import codec, errors, inbound, routing
from ..protocol import headers as H
from ..protocol.routing import OpenSession, ServeModern
from ..protocol.types import CallToolParams
from . import _asgi, _limits, _resource
from ._asgi import OnSuspend, Receive, Scope, Send, respond_json
from ._http_legacy import LegacyEndpoint, SessionStore
from ._interface import Authenticator, AuthRefusal, Dispatcher

log = logging.getLogger("mcpkit.http")

DEFAULT_MAX_BODY = 4 * 1024 * 1024
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

# Errors found before dispatch whose HTTP status the spec fixes (others are 200).
_PRE_DISPATCH_STATUS = {
    errors.PARSE_ERROR: 400,
    errors.INVALID_REQUEST: 400,
    errors.INVALID_PARAMS: 400,  # missing or malformed _meta
    errors.HEADER_MISMATCH: 400,
    errors.UNSUPPORTED_PROTOCOL_VERSION: 400,
    errors.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    errors.METHOD_NOT_FOUND: 404,
}
_DISPATCH_STATUS = {errors.MISSING_REQUIRED_CLIENT_CAPABILITY: 400, errors.UNSUPPORTED_PROTOCOL_VERSION: 400,
                    errors.HEADER_MISMATCH: 400}

_WANTED_HEADERS = frozenset({b"host", b"origin", b"accept", b"content-length", b"content-type", b"authorization",
                             b"last-event-id", b"dpop"})
_PRM_PREFIX = "/.well-known/oauth-protected-resource"
_FORBIDDEN = errors.MCPError(errors.INVALID_REQUEST, "Forbidden: Origin or Host is not allowed (DNS rebinding protection)")
_NO_RESOURCE = errors.MCPError(errors.INTERNAL_ERROR, "This server cannot tell its own URL, so it cannot check access "
                               "tokens; its operator must configure the resource URL")


_HOSTPORT = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?")


def _split_host(value: str) -> tuple[str, str | None] | None:
    """``host[:port]`` -> (host, port), or None when it is not a plain authority (userinfo, paths...)."""
    m = _HOSTPORT.fullmatch(value.strip().lower())
    return (m.group(1), m.group(2)) if m else None


class HostPolicy:
    """DNS-rebinding protection: which ``Host`` and ``Origin`` values are accepted.

    Entries are host names (any port) or ``host:port``; ``"*"`` accepts anything. An absent
    ``Origin`` (non-browser clients) is accepted.
    """

    def __init__(self, allowed_hosts: Iterable[str] | None, allowed_origins: Iterable[str] | None) -> None:
        self._seen: dict[str, bool] = {}
        hosts = list(allowed_hosts) if allowed_hosts is not None else list(LOOPBACK_HOSTS)
        self.any_host = "*" in hosts
        self.hosts = {h.lower() for h in hosts}
        if allowed_origins is None:
            self.any_origin = False
            self.origins: set[str] = set()
            self.origin_hosts = {h for h in self.hosts if h != "*"}
        else:
            origins = list(allowed_origins)
            self.any_origin = "*" in origins
            self.origins = {o.lower().rstrip("/") for o in origins}
            self.origin_hosts = set()

    def _authority_ok(self, authority: str, allowed: set[str]) -> bool:
        hp = _split_host(authority)
        if hp is None:
            return False
        host, port = hp
        return host in allowed or (port is not None and f"{host}:{port}" in allowed)

    def host_ok(self, host: str | None) -> bool:
        if self.any_host:
            return True
        if not host:
            return False
        # Clients send the same Host on every request: remember verdicts (bounded).
        ok = self._seen.get(host)
        if ok is None:
            ok = self._authority_ok(host, self.hosts)
            self._remember(host, ok)
        return ok

    def _remember(self, key: str, ok: bool) -> None:
        if len(self._seen) >= 512:
            self._seen.clear()
        self._seen[key] = ok

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None or self.any_origin:
            return True
        ok = self._seen.get("\x00" + origin)
        if ok is None:
            ok = self._origin_ok(origin)
            self._remember("\x00" + origin, ok)
        return ok

    def _origin_ok(self, origin: str) -> bool:
        origin = origin.strip().lower()
        if origin.rstrip("/") in self.origins:
            return True
        # An Origin is scheme://host[:port] and nothing else (no userinfo, path, query).
        scheme, sep, authority = origin.partition("://")
        if not sep or scheme not in ("http", "https") or authority.endswith("/"):
            return False
        return self._authority_ok(authority, self.origin_hosts)


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
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.policy = HostPolicy(allowed_hosts, allowed_origins)
        #: OAuth protection (``mcpkit.auth.server.ResourceServerAuth``): ``auth``, else the
        #: server's own ``Server(auth=...)``; None (open to all) only when neither is set.
        self.auth: Authenticator | None = _resource.serving_auth(server, auth)
        auth = self.auth
        #: The protected resource URL when fixed (the auth's ``resource=``, else ``public_url``);
        #: None: the local address of each request's socket (never a request header).
        self.resource = _resource.fixed_resource(auth, public_url, self.policy.any_host)
        self.max_body = max_body_bytes
        self.keepalive = keepalive_interval
        #: Whether 2025-11-25 sessions are served beside the stateless wire (fixed at creation).
        self.legacy = server.legacy
        if session_store is None:
            # A server backed by a shared store (``Server(session_store=...)``) brings its own.
            session_store = getattr(server, "session_store", None)
        self.legacy_endpoint = LegacyEndpoint(
            server, idle_timeout=session_idle_timeout, max_sessions=max_sessions, keepalive=keepalive_interval,
            store=session_store, max_per_client=max_sessions_per_client, unused_timeout=session_unused_timeout)
        #: The live legacy sessions (empty when the server serves 2026-07-28 only).
        self.sessions = self.legacy_endpoint.sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _asgi.lifespan(receive, send)

    # ------------------------------------------------------------------ plumbing
    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path != self.path and path.rstrip("/") != self.path:
            if self.auth is not None and path.startswith(_PRM_PREFIX):
                await self._metadata(scope, send)
                return
            await _asgi.respond_plain(send, 404, b"Not Found")
            return
        hdrs: dict[str, str] = {}
        for k, v in scope["headers"]:
            # Only the headers we read are decoded (names arrive lower-cased from ASGI);
            # a repeated header is joined as HTTP allows, so a duplicate can't slip past a check.
            if k[:4] == b"mcp-" or k in _WANTED_HEADERS:
                name = k.decode("latin-1")
                value = v.decode("latin-1")
                hdrs[name] = f"{hdrs[name]}, {value}" if name in hdrs else value
        if not self.policy.host_ok(hdrs.get("host")) or not self.policy.origin_ok(hdrs.get("origin")):
            await _asgi.respond_error(send, 403, _FORBIDDEN)
            return
        method = scope["method"]
        refused = (_limits.check_post(hdrs) if method == "POST"
                   else _limits.check_get(hdrs) if method == "GET" and self.legacy else None)
        if refused is not None:  # Content-Type (415) and Accept (406)
            await _asgi.respond_error(send, *refused)
            return
        principal: Any = None
        resource = ""
        if self.auth is not None:
            found = self._resource(scope)
            if found is None:
                await _asgi.respond_error(send, 503, _NO_RESOURCE)
                return
            resource = found
            principal = await self.auth.authenticate(method, resource, hdrs, scope.get("query_string", b""))
            if type(principal) is AuthRefusal:
                await self._refused(principal, method, hdrs, receive, send, resource)
                return
        if method != "POST":
            await self._not_post(method, hdrs, receive, send, principal)
            return
        body = await self._read_body(receive, send, hdrs)
        if body is None:
            return
        if principal is not None:
            await self._authorized(body, hdrs, receive, send, principal, resource)
            return
        try:
            msg = codec.decode(body)
        except codec.InvalidMessage as exc:
            await _asgi.respond_error(send, 400, exc.error, exc.id)
            return
        if type(msg) is codec.Request:
            route = routing.route_request(msg, hdrs, self.legacy)
            if isinstance(route, ServeModern):  # the hot path
                await self._request(msg, hdrs, receive, send)
            elif isinstance(route, OpenSession):
                await self.legacy_endpoint.initialize(msg, send, client=scope.get("client"))
            else:
                await self._settle(route, msg, send)
        elif type(msg) is codec.Notification:
            await self._settle(routing.route_notification(msg, hdrs, self.legacy), msg, send)
        else:
            assert type(msg) is codec.Response
            await self._settle(routing.route_response(msg, hdrs, self.legacy), msg, send)

    async def _settle(self, route: routing.Accept | routing.ToSession | routing.RefuseHttp, msg: codec.Message,
                      send: Send, principal: Any = None) -> None:
        """Every POST route but a stateless request and a new session."""
        match route:
            case routing.Accept():
                await _asgi.respond_empty(send, 202)
            case routing.ToSession(session_id=sid):
                await self.legacy_endpoint.deliver(sid, msg, send, principal)
            case routing.RefuseHttp():
                await _refuse(send, route)
            case unexpected:
                assert_never(unexpected)

    async def _not_post(self, method: str, hdrs: dict[str, str], receive: Receive, send: Send,
                        principal: Any = None) -> None:
        match routing.route_method(method, hdrs, self.legacy):
            case routing.SessionStream(session_id=sid):
                await self.legacy_endpoint.open_stream(sid, receive, send, principal)
            case routing.EndSession(session_id=sid):
                await self.legacy_endpoint.end(sid, send, principal)
            case routing.RefuseHttp() as route:
                await _refuse(send, route)
            case unexpected:
                assert_never(unexpected)

    async def _read_body(self, receive: Receive, send: Send, hdrs: dict[str, str]) -> bytes | None:
        limit = self.max_body
        declared = hdrs.get("content-length")
        if declared is not None:
            try:
                too_big = int(declared) > limit
            except ValueError:
                too_big = False
            if too_big:
                await self._too_large(send)
                return None
        msg = await receive()
        body: bytes = msg.get("body", b"")
        if not msg.get("more_body"):
            if len(body) > limit:
                await self._too_large(send)
                return None
            return body
        chunks = [body]
        size = len(body)
        while msg.get("more_body"):
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._too_large(send)
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def _too_large(self, send: Send) -> None:
        # Connection: close: the rest of the body is not wanted; the server drains a bounded
        # amount of it before closing (a lingering close), instead of reading all of it.
        await _asgi.respond_error(send, 413, errors.invalid_request(f"the request body is larger than {self.max_body} bytes"),
                                  headers=[(b"connection", b"close")])

    # ------------------------------------------------------------------ requests
    async def _request(self, req: codec.Request, hdrs: dict[str, str], receive: Receive, send: Send,
                       principal: Any = None, resource: str = "") -> None:
        server = self.server
        try:
            checked = server.check(req)
        except errors.MCPError as exc:
            exc = self._header_error_first(req, hdrs, exc)
            await _asgi.respond_error(send, _PRE_DISPATCH_STATUS.get(exc.code, 200), exc, req.id)
            return
        p = checked.params
        if req.method == "subscriptions/listen":
            accept = hdrs.get("accept", "")
            if accept and "text/event-stream" not in accept and "*/*" not in accept:
                # Its acknowledgement and notifications can only travel on an event stream.
                await _asgi.respond_error(send, 400, errors.invalid_request(
                    "subscriptions/listen answers with text/event-stream; the Accept header must allow it"), req.id)
                return
        name_params: dict[str, Any] | None = None
        annotations = None
        if req.method == "tools/call":
            assert isinstance(p, CallToolParams)
            name_params = {"name": p.name, "arguments": p.arguments}
            annotations = server.tool_header_map(p.name)
        else:
            source = H.NAME_SOURCES.get(req.method)  # prompts/get, resources/read, tasks/*
            if source is not None:
                name_params = {source: getattr(p, source, None)}
        try:
            H.check_request_headers(hdrs, req.method, name_params, checked.meta.protocolVersion, annotations,
                                    supported_versions=server.supported_versions, lowered=True)
        except errors.MCPError as exc:
            await _asgi.respond_error(send, 400, exc, req.id)
            return
        if principal is not None:
            assert self.auth is not None
            refusal = self.auth.authorize(principal, server.required_scopes(req.method, p), resource)
            if refusal is not None:
                await _auth_refusal(send, refusal, req.id)
                return
        await _Exchange(self, req, checked, hdrs, receive, send, principal).run()

    def _header_error_first(self, req: codec.Request, hdrs: dict[str, str], exc: errors.MCPError) -> errors.MCPError:
        """A header/body disagreement outranks version and method errors (but not a missing _meta)."""
        if exc.code not in (errors.UNSUPPORTED_PROTOCOL_VERSION, errors.METHOD_NOT_FOUND, errors.INVALID_PARAMS):
            return exc
        params = codec.params_dict(req.params) or {}
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
        if not isinstance(version, str):
            return exc  # no body version: the missing _meta field is the error to report
        try:
            H.check_request_headers(hdrs, req.method, params, version, None,
                                    supported_versions=self.server.supported_versions, lowered=True)
        except errors.MCPError as header_exc:
            return header_exc
        return exc

    # ------------------------------------------------------------------ OAuth
    def _resource(self, scope: Scope) -> str | None:
        """The canonical URL of this endpoint: the fixed one, else from the local address of
        the socket the request came in on (never from the ``Host`` header); None: unknown."""
        assert self.auth is not None
        if self.resource is not None:
            return self.resource
        where = _resource.socket_authority(scope.get("server"))
        if where is None:
            log.error("cannot tell this endpoint's URL (the audience tokens must name): give ResourceServerAuth(resource=...)")
            return None
        root = scope.get("root_path", "")
        path = self.path if not root or self.path.startswith(root) else root + self.path
        return self.auth.resource_url(scope.get("scheme", "http"), where, path)

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """RFC 9728 metadata at the path-inserted URL, and at the root when this app owns it."""
        assert self.auth is not None
        hdrs = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in (b"host", b"origin")}
        if not self.policy.host_ok(hdrs.get("host")):
            await _asgi.respond_error(send, 403, _FORBIDDEN)
            return
        resource = self._resource(scope)
        if resource is None:
            await _asgi.respond_error(send, 503, _NO_RESOURCE)
            return
        from urllib.parse import urlsplit

        suffix = scope["path"][len(_PRM_PREFIX):].rstrip("/")
        own = urlsplit(resource).path.rstrip("/")
        root_ok = suffix == "" and getattr(self.auth, "serve_root_metadata", True)
        if suffix != own and not root_ok:
            await _asgi.respond_plain(send, 404, b"Not Found")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _asgi.respond_plain(send, 405, b"Method Not Allowed")
            return
        await _asgi.respond_json_with(send, 200, self.auth.metadata_document(resource), [
            (b"cache-control", b"public, max-age=3600"), (b"access-control-allow-origin", b"*")])

    async def _refused(self, refusal: AuthRefusal, method: str, hdrs: dict[str, str], receive: Receive, send: Send,
                       resource: str) -> None:
        """A 401; for a request whose operation needs scopes of its own, the challenge names
        them too (one authorization instead of a 401 and then a 403)."""
        request_id = None
        if method == "POST" and refusal.status == 401:
            body = await self._read_body(receive, send, hdrs)
            if body is None:
                return  # too large: answered already
            try:
                msg = codec.decode(body)
            except codec.InvalidMessage:
                msg = None
            if type(msg) is codec.Request:
                assert self.auth is not None
                request_id = msg.id
                needed = self.server.required_scopes(msg.method, codec.params_dict(msg.params))
                if needed:
                    refusal = self.auth.rescope(refusal, needed, resource)
        await _auth_refusal(send, refusal, request_id)

    async def _authorized(self, body: bytes, hdrs: dict[str, str], receive: Receive, send: Send, principal: Any,
                          resource: str) -> None:
        """A POST from an authenticated caller (the same routes, with the caller carried along)."""
        try:
            msg = codec.decode(body)
        except codec.InvalidMessage as exc:
            await _asgi.respond_error(send, 400, exc.error, exc.id)
            return
        if type(msg) is codec.Request:
            route = routing.route_request(msg, hdrs, self.legacy)
            if isinstance(route, ServeModern):
                await self._request(msg, hdrs, receive, send, principal, resource)
            elif isinstance(route, OpenSession):
                await self.legacy_endpoint.initialize(msg, send, principal)
            elif isinstance(route, routing.ToSession):
                assert self.auth is not None
                needed = self.server.required_scopes(msg.method, codec.params_dict(msg.params))
                refusal = self.auth.authorize(principal, needed, resource)
                if refusal is not None:
                    await _auth_refusal(send, refusal, msg.id)
                    return
                await self._settle(route, msg, send, principal)
            else:
                await self._settle(route, msg, send, principal)
        elif type(msg) is codec.Notification:
            await self._settle(routing.route_notification(msg, hdrs, self.legacy), msg, send, principal)
        else:
            assert type(msg) is codec.Response
            await self._settle(routing.route_response(msg, hdrs, self.legacy), msg, send, principal)


async def _auth_refusal(send: Send, refusal: AuthRefusal, request_id: Any = None) -> None:
    extra = [(b"www-authenticate", refusal.challenge.encode("latin-1")), *refusal.headers]
    await _asgi.respond_error(send, refusal.status, refusal.error, request_id, extra)


async def _refuse(send: Send, route: routing.RefuseHttp) -> None:
    extra = [(b"allow", route.allow.encode())] if route.allow is not None else ()
    await _asgi.respond_error(send, route.status, route.error, route.request_id, extra)


class _Exchange(_asgi.Exchange):
    """One stateless request's answer: JSON by default, switching to SSE on the first
    notification; a client disconnect cancels the handler."""

    __slots__ = ("app", "req", "checked", "receive", "sse_ok", "done", "task", "watcher", "timer", "principal")

    def __init__(self, app: HttpApp, req: codec.Request, checked: inbound.Checked, hdrs: dict[str, str],
                 receive: Receive, send: Send, principal: Any = None) -> None:
        self.send = send  # the base's two fields, set here: no super() call on the hot path
        self.streaming = False
        self.app = app
        self.req = req
        self.checked = checked
        self.receive = receive
        accept = hdrs.get("accept", "")
        self.sse_ok = "text/event-stream" in accept or "*/*" in accept or not accept
        self.done = False
        self.task: asyncio.Task[Any] | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.principal = principal

    def _suspended(self) -> None:
        """The handler is waiting on something: from now on a disconnect must cancel it, and a
        long wait needs keep-alives. (A handler that never suspends needs neither, so the
        common fast call costs no extra task.)"""
        loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.watcher = loop.create_task(_asgi.watch_disconnect(self.receive, self._disconnected))
        if self.sse_ok:
            self.timer = loop.call_later(self.app.keepalive, self._keepalive_due)

    async def run(self) -> None:
        try:
            principal = self.principal
            coro = (self.app.server.run_checked(self.req, self.checked, self._emit) if principal is None else
                    self.app.server.run_checked(self.req, self.checked, self._emit, principal=principal.key, auth=principal))
            reply = await OnSuspend(coro, self._suspended)
        except asyncio.CancelledError:
            if not self.done:
                # Our own cancellation (client went away): nothing more is sent for this request.
                log.debug("request %r cancelled by client disconnect", self.req.id)
                return
            raise
        finally:
            self.done = True
            if self.watcher is not None:
                self.watcher.cancel()
            if self.timer is not None:
                self.timer.cancel()
        if self.streaming:
            await _asgi.end_stream(self.send, reply.body)
        else:
            code = reply.error_code
            await respond_json(self.send, _DISPATCH_STATUS.get(code, 200) if code else 200, reply.body)

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
    **app_options: Any,
) -> None:
    """Serve ``server`` on uvicorn (httptools and uvloop when installed, h11 otherwise).

    ``sockets``: already-listening sockets to serve (workers sharing one; then ``host`` and
    ``port`` are not bound). ``on_shutdown`` runs after the server stopped accepting.
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
    if app_options.get("allowed_hosts") is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("binding %s with the loopback-only Host allow-list; pass allowed_hosts= for remote clients", host)
    limits = _limits.Limits.pop_from(app_options)
    _resource.bind(server, app_options, host, port, path, sockets)  # the audience: the address bound
    app = HttpApp(server, path=path, **app_options)
    # proxy_headers off: X-Forwarded-* is not trusted (the peer address is a session quota key).
    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, log_level=log_level, lifespan="off",
                            server_header=False, date_header=False, proxy_headers=False,
                            **_limits.uvicorn_options(limits))

    class _Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            # Listen streams never end on their own: close them gracefully so shutdown can finish.
            server.close_listeners()
            app.legacy_endpoint.close_all()
            await super().shutdown(sockets)
            if on_shutdown is not None:
                await on_shutdown()

    _Server(config).run(sockets=sockets)
