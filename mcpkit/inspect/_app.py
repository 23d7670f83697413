"""The inspector's ASGI app: the page, its static files and the JSON API (see the package
docstring), over one mcpkit Client connected to the TARGET."""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .._describe import describe_error
from .._probe import Target, probe
from ..protocol import sse
from ..transports import asgi as _asgi

if TYPE_CHECKING:
    from ..client import Client

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
MAX_BODY = 4 * 1024 * 1024
HISTORY_LIMIT = 500
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE_SECONDS = 15.0
#: The headers every whole response carries after its type and length: not cached, not
#: sniffed, not framed, no referrer, and a page that runs only its own files.
_GUARDED: list[_asgi.Header] = [
    (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; media-src 'self' data:; "
                                 b"style-src 'self'; script-src 'self'; frame-ancestors 'none'"),
]
#: The event stream's headers: those of :data:`mcpkit.protocol.sse.HEADERS`, but never stored.
_EVENT_STREAM: list[_asgi.Header] = [(k, b"no-store" if k == b"cache-control" else v) for k, v in sse.HEADERS]
_CONNECTED = sse.comment("connected")
#: What the inspector declares: it renders MCP Apps (HTML), see :mod:`._apps`.
HOST_CAPABILITIES = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
#: The method a question from the server stands for, in the history.
ASKED = {"elicitation": "elicitation/create", "sampling": "sampling/createMessage"}


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Inspector:
    """The connection to the inspected server, and what the page asked of it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: Client | None = None
        self.card: dict[str, Any] = {"connected": False}
        self.history: list[dict[str, Any]] = []
        self._ids = 0
        self._lock = asyncio.Lock()
        #: The pages' event streams (``GET /api/events``).
        self._subscribers: set[asyncio.Queue[tuple[str, Any]]] = set()
        #: Questions from the server waiting for the page's answer, by id.
        self._pending: dict[str, asyncio.Future[Any]] = {}
        #: Tool calls in flight, by the page's ``callId`` (to cancel them).
        self._calls: dict[str, asyncio.Task[Any]] = {}
        self._listening: asyncio.Task[None] | None = None
        #: Set when the app shuts down: the event streams end.
        self.closing = asyncio.Event()
        #: How long a question from the server waits for the page.
        self.answer_timeout = 600.0
        from ._apps import AppFrames

        #: The MCP Apps the page renders (``/api/app/*``, ``/frame/<id>``).
        self.apps = AppFrames(self)

    # ------------------------------------------------------------------ events
    def subscribe(self) -> asyncio.Queue[tuple[str, Any]]:
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=1000)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[tuple[str, Any]]) -> None:
        self._subscribers.discard(queue)

    def publish(self, event: str, data: Any) -> None:
        for queue in list(self._subscribers):
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:  # a page that stopped reading loses events, not the server
                pass

    # ------------------------------------------------------------------ the server's questions
    async def _ask(self, kind: str, params: Any, refused: dict[str, Any]) -> Any:
        """Show the server's question on the open pages and wait for the answer (``refused``
        when no page is open or none answers in time)."""
        import msgspec

        if not self._subscribers:
            return refused
        ask_id = secrets.token_hex(8)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ask_id] = future
        shown = msgspec.to_builtins(params)
        self.publish("input", {"id": ask_id, "kind": kind, "params": shown})
        self._ids += 1
        entry: dict[str, Any] = {"id": self._ids, "method": ASKED[kind], "params": shown, "at": time.time(),
                                 "from": "server"}
        start = time.perf_counter()
        answer = refused
        try:
            answer = await asyncio.wait_for(future, self.answer_timeout)
            return answer
        except TimeoutError:
            return refused
        finally:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
            entry["result"] = answer
            self._record(entry)
            self._pending.pop(ask_id, None)
            self.publish("input-done", {"id": ask_id})

    async def elicit(self, params: Any) -> Any:
        return await self._ask("elicitation", params, {"action": "cancel"})

    async def sample(self, params: Any) -> Any:
        from ..errors import MCPError

        answer = await self._ask("sampling", params, {})
        if not answer:
            raise MCPError(-1, "the person at the inspector did not answer the sampling request")
        return answer

    async def connect(self) -> dict[str, Any]:
        """(Re)connect and fetch the card; a failure is kept in the card, not raised."""
        async with self._lock:
            await self._close()
            base: dict[str, Any] = {"target": self.target.label, "transport": self.target.transport,
                                    "cliTarget": cli_target(self.target)}
            try:
                self.client = self.target.client(elicitation=self.elicit, sampling=self.sample,
                                                 capabilities=HOST_CAPABILITIES)
                await self.client.start()
                report = await self.timed("server/discover", None, lambda: probe(self.client_or_fail(), self.target,
                                                                                   lists=False))
                report.pop("discoveredAt", None)
                from ..protocol import meta as M

                info = (report["discover"].get("_meta") or {}).get(M.SERVER_INFO) or {}
                self.card = {**base, **report, "serverInfo": info, "connected": True}
            except Exception as exc:
                message = describe_error(exc, self.target.timeout)
                output = self.target.server_output()
                self.card = {**base, "connected": False, "error": message, "serverOutput": output}
                await self._close()
            return self.card

    async def close(self) -> None:
        async with self._lock:
            await self._close()

    async def _close(self) -> None:
        await self._stop_listening()
        client, self.client = self.client, None
        if client is not None:
            try:
                await asyncio.wait_for(client.close(), 5.0)
            except Exception:
                pass

    def client_or_fail(self) -> Client:
        if self.client is None:
            raise ApiError(409, "not connected to the server: " + str(self.card.get("error") or "reconnect"))
        return self.client

    async def timed(self, method: str, params: dict[str, Any] | None, run: Callable[[], Awaitable[Any]],
                    source: str | None = None, app: str | None = None) -> Any:
        """Run one request for the page (or, ``source="app"``, for an app it renders), recording
        it (and its timing) in the history."""
        import msgspec

        self._ids += 1
        entry: dict[str, Any] = {"id": self._ids, "method": method, "params": params, "at": time.time()}
        if source is not None:
            entry["from"], entry["app"] = source, app
        start = time.perf_counter()
        try:
            value = await run()
        except asyncio.CancelledError:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
            entry["error"] = "cancelled"
            self._record(entry)
            raise
        except Exception as exc:
            entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
            entry["error"] = describe_error(exc, self.target.timeout)
            self._record(entry)
            if isinstance(exc, ApiError):
                raise
            raise ApiError(502, entry["error"]) from exc
        entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
        out = msgspec.to_builtins(value)
        entry["result"] = out
        self._record(entry)
        return out

    def record_refusal(self, method: str, params: dict[str, Any], source: str, error: str) -> None:
        """A request the inspector refused to relay (not sent to the server), in the history."""
        self._ids += 1
        self._record({"id": self._ids, "method": method, "params": params, "at": time.time(), "ms": 0,
                      "from": source, "error": f"refused by the inspector: {error}"})

    def _record(self, entry: dict[str, Any]) -> None:
        self.history.append(entry)
        del self.history[:-HISTORY_LIMIT]

    async def _listen(self, body: dict[str, Any]) -> dict[str, Any]:
        client = self.client_or_fail()
        uris = body.get("resources") or []
        if not isinstance(uris, list) or not all(isinstance(u, str) and u for u in uris):
            raise ApiError(400, "resources must be a list of URIs")
        kwargs = {"tools": bool(body.get("tools")), "prompts": bool(body.get("prompts")),
                  "resources_list": bool(body.get("resourcesList")), "resources": list(uris)}
        await self._stop_listening()
        self._ids += 1
        self._record({"id": self._ids, "method": "subscriptions/listen", "at": time.time(), "ms": 0,
                      "params": kwargs, "result": {"listening": True}})
        self._listening = asyncio.ensure_future(_listen_impl(self, client, kwargs))
        return {"listening": True, "filter": kwargs}

    async def _stop_listening(self) -> None:
        task, self._listening = self._listening, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait_for(task, 5.0)
            except (asyncio.CancelledError, Exception):
                pass

    # ------------------------------------------------------------------ the API
    async def api(self, method: str, path: str, body: Any) -> Any:
        if path == "/api/card" and method == "GET":
            return self.card
        if path == "/api/reconnect" and method == "POST":
            return await self.connect()
        if path == "/api/history" and method == "GET":
            return {"items": self.history}
        lists = {"/api/tools": ("tools/list", "list_tools"), "/api/resources": ("resources/list", "list_resources"),
                 "/api/templates": ("resources/templates/list", "list_resource_templates"),
                 "/api/prompts": ("prompts/list", "list_prompts")}
        if path in lists and method == "GET":
            rpc, attr = lists[path]
            client = self.client_or_fail()
            return {"items": await self.timed(rpc, None, lambda: getattr(client, attr)(cache="bypass"))}
        if method != "POST":
            raise ApiError(404, f"no such API: {method} {path}")
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object")
        if path == "/api/call":
            name = _text(body, "name")
            arguments = body.get("arguments") or {}
            if not isinstance(arguments, dict):
                raise ApiError(400, "arguments must be a JSON object")
            call_id = body.get("callId")
            call_id = call_id if isinstance(call_id, str) and call_id else secrets.token_hex(8)
            client = self.client_or_fail()
            progress: list[dict[str, Any]] = []

            def on_progress(done: float, total: float | None, message: str | None) -> None:
                step = {"callId": call_id, "progress": done, "total": total, "message": message, "at": time.time()}
                progress.append(step)
                self.publish("progress", step)

            t0 = time.perf_counter()
            task = asyncio.ensure_future(self.timed(
                "tools/call", {"name": name, "arguments": arguments},
                lambda: client.call_tool(name, arguments, progress=on_progress, cache="bypass")))
            self._calls[call_id] = task
            try:
                result = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    task.cancel()
                    raise
                return {"cancelled": True, "ms": _ms(t0), "progress": progress, "callId": call_id}
            finally:
                self._calls.pop(call_id, None)
            return {"result": result, "ms": _ms(t0), "progress": progress, "callId": call_id}
        if path == "/api/cancel":
            running = self._calls.get(_text(body, "callId"))
            if running is None:
                raise ApiError(404, "no such call in flight")
            running.cancel()
            return {"cancelled": True}
        if path == "/api/answer":
            future = self._pending.get(_text(body, "id"))
            if future is None or future.done():
                raise ApiError(404, "no such question waiting (answered, timed out, or the call ended)")
            answer = body.get("result")
            if not isinstance(answer, dict):
                raise ApiError(400, "result must be a JSON object")
            future.set_result(answer)
            return {"ok": True}
        if path == "/api/complete":
            ref = body.get("ref")
            context = body.get("context") or {}
            value = body.get("value", "")
            if not isinstance(ref, dict) or not isinstance(value, str) or not isinstance(context, dict):
                raise ApiError(400, "give ref (an object), argument, value (a string) and context (an object)")
            argument = _text(body, "argument")
            client = self.client_or_fail()
            params = {"ref": ref, "argument": {"name": argument, "value": value}, "context": context}
            completion = await self.timed("completion/complete", params,
                                          lambda: client.complete(ref, argument, value, context or None, cache="bypass"))
            return {"completion": completion}
        if path == "/api/app/open":
            return await self.apps.open(body)
        if path == "/api/app/call":
            return await self.apps.call(body)
        if path == "/api/listen":
            return await self._listen(body)
        if path == "/api/unlisten":
            await self._stop_listening()
            return {"listening": False}
        if path == "/api/read":
            uri = _text(body, "uri")
            client = self.client_or_fail()
            t0 = time.perf_counter()
            result = await self.timed("resources/read", {"uri": uri}, lambda: client.read_resource(uri, cache="bypass"))
            return {"result": result, "ms": _ms(t0)}
        if path == "/api/prompt":
            name = _text(body, "name")
            args = body.get("arguments") or {}
            if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
                raise ApiError(400, "prompt arguments must be an object of strings")
            client = self.client_or_fail()
            t0 = time.perf_counter()
            result = await self.timed("prompts/get", {"name": name, "arguments": args},
                                      lambda: client.get_prompt(name, args or None, cache="bypass"))
            return {"result": result, "ms": _ms(t0)}
        raise ApiError(404, f"no such API: {method} {path}")


async def _listen_impl(inspector: Inspector, client: Client, kwargs: dict[str, Any]) -> None:
    try:
        async for note in client.listen(**kwargs):
            inspector.publish("notification", {"method": note.method, "params": note.params, "at": time.time()})
        inspector.publish("listen-ended", {"reason": "the server ended the stream"})
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        inspector.publish("listen-ended", {"reason": describe_error(exc)})


def cli_target(target: Target) -> str:
    """TARGET as it goes on an ``mcpkit`` command line (for "copy as mcpkit call")."""
    import shlex

    if target.url is not None:
        return target.url
    argv = target.argv or []
    if target.label == " ".join(argv):
        return "-- " + shlex.join(argv)
    return shlex.quote(target.label)  # a server file


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise ApiError(400, f"{key!r} must be a non-empty string")
    return value


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


class InspectorApp:
    """ASGI: ``/`` the page, ``/static/*`` its files, ``/api/*`` the API; all behind the token,
    the Host allow-list and the Origin check."""

    def __init__(self, inspector: Inspector, *, token: str, port: int) -> None:
        from ._launch import OneTimeCodes

        self.inspector = inspector
        self.token = token
        self.port = port
        #: One-time codes for the page the browser is opened with (see :mod:`._launch`).
        self.codes = OneTimeCodes()

    def _hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    async def __call__(self, scope: _asgi.Scope, receive: _asgi.Receive, send: _asgi.Send) -> None:
        if scope["type"] == "lifespan":
            await _asgi.lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path: str = scope.get("path", "/")
        method: str = scope.get("method", "GET")
        if headers.get("host", "") not in self._hosts():
            await _send_json(send, 403, {"error": "this inspector answers only on its loopback address"})
            return
        origin = headers.get("origin")
        if origin is not None and origin not in {f"http://{h}" for h in self._hosts()}:
            await _send_json(send, 403, {"error": "requests from other origins are refused"})
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if path == "/" and method in ("GET", "HEAD") and "code" in query and "token" not in query:
            await self._redeem(send, query["code"][0])
            return
        if path.startswith("/frame/") and method == "GET":
            await self._frame(send, path.removeprefix("/frame/"))
            return
        given = headers.get("x-inspector-token") or (query.get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await _send_json(send, 403, {"error": "a valid access token is required (the URL mcpkit inspect printed)"})
            return
        if path == "/api/events" and method == "GET":
            await self._events(receive, send)
            return
        if path.startswith("/api/"):
            body: Any = None
            try:
                if method == "POST":
                    raw = await _read_body(receive)
                    try:
                        body = json.loads(raw) if raw else {}
                    except ValueError:
                        raise ApiError(400, "the body is not JSON") from None
                out = await self.inspector.api(method, path, body)
            except ApiError as exc:
                await _send_json(send, exc.status, {"error": str(exc)})
                return
            await _send_json(send, 200, out)
            return
        if method not in ("GET", "HEAD"):
            await _send_json(send, 405, {"error": "method not allowed"})
            return
        name = "index.html" if path == "/" else path.removeprefix("/static/") if path.startswith("/static/") else ""
        data = _static(name)
        if data is None:
            await _send_json(send, 404, {"error": "not found"})
            return
        suffix = name[name.rfind("."):]
        if name == "index.html":
            data = data.replace(b"__TOKEN__", self.token.encode())
        await _asgi.respond(send, 200, data, STATIC_TYPES.get(suffix, "application/octet-stream").encode(), _GUARDED)

    async def _frame(self, send: _asgi.Send, frame_id: str) -> None:
        """An app's document (one-time id, no token): under the policy its resource asked for,
        sandboxed to an opaque origin, framed only by the inspector's page."""
        got = self.inspector.apps.take(frame_id)
        if got is None:
            await _send_json(send, 404, {"error": "no such app frame (each is served once)"})
            return
        html, policy = got
        ancestors = " ".join(f"http://{h}" for h in sorted(self._hosts()))
        await _asgi.respond(send, 200, html, b"text/html; charset=utf-8", [
            (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"content-security-policy", f"{policy}; frame-ancestors {ancestors}".encode()),
        ])

    async def _redeem(self, send: _asgi.Send, code: str) -> None:
        """``/?code=C`` (the page the browser was opened with): once, a redirect to the page
        with the token; then, or after the code expired, 403."""
        if not self.codes.redeem(code):
            await _send_json(send, 403, {"error": "this one-time link was used already or has expired: "
                                                  "open the URL mcpkit inspect printed"})
            return
        await _asgi.respond(send, 303, b"", None, [(b"location", f"/?token={self.token}".encode()),
                                                    (b"cache-control", b"no-store"), (b"referrer-policy", b"no-referrer")])

    async def _events(self, receive: _asgi.Receive, send: _asgi.Send) -> None:
        """Server-sent events: ``progress``, ``input``, ``input-done``, ``notification``,
        ``listen-ended``; each ``data:`` is one JSON object. Ends at shutdown or disconnect."""
        queue = self.inspector.subscribe()
        await _asgi.start_stream(send, _EVENT_STREAM)
        gone = asyncio.ensure_future(_asgi.watch_disconnect(receive, lambda: None))  # done: disconnected
        closing = asyncio.ensure_future(self.inspector.closing.wait())
        pings: asyncio.Future[None] | None = None
        try:
            await _asgi.send_comment(send, _CONNECTED)
            pings = asyncio.ensure_future(_asgi.keep_alive(send, KEEPALIVE_SECONDS, wait_first=True))
            while True:
                get = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({get, gone, closing}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                event, data = get.result()
                await _asgi.send_named_event(send, event.encode(), _json(data))
            pings.cancel()
            if not gone.done():
                await _asgi.end_stream(send)
        except OSError:
            pass
        finally:
            self.inspector.unsubscribe(queue)
            for task in (pings, gone, closing):
                if task is not None:
                    task.cancel()


def _static(name: str) -> bytes | None:
    if not name or "/" in name or name.startswith(".") or name[name.rfind("."):] not in STATIC_TYPES:
        return None
    try:
        return resources.files("mcpkit.inspect").joinpath("static", name).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def _read_body(receive: _asgi.Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, "the body is too large")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode()


async def _send_json(send: _asgi.Send, status: int, value: Any) -> None:
    await _asgi.respond(send, status, _json(value), b"application/json", _GUARDED)
