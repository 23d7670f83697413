"""Streamable HTTP client transports: 2026-07-28 (one stateless POST per message, JSON or
SSE answers, mirrored headers) and 2025-11-25 (an ``Mcp-Session-Id`` session with a GET
stream, resumable request streams and DELETE on close).

Each request's status and headers come back in its own :class:`Response`; nothing about
one exchange is kept on the transport, so concurrent requests never see each other's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import HttpStatusError, ResponseTooLarge, TransportError
from ..protocol import codec, sse
from ..protocol import headers as H
from ..protocol import meta as M
from . import _limits
from ._credentials import partition
from ._transport import Capabilities, ClientTransport, Era, OnNote, Response, answer_request

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("mcpkit.client")

#: Called per request for extra headers (e.g. a fresh token); sync or async.
HeaderProvider = Callable[[], "Mapping[str, str] | Awaitable[Mapping[str, str]]"]
#: The auth hook's headers, for the transport's own requests (GET stream, DELETE, answers);
#: called with the request's HTTP method (a DPoP proof names it).
AuthHeaders = Callable[[str], Awaitable[Mapping[str, str]]]

_ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

#: Redirects followed for one request, at most (same origin, 307/308 only).
MAX_REDIRECTS = 5
#: How long the 2025-11-25 handshake waits for the session's GET stream to be answered.
SESSION_STREAM_WAIT = 1.0


async def sse_events(lines: AsyncIterator[str], limit: int | None = None, url: str = "") -> AsyncIterator[sse.Event]:
    """The events of an SSE body, given its lines (none larger than ``limit`` bytes)."""
    async for ev in _limits.events(lines, limit, url):
        yield ev


def credentials_visible(client: httpx.AsyncClient) -> bool:
    """Whether every credential an ``httpx`` client sends is in the headers it builds: not so
    with an ``auth=`` flow, request event hooks, or a transport that is neither httpx's own nor
    mcpkit's lean one (any of them may add headers after the request is built)."""
    if client.auth is not None or client.event_hooks.get("request"):
        return False
    transports = [getattr(client, "_transport", None), *(getattr(client, "_mounts", None) or {}).values()]
    return all(t is None or _sends_built_headers(t) for t in transports) and transports[0] is not None


def _sends_built_headers(transport: object) -> bool:
    """httpx's own transports, and mcpkit's lean one (it writes the headers httpx built, as built)."""
    cls = type(transport)
    if cls.__module__.split(".")[0] == "httpx":
        return True
    wire = sys.modules.get("mcpkit.client._wire")  # not loaded: no transport can be its
    return wire is not None and cls is getattr(wire, "WireTransport", None)


async def with_configured(h: dict[str, str], static: Mapping[str, str],
                          provider: HeaderProvider | None) -> dict[str, str]:
    """``h`` with the ``static`` headers added, then those of ``provider`` (sync or async)."""
    h.update(static)
    if provider is not None:
        extra = provider()
        if inspect.isawaitable(extra):
            extra = await extra
        h.update(extra or {})
    return h


class HttpTransport(ClientTransport):
    """2026-07-28: POSTs each request to ``url`` with the mirrored MCP headers.

    ``headers`` are sent on every request; ``header_provider`` (sync or async) is called per
    request. The auth hook's headers arrive per request (``request(headers=...)``) and, for
    the transport's own requests, through ``auth_headers``. ``max_response_bytes`` caps a JSON
    answer and each line and event of an SSE stream (:class:`~mcpkit.errors.ResponseTooLarge`).
    """

    capabilities: ClassVar[Capabilities] = Capabilities(kind="http", supports_header_mirroring=True)

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, header_provider: HeaderProvider | None = None,
                 http_client: httpx.AsyncClient | None = None, verify: Any = True,
                 auth_headers: AuthHeaders | None = None,
                 max_response_bytes: int = _limits.DEFAULT_MAX_RESPONSE_BYTES, sse_fallback: bool = True) -> None:
        self.url = url
        #: Whether a refused ``initialize`` (HTTP 400, 404, 405) tries the 2024-11-05 HTTP+SSE
        #: transport at the same URL, as the spec's backwards-compatibility rules describe.
        self.sse_fallback = sse_fallback
        #: The largest JSON answer, SSE line or SSE event read (bytes).
        self.max_response_bytes = _limits.check_limit(max_response_bytes)
        self.static_headers = dict(headers or {})
        self.header_provider = header_provider
        self.auth_headers = auth_headers
        self._given_client = http_client
        self._client: httpx.AsyncClient | None = http_client
        self._owns_client = http_client is None
        self._verify = verify
        #: The lean transport of the transport's own client (None: given a client, or httpx's transport).
        self._wire: Any = None
        self._lean: Any = None  # a _lean.LeanPost for self.url, made on first use
        #: tool name -> its x-mcp-header annotations, from the latest tools/list.
        self.tool_annotations: dict[str, dict[str, tuple[str, ...]]] = {}

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self._client is None:
            from . import _wire

            self._client, self._wire = _wire.client_and_wire(self.url, self._verify)

    async def _pool(self) -> httpx.AsyncClient:
        if self._client is None:
            await self.start()
        assert self._client is not None
        return self._client

    async def close(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None
            self._wire = self._lean = None

    def for_era(self, era: Era) -> ClientTransport:
        cls = LegacyHttpTransport if era == "legacy" else HttpTransport
        if type(self) is cls:
            return self
        new = cls(self.url, headers=self.static_headers, header_provider=self.header_provider,
                  http_client=self._given_client, verify=self._verify, auth_headers=self.auth_headers,
                  max_response_bytes=self.max_response_bytes, sse_fallback=self.sse_fallback)
        new.on_notification = self.on_notification
        new.on_request = self.on_request
        if self._client is not None:  # hand the open pool over
            new._client, new._owns_client = self._client, self._owns_client
            new._wire = self._wire
            self._owns_client = False
        return new

    async def fallback(self, refusal: Response) -> ClientTransport | None:
        """After ``initialize`` was refused with HTTP 400, 404 or 405: GET the URL, and if it
        opens an event stream whose first event is ``endpoint``, the HTTP+SSE transport on it."""
        from ._sse_legacy import FALLBACK_STATUSES, NotSse, SseTransport

        if not self.sse_fallback or refusal.status not in FALLBACK_STATUSES:
            return None
        new = SseTransport(self.url, headers=self.static_headers, header_provider=self.header_provider,
                           http_client=self._given_client, verify=self._verify, auth_headers=self.auth_headers,
                           max_response_bytes=self.max_response_bytes)
        new.on_notification, new.on_request = self.on_notification, self.on_request
        new.adopt_pool(self._client, False)
        try:
            await new.start()
        except (NotSse, HttpStatusError) as exc:
            log.info("initialize got HTTP %s and the URL is no HTTP+SSE endpoint either: %s", refusal.status, exc)
            return None
        log.info("initialize got HTTP %s; %s speaks the 2024-11-05 HTTP+SSE transport", refusal.status, self.url)
        new.adopt_pool(self._client, self._owns_client)  # the pool goes with the connection
        self._owns_client = False
        return new

    # ------------------------------------------------------------ headers
    async def _headers(self, method: str, params: dict[str, Any] | None, version: str | None) -> dict[str, str]:
        return await self._with_configured(self._base_headers(method, params, version))

    def _base_headers(self, method: str, params: dict[str, Any] | None, version: str | None) -> dict[str, str]:
        """The transport's headers for a request, before the configured ones."""
        h = dict(_ACCEPT)
        annotations = None
        if method == "tools/call" and params:
            annotations = self.tool_annotations.get(params.get("name"))  # type: ignore[arg-type]
        if version is not None:
            try:
                h.update(H.client_headers(method, params, version, annotations))
            except ValueError as exc:
                raise TransportError(f"cannot send {method} over HTTP: {exc}") from None
        return h

    async def _with_configured(self, h: dict[str, str]) -> dict[str, str]:
        """Add the static headers and the provider's."""
        return await with_configured(h, self.static_headers, self.header_provider)

    def use_tool_annotations(self, annotations: dict[str, dict[str, tuple[str, ...]]]) -> None:
        self.tool_annotations = annotations

    def _credentials(self, client: httpx.AsyncClient, request: httpx.Request) -> str | None:
        """The partition of the credentials ``request`` carries (None when not all are visible)."""
        if not credentials_visible(client):
            return None
        return partition(request.headers.multi_items())

    async def outgoing_credentials(self, headers: Mapping[str, str] | None = None) -> str | None:
        client = await self._pool()
        hdrs = await self._headers("", None, None)
        if headers:
            hdrs.update(headers)
        return self._credentials(client, client.build_request("POST", self.url, headers=hdrs))

    # ------------------------------------------------------------ requests
    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        import httpx

        client = self._client if self._client is not None else await self._pool()
        version = (params.get("_meta") or {}).get(M.PROTOCOL_VERSION)
        hdrs = self._base_headers(method, params, version)
        if self.header_provider is None:  # (no coroutine for what needs no waiting)
            hdrs.update(self.static_headers)
        else:
            hdrs = await self._with_configured(hdrs)
        if headers:
            hdrs.update(headers)
        body = codec.encode_request(id, method, params)
        try:
            if self._wire is not None:
                answer = await self._request_lean(client, id, hdrs, body, on_note)
                if answer is not None:
                    return answer
            built = client.build_request("POST", self.url, content=body, headers=hdrs)
            credentials = self._credentials(client, built)
            resp = await self._send_following(client, built)
            if isinstance(resp, Response):  # a redirect not followed
                return resp
            return await self._answer(resp, id, on_note, credentials)
        except httpx.HTTPError as exc:
            raise TransportError(connection_failure(self.url, exc)) from None

    async def _answer(self, resp: httpx.Response, id: codec.RequestId, on_note: OnNote | None,
                      credentials: str | None) -> Response:
        try:  # leaving early (a limit, a cancel) closes the connection: nothing half-read is reused
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                msg = await self._read_sse(resp, id, on_note)
                return Response(msg, resp.status_code, resp.headers, credentials=credentials)
            data = await _limits.read_body(resp, self.max_response_bytes, self.url)
            answer = _response(resp.status_code, resp.headers, data)
            answer.credentials = credentials
            return answer
        finally:
            await resp.aclose()

    async def _request_lean(self, client: httpx.AsyncClient, id: codec.RequestId, hdrs: dict[str, str], body: bytes,
                            on_note: OnNote | None) -> Response | None:
        """The POST on the lean path (see ``_lean``); None when it must go the usual way (then
        nothing was sent, or a redirect was dropped unread)."""
        lean = self._lean
        if lean is None or lean.url != self.url:
            from . import _lean

            lean = self._lean = _lean.lean_post(self.url, client, self._wire)
        if lean is None or not lean.applies(self.url):
            return None
        prepared = lean.prepared(hdrs)
        if prepared is None:
            return None
        prefix, credentials = prepared
        conn, ex = await lean.send(prefix, body)
        headers = lean.headers(ex)
        if lean.plain(ex):
            data = await lean.read(conn, ex, headers, self.max_response_bytes)
            answer = _response(ex.status, headers, data)
            answer.credentials = credentials
            return answer
        resp = lean.wrap(conn, ex)
        lean.keep_cookies(resp)
        if resp.status_code in (301, 302, 303, 307, 308) and "location" in resp.headers:
            built = client.build_request("POST", self.url, content=body, headers=hdrs)
            followed = await self._send_following(client, built, resp)  # by the usual rules
            if isinstance(followed, Response):
                return followed
            resp = followed
        return await self._answer(resp, id, on_note, credentials)

    async def _send_following(self, client: httpx.AsyncClient, request: httpx.Request,
                              first: httpx.Response | None = None) -> httpx.Response | Response:
        """Send ``request``, following the redirects that are safe to follow: 307 and 308 (the
        method and body are kept) to the same origin, at most :data:`MAX_REDIRECTS` times.
        The endpoint then is the new URL for the later requests too. Any other redirect is an
        answer without a message (an HttpStatusError for the caller, never retried) saying
        where it pointed: a cross-origin one is never followed (the request's credentials
        would go to another server), nor one that turns the POST into a GET (301, 302, 303).
        ``first``: the answer to ``request`` when it was already sent (the lean path)."""
        for _hop in range(MAX_REDIRECTS + 1):
            resp = first if first is not None else await client.send(request, stream=True)
            first = None
            if resp.status_code not in (301, 302, 303, 307, 308) or "location" not in resp.headers:
                return resp
            await resp.aclose()
            target = request.url.join(resp.headers["location"])
            status = resp.status_code
            if (target.scheme, target.host, target.port) != (request.url.scheme, request.url.host, request.url.port):
                return Response(None, status, resp.headers, b"", f"the server redirects to another origin ({target}, "
                                f"HTTP {status}); mcpkit does not follow it, so no credentials go there: use that URL "
                                "if you trust it")
            if status not in (307, 308):
                return Response(None, status, resp.headers, b"", f"the server redirects to {target} with HTTP {status}, "
                                "which would turn the POST into a GET: use that URL")
            log.info("following HTTP %d from %s to %s", status, request.url, target)
            self.url = str(target)
            request = client.build_request(request.method, target, content=request.content, headers=request.headers)
        return Response(None, resp.status_code, resp.headers, b"", f"more than {MAX_REDIRECTS} redirects from {self.url}")

    def _lines(self, resp: httpx.Response) -> AsyncIterator[str]:
        return _limits.lines(resp, self.max_response_bytes, self.url)

    def _events(self, resp: httpx.Response) -> AsyncIterator[sse.Event]:
        return sse_events(self._lines(resp), self.max_response_bytes, self.url)

    async def _discard(self, method: str, content: bytes | None, headers: Mapping[str, str]) -> int:
        """Send a request whose answer has nothing for us (a notification, our answer to the
        server, DELETE); its body is read and dropped (so the connection can be reused), up to
        ``max_response_bytes`` (then the connection is closed). Returns the status."""
        client = await self._pool()
        async with client.stream(method, self.url, content=content, headers=headers) as resp:
            read = 0
            async for raw in resp.aiter_raw():
                read += len(raw)
                if read > self.max_response_bytes:
                    break
            return resp.status_code

    async def notify(self, method: str, params: dict[str, Any] | None, *, headers: Mapping[str, str] | None = None) -> None:
        version = ((params or {}).get("_meta") or {}).get(M.PROTOCOL_VERSION)
        hdrs = await self._headers(method, params, version)
        if headers:
            hdrs.update(headers)
        await self._discard("POST", codec.encode_notification(method, params), hdrs)

    async def _event(self, data: str, id: codec.RequestId, on_note: OnNote | None) -> codec.Response | None:
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
        elif type(msg) is codec.Request:
            await self._server_request(msg)
        return None

    async def _read_sse(self, resp: httpx.Response, id: codec.RequestId, on_note: OnNote | None) -> codec.Response:
        async for ev in self._events(resp):
            if ev.data:
                answer = await self._event(ev.data, id, on_note)
                if answer is not None:
                    return answer
        raise TransportError("the server closed the event stream before answering")

    async def _server_request(self, msg: codec.Request) -> None:
        log.warning("server sent a request (%s) on a 2026-07-28 stream; ignoring it", msg.method)


def connection_failure(url: str, exc: Exception) -> str:
    """One line for an HTTP request that got no answer at all."""
    import httpx

    where = httpx.URL(url)
    hostport = f"{where.host}:{where.port or (443 if where.scheme == 'https' else 80)}"
    text = str(exc)
    if isinstance(exc, httpx.ConnectError):
        if "All connection attempts failed" in text or "refused" in text.lower():
            return f"connecting to {hostport} failed: nothing is listening there (is the server running?)"
        if "name" in text.lower() and ("not known" in text or "resolution" in text.lower() or "servname" in text):
            return f"cannot find the host {where.host} ({text})"
    if isinstance(exc, httpx.TimeoutException):
        return f"HTTP request to {url} timed out ({type(exc).__name__})"
    return f"HTTP request to {url} failed: {text or type(exc).__name__}"


def _snippet(headers: Mapping[str, str], data: bytes, limit: int = 120) -> str:
    """What a non-JSON-RPC body says, in one short line (an HTML page: its title, or its text)."""
    import re

    text = data[:4096].decode("utf-8", "replace")
    if "html" in headers.get("content-type", "").lower() or text.lstrip()[:1] == "<":
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        text = title.group(1) if title else re.sub(r"<[^>]*>", " ", re.sub(r"(?is)<(script|style).*?</\1>", " ", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _response(status: int, headers: Mapping[str, str], data: bytes) -> Response:
    """A JSON answer: its message, or what is wrong with it."""
    try:
        msg = codec.decode(data)
    except codec.InvalidMessage:
        snippet = _snippet(headers, data)
        hint = " (is the URL's path the server's MCP endpoint?)" if status in (404, 405) else ""
        return Response(None, status, headers, data,
                        f"HTTP {status} without a JSON-RPC body{': ' + snippet if snippet else ''}{hint}")
    if type(msg) is not codec.Response:
        return Response(None, status, headers, data,
                        f"HTTP {status}: the server answered with a {type(msg).__name__}, not a response")
    return Response(msg, status, headers)


class LegacyHttpTransport(HttpTransport):
    """2025-11-25 Streamable HTTP: an ``Mcp-Session-Id`` session, a GET stream for the
    server's own messages, server requests answered by POST, resumable request streams
    (``Last-Event-ID``), and DELETE on close."""

    capabilities: ClassVar[Capabilities] = Capabilities(kind="http", sessionful=True)

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self.session_id: str | None = None
        self.version: str | None = None
        self._stream: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _base_headers(self, method: str, params: dict[str, Any] | None, version: str | None) -> dict[str, str]:
        h = dict(_ACCEPT)
        if self.version is not None:
            h["MCP-Protocol-Version"] = self.version
        if self.session_id is not None:
            h["Mcp-Session-Id"] = self.session_id
        return h

    async def _own_headers(self, http_method: str = "POST") -> dict[str, str]:
        """Headers for the transport's own requests (GET stream, DELETE, our answers)."""
        h = await self._headers("", None, None)
        if self.auth_headers is not None:
            h.update(await self.auth_headers(http_method))
        return h

    def session_started(self, version: str) -> None:
        self.version = version

    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        resp = await super().request(id, method, params, on_note or self.on_notification, headers=headers)
        if method == "initialize" and resp.message is not None and resp.message.error is None and resp.headers is not None:
            self.session_id = resp.headers.get("mcp-session-id")
        return resp

    async def _read_sse(self, resp: httpx.Response, id: codec.RequestId, on_note: OnNote | None) -> codec.Response:
        """Read a session request's stream; if it ends before our answer, resume it with a GET
        carrying Last-Event-ID after the server's retry delay (2025-11-25 resumability)."""
        client = await self._pool()
        last_id: str | None = None
        retry_ms = 1000
        stream = resp
        try:
            for _ in range(6):
                async for ev in self._events(stream):
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
                hdrs = await self._own_headers("GET")
                hdrs["Accept"] = "text/event-stream"
                hdrs["Last-Event-ID"] = last_id
                if stream is not resp:
                    await stream.aclose()
                stream = await client.send(client.build_request("GET", self.url, headers=hdrs), stream=True)
                if stream.status_code != 200:
                    break
        finally:
            if stream is not resp:
                await stream.aclose()
        raise TransportError("the server closed the event stream before answering")

    async def _server_request(self, msg: codec.Request) -> None:
        async def answer() -> None:
            body = await answer_request(self.on_request, msg)
            try:
                await self._discard("POST", body, await self._own_headers())
            except Exception as exc:
                log.warning("could not send our answer to the server's %s: %s", msg.method, exc)

        task = asyncio.ensure_future(answer())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def open_session_stream(self) -> None:
        """Open the session's GET stream in the background (a 405 means the server has none),
        waiting at most :data:`SESSION_STREAM_WAIT` seconds for its answer's head: a message the
        server pushes right after the handshake (an elicitation during the first tool call) then
        finds the stream open instead of racing it."""
        opened = asyncio.Event()
        self._stream = asyncio.ensure_future(self._listen(opened))
        try:
            await asyncio.wait_for(opened.wait(), SESSION_STREAM_WAIT)
        except TimeoutError:
            log.debug("the session stream's answer is not in yet; going on without waiting for it")

    async def _listen(self, opened: asyncio.Event | None = None) -> None:
        try:
            client = await self._pool()
            hdrs = await self._own_headers("GET")
            hdrs["Accept"] = "text/event-stream"
            async with client.stream("GET", self.url, headers=hdrs) as resp:
                if opened is not None:
                    opened.set()
                if resp.status_code != 200:
                    return
                async for ev in self._events(resp):
                    if not ev.data:
                        continue
                    try:
                        msg = codec.decode(ev.data, parse_params=True)
                    except codec.InvalidMessage:
                        continue
                    if type(msg) is codec.Notification:
                        if self.on_notification is not None:
                            self.on_notification(msg.method, msg.params or {})
                    elif type(msg) is codec.Request:
                        await self._server_request(msg)
        except ResponseTooLarge as exc:
            log.warning("the session stream was closed: %s", exc)
        except Exception as exc:
            log.debug("the session stream ended: %r", exc)
        finally:
            if opened is not None:
                opened.set()

    async def close(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        if self.session_id is not None and self._client is not None:
            try:
                await self._discard("DELETE", None, await self._own_headers("DELETE"))
            except Exception:
                pass
            self.session_id = None
        await super().close()
