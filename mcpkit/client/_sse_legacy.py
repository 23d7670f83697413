"""The 2024-11-05 HTTP+SSE client transport (deprecated by Streamable HTTP, still widely deployed).

The client GETs the SSE endpoint and keeps that stream open; the server's first event,
``endpoint``, names the URL to POST messages to. Every answer, notification and server request
then arrives on the stream as a ``message`` event; a POST's own answer says only whether the
message was taken (``202 Accepted``).

The rules of the Streamable HTTP client hold here too: the ``endpoint`` must be on the SSE
URL's origin (the messages, and the credentials on them, go nowhere else; another origin is
refused and the stream closed); every SSE line and event, and every POST answer, is bounded by
``max_response_bytes``. Sessions on this transport are always the ``initialize`` handshake
(2025-11-25 and earlier; the server picks the version, 2024-11-05 included).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from ..errors import HttpStatusError, TransportClosed, TransportError
from ..protocol import codec, sse
from . import _limits
from ._credentials import partition
from ._pending import PendingRequests
from ._transport import Capabilities, ClientTransport, Era, OnNote, Response, answer_request

if TYPE_CHECKING:
    import httpx

    from ._http import AuthHeaders, HeaderProvider

log = logging.getLogger("mcpkit.client")

#: The HTTP statuses of a refused ``initialize`` POST after which a client tries the old
#: transport (the 2025-11-25 transports page, "Backwards Compatibility").
FALLBACK_STATUSES = frozenset({400, 404, 405})
#: Seconds to wait for the ``endpoint`` event once the stream is open.
ENDPOINT_TIMEOUT = 10.0


class NotSse(TransportError):
    """The URL does not open a 2024-11-05 HTTP+SSE stream (no event stream, or its first event
    is not ``endpoint``)."""


def is_sse_url(url: str) -> bool:
    """Whether ``url``'s path ends in ``/sse`` (the HTTP+SSE endpoint's usual name)."""
    return urlsplit(url).path.rstrip("/").endswith("/sse")


def origin(url: httpx.URL) -> tuple[str, str, int]:
    """(scheme, host, port) with the scheme's default port filled in."""
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


class SseTransport(PendingRequests, ClientTransport):
    """2024-11-05 HTTP+SSE: a GET stream carries the server's messages, POSTs to the
    ``endpoint`` it names carry ours. Options as for the Streamable HTTP transport."""

    capabilities: ClassVar[Capabilities] = Capabilities(kind="http", sessionful=True, legacy_only=True)

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, header_provider: HeaderProvider | None = None,
                 http_client: httpx.AsyncClient | None = None, verify: Any = True, auth_headers: AuthHeaders | None = None,
                 max_response_bytes: int = _limits.DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.url = url
        self.max_response_bytes = _limits.check_limit(max_response_bytes)
        self.static_headers = dict(headers or {})
        self.header_provider = header_provider
        self.auth_headers = auth_headers
        self._client: httpx.AsyncClient | None = http_client
        self._owns_client = http_client is None
        self._verify = verify
        #: Where messages are POSTed (from the ``endpoint`` event; None until connected).
        self.endpoint: str | None = None
        self._init_pending()
        self._stream: httpx.Response | None = None
        self._reader: asyncio.Task[None] | None = None

    def adopt_pool(self, client: httpx.AsyncClient | None, owns: bool) -> None:
        """Use ``client`` (another transport's pool); ``owns``: close it on :meth:`close`."""
        if client is not None:
            self._client, self._owns_client = client, owns

    @property
    def closed(self) -> bool:
        """Whether the SSE stream is gone (the server closed it, or it was refused)."""
        return self._closed is not None

    # ------------------------------------------------------------ headers
    async def _configured(self) -> dict[str, str]:
        from ._http import with_configured

        return await with_configured({}, self.static_headers, self.header_provider)

    async def _own_headers(self, http_method: str) -> dict[str, str]:
        """Headers for the transport's own requests (the GET stream, our answers, notifications)."""
        h = await self._configured()
        if self.auth_headers is not None:
            h.update(await self.auth_headers(http_method))
        return h

    # ------------------------------------------------------------ connecting
    async def _pool(self) -> httpx.AsyncClient:
        if self._client is None:
            from . import _wire

            self._client = _wire.client(self.url, self._verify)
        return self._client

    async def start(self) -> None:
        """GET the SSE URL and wait for its ``endpoint`` event (raises :class:`NotSse` when the
        URL is no HTTP+SSE endpoint, TransportError when the endpoint is on another origin)."""
        if self._reader is not None and not self._reader.done():
            return
        import httpx

        from ._http import _snippet, connection_failure

        client = await self._pool()
        self._closed = None
        hdrs = await self._own_headers("GET")
        hdrs["Accept"] = "text/event-stream"
        try:
            resp = await client.send(client.build_request("GET", self.url, headers=hdrs), stream=True)
        except httpx.HTTPError as exc:
            raise TransportError(connection_failure(self.url, exc)) from None
        opened = False
        try:
            kind = resp.headers.get("content-type", "")
            if resp.status_code != 200 or not kind.startswith("text/event-stream"):
                data = await _limits.read_body(resp, self.max_response_bytes, self.url)
                said = _snippet(resp.headers, data)
                said = f" ({said})" if said else ""
                if resp.status_code in (401, 403):
                    raise HttpStatusError(resp.status_code, f"GET {self.url}: HTTP {resp.status_code}{said}", data,
                                          resp.headers)
                what = f"HTTP {resp.status_code}" if resp.status_code != 200 else f"a {kind or 'body without a type'}"
                raise NotSse(f"GET {self.url} answered {what}{said}, not an event stream: is it a 2024-11-05"
                             " HTTP+SSE endpoint?")
            events = _limits.events(_limits.lines(resp, self.max_response_bytes, self.url),
                                    self.max_response_bytes, self.url)
            try:
                first = await asyncio.wait_for(anext(events), ENDPOINT_TIMEOUT)
            except StopAsyncIteration:
                raise NotSse(f"GET {self.url}: the event stream ended before an endpoint event") from None
            except TimeoutError:
                raise NotSse(f"GET {self.url}: no endpoint event within {ENDPOINT_TIMEOUT:g} s") from None
            if first.event != "endpoint":
                raise NotSse(f"GET {self.url}: the first event is {first.event!r}, not 'endpoint'")
            self.endpoint = self._endpoint(resp.url, first.data)
            self._stream = resp
            self._reader = asyncio.get_running_loop().create_task(self._read(events))
            opened = True
        except httpx.HTTPError as exc:
            raise TransportError(connection_failure(self.url, exc)) from None
        finally:
            if not opened:
                await resp.aclose()

    def _endpoint(self, stream_url: httpx.URL, data: str) -> str:
        """The endpoint event's URL, resolved against the stream's; refused on another origin."""
        try:
            target = stream_url.join(data.strip())
        except Exception:
            raise TransportError(f"the server's endpoint event is not a URL: {data[:200]!r}") from None
        if not data.strip() or origin(target) != origin(stream_url):
            raise TransportError(f"the server's endpoint event points to another origin ({str(target)[:200]}); "
                                 f"mcpkit sends messages only to {stream_url.scheme}://{stream_url.netloc.decode()}")
        return str(target)

    async def _read(self, events: AsyncIterator[sse.Event]) -> None:
        """Dispatch the stream's ``message`` events until it ends."""
        why: BaseException = TransportClosed("the server closed the SSE stream")
        try:
            async for ev in events:
                if ev.event != "message" or not ev.data:
                    continue
                try:
                    msg = codec.decode(ev.data, parse_params=True)
                except codec.InvalidMessage:
                    log.warning("ignoring an SSE event that is not a JSON-RPC message")
                    continue
                self._dispatch(msg)
        except asyncio.CancelledError:
            why = TransportClosed("the SSE stream was closed")
            raise
        except TransportError as exc:  # a line or event over the limit
            log.warning("the SSE stream was closed: %s", exc)
            why = exc
        except Exception as exc:
            why = TransportClosed(f"the SSE stream broke: {exc or type(exc).__name__}")
        finally:
            self._fail_all(why)

    async def _answer(self, msg: codec.Request) -> None:
        body = await answer_request(self.on_request, msg)
        try:
            await self._post(body, await self._own_headers("POST"))
        except Exception as exc:
            log.warning("could not send our answer to the server's %s: %s", msg.method, exc)

    # ------------------------------------------------------------ sending
    async def _post(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        """POST ``body`` to the endpoint: the answer's status, headers and (bounded) body."""
        import httpx

        from ._http import connection_failure

        if self._closed is not None:
            raise self._closed
        if self.endpoint is None:
            raise TransportError("the HTTP+SSE transport is not connected")
        client = await self._pool()
        hdrs = {"Content-Type": "application/json", **headers}
        try:
            async with client.stream("POST", self.endpoint, content=body, headers=hdrs) as resp:
                data = await _limits.read_body(resp, self.max_response_bytes, self.endpoint)
                return resp.status_code, resp.headers, data
        except httpx.HTTPError as exc:
            raise TransportError(connection_failure(self.endpoint, exc)) from None

    async def request(self, id: codec.RequestId, method: str, params: dict[str, Any], on_note: OnNote | None,
                      *, headers: Mapping[str, str] | None = None) -> Response:
        from ._http import _response

        fut, token = self._open(id, method, params, on_note)
        hdrs = await self._configured()
        hdrs.update(headers or {})
        try:
            status, answer_headers, data = await self._post(codec.encode_request(id, method, params), hdrs)
            if not 200 <= status < 300:
                return _response(status, answer_headers, data)
            return Response(await fut, status, answer_headers, credentials=await self.outgoing_credentials(headers))
        except asyncio.CancelledError:
            answered = fut.done() and not fut.cancelled()
            if self._closed is None and not answered:  # abandoned (a time limit): tell the server
                try:
                    note = {"requestId": id, "reason": "cancelled by client"}
                    await self._post(codec.encode_notification("notifications/cancelled", note), hdrs)
                except Exception:
                    pass
            raise
        finally:
            self._release(id, token)

    async def notify(self, method: str, params: dict[str, Any] | None, *, headers: Mapping[str, str] | None = None) -> None:
        hdrs = await self._configured()
        hdrs.update(headers or {})
        await self._post(codec.encode_notification(method, params), hdrs)

    async def outgoing_credentials(self, headers: Mapping[str, str] | None = None) -> str | None:
        from ._http import credentials_visible

        client = await self._pool()
        if self.endpoint is None or not credentials_visible(client):
            return None
        hdrs = await self._configured()
        hdrs.update(headers or {})
        return partition(client.build_request("POST", self.endpoint, headers=hdrs).headers.multi_items())

    def for_era(self, era: Era) -> ClientTransport:
        return self  # this transport carries only initialize-handshake sessions

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass
            self._reader = None
        if self._stream is not None:
            await self._stream.aclose()
            self._stream = None
        self.endpoint = None
        self.pending.clear()
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None
