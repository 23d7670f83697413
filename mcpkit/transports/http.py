"""Streamable HTTP (2026-07-28, stateless) as a plain ASGI application.

Every JSON-RPC message is its own POST. A request is answered with ``application/json``,
or with a ``text/event-stream`` that belongs to that request alone when the handler sends
progress or log notifications (or runs long enough to need keep-alives). Headers that
mirror the body are checked against it; Origin and Host are checked against an allow-list;
bodies are size-limited; a client disconnect cancels the handler.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable

from ..protocol import codec, eras, errors, headers as H, versions
from ..protocol.types import CallToolParams

if TYPE_CHECKING:
    from ..server import Server

log = logging.getLogger("mcpkit.http")

Scope = dict
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]

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
_DISPATCH_STATUS = {
    errors.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    errors.UNSUPPORTED_PROTOCOL_VERSION: 400,
    errors.HEADER_MISMATCH: 400,
}

_WANTED_HEADERS = frozenset({b"host", b"origin", b"accept", b"content-length", b"authorization", b"last-event-id"})
_JSON_HEADERS = [(b"content-type", b"application/json")]
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


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
        server: "Server",
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        keepalive_interval: float = 15.0,
        session_idle_timeout: float = 1800.0,
        max_sessions: int = 1000,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.policy = HostPolicy(allowed_hosts, allowed_origins)
        self.max_body = max_body_bytes
        self.keepalive = keepalive_interval
        self.sessions: Any = None
        if server.legacy:
            from ._http_legacy import LegacySessions

            self.sessions = LegacySessions(server, idle_timeout=session_idle_timeout, max_sessions=max_sessions,
                                           keepalive=keepalive_interval)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    # ------------------------------------------------------------------ plumbing
    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path != self.path and path.rstrip("/") != self.path:
            await _plain(send, 404, b"Not Found")
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
            await _json(send, 403, codec.encode_error(None, errors.MCPError(
                errors.INVALID_REQUEST, "Forbidden: Origin or Host is not allowed (DNS rebinding protection)")))
            return
        method = scope["method"]
        if method != "POST":
            await self._not_post(scope, receive, send, method, hdrs)
            return
        body = await self._read_body(receive, send, hdrs)
        if body is None:
            return
        try:
            msg = codec.decode(body)
        except codec.InvalidMessage as exc:
            await _json(send, 400, codec.encode_error(exc.id, exc.error))
            return
        if self.sessions is not None and self._is_legacy(msg, hdrs):
            await self.sessions.post(msg, hdrs, send)
        elif type(msg) is codec.Request:
            await self._request(msg, hdrs, receive, send)
        elif type(msg) is codec.Notification:
            # Accepted and ignored: on HTTP a closed stream is the cancel signal, and no other
            # client notification exists in this revision.
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _json(send, 400, codec.encode_error(None, errors.invalid_request(
                "clients must not send JSON-RPC responses")))

    @staticmethod
    def _is_legacy(msg: Any, hdrs: dict) -> bool:
        """Era of a POST, from its body, with the version header as the cross-check: a body
        carrying modern ``_meta`` (or a modern version header) is never served as legacy."""
        header = hdrs.get("mcp-protocol-version")
        if header is not None and versions.is_modern(header.strip()):
            return False
        if type(msg) is codec.Response:
            return "mcp-session-id" in hdrs
        if type(msg) is codec.Notification:
            return "mcp-session-id" in hdrs
        return eras.request_era(codec.params_dict(msg.params)) == "legacy"

    async def _not_post(self, scope: Scope, receive: Receive, send: Send, method: str, hdrs: dict) -> None:
        if self.sessions is not None and "mcp-session-id" in hdrs:
            if method == "GET":
                await self.sessions.get_stream(hdrs, receive, send)
                return
            if method == "DELETE":
                await self.sessions.delete(hdrs, send)
                return
        await send({"type": "http.response.start", "status": 405,
                    "headers": [(b"allow", b"POST"), (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": codec.encode_error(None, errors.MCPError(
            errors.INVALID_REQUEST, f"Method Not Allowed: this endpoint accepts POST only, not {method}"))})

    async def _read_body(self, receive: Receive, send: Send, hdrs: dict) -> bytes | None:
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
        body = msg.get("body", b"")
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
        await _json(send, 413, codec.encode_error(None, errors.invalid_request(
            f"the request body is larger than {self.max_body} bytes")))

    # ------------------------------------------------------------------ requests
    async def _request(self, req: codec.Request, hdrs: dict, receive: Receive, send: Send) -> None:
        server = self.server
        try:
            checked = server.check(req)
        except errors.MCPError as exc:
            exc = self._header_error_first(req, hdrs, exc)
            await _json(send, _PRE_DISPATCH_STATUS.get(exc.code, 200), codec.encode_error(req.id, exc))
            return
        p = checked.params
        if req.method == "subscriptions/listen":
            accept = hdrs.get("accept", "")
            if accept and "text/event-stream" not in accept and "*/*" not in accept:
                # Its acknowledgement and notifications can only travel on an event stream.
                await _json(send, 400, codec.encode_error(req.id, errors.invalid_request(
                    "subscriptions/listen answers with text/event-stream; the Accept header must allow it")))
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
            await _json(send, 400, codec.encode_error(req.id, exc))
            return
        await _Exchange(self, req, checked, hdrs, receive, send).run()

    def _header_error_first(self, req: codec.Request, hdrs: dict, exc: errors.MCPError) -> errors.MCPError:
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


class _OnSuspend:
    """Await a coroutine in the current task, calling ``on_suspend`` the first time it
    actually waits. Exactly ``await coro`` otherwise: values and exceptions pass through."""

    __slots__ = ("coro", "on_suspend")

    def __init__(self, coro: Any, on_suspend: Callable[[], None]) -> None:
        self.coro = coro
        self.on_suspend = on_suspend

    def __await__(self) -> Any:
        coro = self.coro
        value: Any = None
        error: BaseException | None = None
        first = True
        while True:
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                return stop.value
            if first:
                first = False
                self.on_suspend()
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # thrown in by the task (cancellation)
                value, error = None, exc


class _Exchange:
    """One request's response: JSON by default, switching to SSE on the first notification."""

    __slots__ = ("app", "req", "checked", "receive", "send", "sse_ok", "streaming", "done", "task", "watcher", "timer")

    def __init__(self, app: HttpApp, req: codec.Request, checked: Any, hdrs: dict, receive: Receive, send: Send) -> None:
        self.app = app
        self.req = req
        self.checked = checked
        self.receive = receive
        self.send = send
        accept = hdrs.get("accept", "")
        self.sse_ok = "text/event-stream" in accept or "*/*" in accept or not accept
        self.streaming = False
        self.done = False
        self.task: asyncio.Task | None = None
        self.watcher: asyncio.Task | None = None
        self.timer: asyncio.TimerHandle | None = None

    def _suspended(self) -> None:
        """The handler is waiting on something: from now on a disconnect must cancel it, and a
        long wait needs keep-alives. (A handler that never suspends needs neither, so the
        common fast call costs no extra task.)"""
        loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.watcher = loop.create_task(self._watch_disconnect())
        if self.sse_ok:
            self.timer = loop.call_later(self.app.keepalive, self._keepalive_due)

    async def run(self) -> None:
        try:
            reply = await _OnSuspend(self.app.server.run_checked(self.req, self.checked, self._emit), self._suspended)
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
            await self.send({"type": "http.response.body", "body": b"event: message\ndata: " + reply.body + b"\n\n", "more_body": False})
        else:
            await _json(self.send, _DISPATCH_STATUS.get(reply.error_code, 200) if reply.error_code else 200, reply.body)

    async def _watch_disconnect(self) -> None:
        while True:
            msg = await self.receive()
            if msg["type"] == "http.disconnect":
                if not self.done and self.task is not None:
                    self.task.cancel()
                return

    async def _start_stream(self) -> None:
        self.streaming = True
        await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})

    async def _emit(self, method: str, params: dict) -> None:
        if not self.sse_ok or self.done:
            return  # the client cannot take a stream: notifications are optional, the result is not
        if not self.streaming:
            await self._start_stream()
        data = codec.encode_notification(method, params)
        await self.send({"type": "http.response.body", "body": b"event: message\ndata: " + data + b"\n\n", "more_body": True})

    def _keepalive_due(self) -> None:
        if not self.done:
            asyncio.get_running_loop().create_task(self._keepalive_loop())

    async def _keepalive_loop(self) -> None:
        try:
            if not self.streaming:
                await self._start_stream()
            while not self.done:
                await self.send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
                await asyncio.sleep(self.app.keepalive)
        except Exception:  # the connection is gone; the disconnect watcher cancels the handler
            return


async def _json(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def run_http_server(
    server: "Server",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    access_log: bool = False,
    log_level: str = "warning",
    **app_options: Any,
) -> None:
    """Serve ``server`` on uvicorn (httptools and uvloop when installed, h11 otherwise)."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise SystemExit("mcpkit: serving HTTP needs uvicorn: pip install 'mcpkit[http]'") from exc
    if app_options.get("allowed_hosts") is None and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("binding %s with the loopback-only Host allow-list; pass allowed_hosts= for remote clients", host)
    app = HttpApp(server, path=path, **app_options)
    # proxy_headers off: mcpkit reads neither the client address nor the scheme, so the
    # X-Forwarded-* rewrite would be work for nothing on every request.
    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, log_level=log_level, lifespan="off",
                            server_header=False, date_header=False, proxy_headers=False)

    class _Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            # Listen streams never end on their own: close them gracefully so shutdown can finish.
            server.close_listeners()
            if app.sessions is not None:
                app.sessions.close_all()
            await super().shutdown(sockets)

    _Server(config).run()
