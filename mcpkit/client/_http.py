"""Streamable HTTP client transport (2026-07-28): one POST per message, JSON or SSE answers."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable, Mapping

from ..protocol import codec, headers as H
from ._transports import ClientTransport, OnNote, TransportError

log = logging.getLogger("mcpkit.client")

HeaderProvider = Callable[[], "Mapping[str, str] | Awaitable[Mapping[str, str]]"]


class HttpTransport(ClientTransport):
    """POSTs each request to ``url`` with the mirrored MCP headers.

    ``headers`` are sent on every request; ``header_provider`` (sync or async) is called per
    request, e.g. to add a fresh bearer token; ``bearer_token`` is the simple static case.
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, header_provider: HeaderProvider | None = None,
                 bearer_token: str | None = None, http_client: Any = None, verify: Any = True) -> None:
        self.url = url
        self.static_headers = dict(headers or {})
        if bearer_token:
            self.static_headers["Authorization"] = f"Bearer {bearer_token}"
        self.header_provider = header_provider
        self._client = http_client
        self._owns_client = http_client is None
        self._verify = verify
        #: tool name -> its x-mcp-header annotations, from the latest tools/list.
        self.tool_annotations: dict[str, dict[str, tuple[str, ...]]] = {}
        #: The HTTP status of the latest answer (the era probe reads it).
        self.last_status: int | None = None
        self.last_headers: Any = None

    async def start(self) -> None:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), verify=self._verify)

    async def _headers(self, method: str, params: dict | None, version: str | None) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        annotations = None
        if method == "tools/call" and params:
            annotations = self.tool_annotations.get(params.get("name"))  # type: ignore[arg-type]
        if version is not None:
            try:
                h.update(H.client_headers(method, params, version, annotations))
            except ValueError as exc:
                raise TransportError(f"cannot send {method} over HTTP: {exc}") from None
        return await self._with_auth(h)

    async def _with_auth(self, h: dict[str, str]) -> dict[str, str]:
        """Add the static headers and the provider's (e.g. a fresh bearer token)."""
        h.update(self.static_headers)
        if self.header_provider is not None:
            extra = self.header_provider()
            if inspect.isawaitable(extra):
                extra = await extra
            h.update(extra or {})
        return h

    async def request(self, id: Any, method: str, params: dict, on_note: OnNote | None) -> codec.Response:
        import httpx

        await self.start()
        version = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
        hdrs = await self._headers(method, params, version)
        body = codec.encode_request(id, method, params)
        try:
            async with self._client.stream("POST", self.url, content=body, headers=hdrs) as resp:
                self.last_status = resp.status_code
                self.last_headers = resp.headers
                ctype = resp.headers.get("content-type", "")
                if ctype.startswith("text/event-stream"):
                    return await self._read_sse(resp, id, on_note)
                data = await resp.aread()
                return self._parse_json(resp.status_code, data, id)
        except httpx.HTTPError as exc:
            raise TransportError(f"HTTP request to {self.url} failed: {exc}") from None

    def _parse_json(self, status: int, data: bytes, id: Any) -> codec.Response:
        try:
            msg = codec.decode(data)
        except codec.InvalidMessage:
            snippet = data[:200].decode("utf-8", "replace").strip()
            raise HttpStatusError(status, f"HTTP {status} without a JSON-RPC body{': ' + snippet if snippet else ''}", data) from None
        if type(msg) is not codec.Response:
            raise HttpStatusError(status, f"HTTP {status}: the server answered with a {type(msg).__name__}, not a response", data)
        return msg

    async def _server_request(self, msg: codec.Request) -> None:
        log.warning("server sent a request (%s) on a 2026-07-28 stream; ignoring it", msg.method)

    async def _event(self, data: str, id: Any, on_note: OnNote | None) -> codec.Response | None:
        """Handle one SSE event of a request's stream; the response to ``id`` when it is that."""
        try:
            msg = codec.decode(data, parse_params=True)
        except codec.InvalidMessage:
            log.warning("ignoring an SSE event that is not a JSON-RPC message")
            return None
        if type(msg) is codec.Response:
            return msg if (msg.id == id or msg.id is None) else None
        if type(msg) is codec.Notification:
            if on_note is not None:
                on_note(msg.method, msg.params or {})
        else:
            await self._server_request(msg)
        return None

    async def _read_sse(self, resp: Any, id: Any, on_note: OnNote | None) -> codec.Response:
        async for data in iter_sse(resp.aiter_lines()):
            answer = await self._event(data, id, on_note)
            if answer is not None:
                return answer
        raise TransportError("the server closed the event stream before answering")

    async def notify(self, method: str, params: dict | None) -> None:
        await self.start()
        version = ((params or {}).get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
        hdrs = await self._headers(method, params, version)
        await self._client.post(self.url, content=codec.encode_notification(method, params), headers=hdrs)

    async def close(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None


class HttpStatusError(TransportError):
    """An HTTP answer that carries no JSON-RPC message (e.g. a plain 404 or 502)."""

    def __init__(self, status: int, message: str, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class SseEvent:
    __slots__ = ("data", "id", "retry")

    def __init__(self, data: str, id: str | None, retry: int | None) -> None:
        self.data = data
        self.id = id
        self.retry = retry


async def iter_sse_events(lines: Any) -> Any:
    """Yield each SSE event (data, last event id, retry); comments (``:`` lines) are skipped."""
    data: list[str] = []
    event_id: str | None = None
    retry: int | None = None
    async for line in lines:
        if line == "":
            if data or event_id is not None or retry is not None:
                yield SseEvent("\n".join(data), event_id, retry)
            data, retry = [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "id" and "\x00" not in value:
            event_id = value
        elif field == "retry" and value.isdigit():
            retry = int(value)
    if data:
        yield SseEvent("\n".join(data), event_id, retry)


async def iter_sse(lines: Any) -> Any:
    """Yield the ``data`` of each SSE event that carries some (priming events carry none)."""
    async for ev in iter_sse_events(lines):
        if ev.data:
            yield ev.data


class LegacyHttpTransport(HttpTransport):
    """2025-11-25 Streamable HTTP: an ``Mcp-Session-Id`` session, a GET stream for the
    server's own messages, server requests answered by POST, resumable request streams
    (``Last-Event-ID``), and DELETE on close."""

    def __init__(self, url: str, *, on_notification: OnNote | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        self.session_id: str | None = None
        self.version: str | None = None
        self.on_notification = on_notification
        self.on_request: Any = None
        self._stream: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()

    async def _headers(self, method: str, params: dict | None, version: str | None) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.version is not None:
            h["MCP-Protocol-Version"] = self.version
        if self.session_id is not None:
            h["Mcp-Session-Id"] = self.session_id
        return await self._with_auth(h)

    async def request(self, id: Any, method: str, params: dict, on_note: OnNote | None) -> codec.Response:
        resp = await super().request(id, method, params, on_note or self.on_notification)
        if method == "initialize" and resp.error is None and self.last_headers is not None:
            self.session_id = self.last_headers.get("mcp-session-id")
        return resp

    async def _read_sse(self, resp: Any, id: Any, on_note: OnNote | None) -> codec.Response:
        """Read a session request's stream; if it ends before our answer, resume it with a GET
        carrying Last-Event-ID after the server's retry delay (2025-11-25 resumability)."""
        last_id: str | None = None
        retry_ms = 1000
        stream = resp
        try:
            for _ in range(6):
                async for ev in iter_sse_events(stream.aiter_lines()):
                    if ev.id is not None:
                        last_id = ev.id
                    if ev.retry is not None:
                        retry_ms = ev.retry
                    if ev.data:
                        answer = await self._event(ev.data, id, on_note)
                        if answer is not None:
                            return answer
                if last_id is None or self.session_id is None:
                    break
                await asyncio.sleep(retry_ms / 1000.0)
                hdrs = await self._headers("", None, None)
                hdrs["Accept"] = "text/event-stream"
                hdrs["Last-Event-ID"] = last_id
                if stream is not resp:
                    await stream.aclose()
                stream = await self._client.send(self._client.build_request("GET", self.url, headers=hdrs), stream=True)
                if stream.status_code != 200:
                    break
        finally:
            if stream is not resp:
                await stream.aclose()
        raise TransportError("the server closed the event stream before answering")

    async def _server_request(self, msg: codec.Request) -> None:
        from ._transports import answer_request

        async def answer() -> None:
            if self.on_request is None and msg.method == "ping":
                body = codec.encode_result(msg.id, {})
            else:
                body = await answer_request(self.on_request, msg)
            try:
                await self._client.post(self.url, content=body, headers=await self._headers("", None, None))
            except Exception as exc:
                log.warning("could not send our answer to the server's %s: %s", msg.method, exc)

        task = asyncio.ensure_future(answer())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def open_stream(self) -> None:
        """Open the session's GET stream in the background (a 405 means the server has none)."""
        self._stream = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        try:
            hdrs = await self._headers("", None, None)
            hdrs["Accept"] = "text/event-stream"
            async with self._client.stream("GET", self.url, headers=hdrs) as resp:
                if resp.status_code != 200:
                    return
                async for data in iter_sse(resp.aiter_lines()):
                    try:
                        msg = codec.decode(data, parse_params=True)
                    except codec.InvalidMessage:
                        continue
                    if type(msg) is codec.Notification:
                        if self.on_notification is not None:
                            self.on_notification(msg.method, msg.params or {})
                    elif type(msg) is codec.Request:
                        await self._server_request(msg)
        except Exception as exc:
            log.debug("the session stream ended: %r", exc)

    async def close(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        if self.session_id is not None and self._client is not None:
            try:
                await self._client.request("DELETE", self.url, headers=await self._headers("", None, None))
            except Exception:
                pass
            self.session_id = None
        await super().close()
