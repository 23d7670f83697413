"""Streamable HTTP client transport (2026-07-28): one POST per message, JSON or SSE answers."""

from __future__ import annotations

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

    async def _read_sse(self, resp: Any, id: Any, on_note: OnNote | None) -> codec.Response:
        async for data in iter_sse(resp.aiter_lines()):
            try:
                msg = codec.decode(data, parse_params=True)
            except codec.InvalidMessage:
                log.warning("ignoring an invalid SSE event from the server")
                continue
            if type(msg) is codec.Response:
                if msg.id == id or msg.id is None:
                    return msg
            elif type(msg) is codec.Notification:
                if on_note is not None:
                    on_note(msg.method, msg.params or {})
            else:
                log.warning("server sent a request (%s) on a 2026-07-28 stream; ignoring it", msg.method)
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


async def iter_sse(lines: Any) -> Any:
    """Yield the ``data`` of each SSE event; comments (``:`` lines) are keep-alives and skipped."""
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
    if data:
        yield "\n".join(data)
