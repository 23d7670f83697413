"""The inspector's ASGI app: the page, its static files and the JSON API (see the package
docstring), over one mcpkit Client connected to the TARGET."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from ..cli._target import Target
    from ..client import Client

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
MAX_BODY = 4 * 1024 * 1024
HISTORY_LIMIT = 500


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

    async def connect(self) -> dict[str, Any]:
        """(Re)connect and fetch the card; a failure is kept in the card, not raised."""
        async with self._lock:
            await self._close()
            base: dict[str, Any] = {"target": self.target.label, "transport": self.target.transport}
            try:
                self.client = self.target.client()
                await self.client.start()
                from ..cli._discover import probe

                report = await self.timed("server/discover", None, lambda: probe(self.client_or_fail(), self.target,
                                                                                   lists=False))
                report.pop("discoveredAt", None)
                from ..protocol import meta as M

                info = (report["discover"].get("_meta") or {}).get(M.SERVER_INFO) or {}
                self.card = {**base, **report, "serverInfo": info, "connected": True}
            except Exception as exc:
                from ..cli._target import describe_error

                message = describe_error(exc, self.target.timeout)
                output = self.target.server_output()
                self.card = {**base, "connected": False, "error": message, "serverOutput": output}
                await self._close()
            return self.card

    async def close(self) -> None:
        async with self._lock:
            await self._close()

    async def _close(self) -> None:
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

    async def timed(self, method: str, params: dict[str, Any] | None, run: Callable[[], Awaitable[Any]]) -> Any:
        """Run one request for the page, recording it (and its timing) in the history."""
        import msgspec

        self._ids += 1
        entry: dict[str, Any] = {"id": self._ids, "method": method, "params": params, "at": time.time()}
        start = time.perf_counter()
        try:
            value = await run()
        except Exception as exc:
            from ..cli._target import describe_error

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

    def _record(self, entry: dict[str, Any]) -> None:
        self.history.append(entry)
        del self.history[:-HISTORY_LIMIT]

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
            client = self.client_or_fail()
            progress: list[dict[str, Any]] = []

            def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": done, "total": total, "message": message, "at": time.time()})

            t0 = time.perf_counter()
            result = await self.timed("tools/call", {"name": name, "arguments": arguments},
                                      lambda: client.call_tool(name, arguments, progress=on_progress, cache="bypass"))
            return {"result": result, "ms": _ms(t0), "progress": progress}
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
        self.inspector = inspector
        self.token = token
        self.port = port

    def _hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
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
        given = headers.get("x-inspector-token") or (query.get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await _send_json(send, 403, {"error": "a valid access token is required (the URL mcpkit inspect printed)"})
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
        await _send(send, 200, data, STATIC_TYPES.get(suffix, "application/octet-stream"))


def _static(name: str) -> bytes | None:
    if not name or "/" in name or name.startswith(".") or name[name.rfind("."):] not in STATIC_TYPES:
        return None
    try:
        return resources.files("mcpkit.inspect").joinpath("static", name).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def _read_body(receive: Receive) -> bytes:
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


async def _send_json(send: Send, status: int, value: Any) -> None:
    await _send(send, status, json.dumps(value, ensure_ascii=False, default=str).encode(), "application/json")


async def _send(send: Send, status: int, data: bytes, content_type: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
        (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; media-src 'self' data:; "
                                     b"style-src 'self'; script-src 'self'; frame-ancestors 'none'"),
    ]})
    await send({"type": "http.response.body", "body": data})
