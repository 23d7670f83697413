"""HTTP limits and content negotiation for the Streamable HTTP server.

Two halves:

* :func:`check_post` / :func:`check_get` — the ``Content-Type`` and ``Accept`` rules, checked
  by the ASGI app (so they hold under any ASGI server).
* :class:`Limits` and :func:`http_protocol` — what only the HTTP server can enforce, because it
  happens before the app is called: header count and size (431), a deadline for a request's
  headers and body (408, then close), connection and in-flight caps (503 with
  ``Retry-After``), the keep-alive idle limit, answering a request whose client
  half-closed its side, and closing after a refusal without resetting a client that is
  still sending (the lingering close of :mod:`._linger`, h11 too). They are a small subclass of uvicorn's httptools protocol,
  used only under the uvicorn versions :mod:`._uvicorn_guard` accepts;
  :func:`uvicorn_options` turns :class:`Limits` into the ``uvicorn.Config`` arguments.

Every refusal carries a JSON-RPC error body.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ..protocol import codec, errors
from . import _uvicorn_guard
from ._linger import LingeringTransport, lingering_h11_protocol

log = logging.getLogger("mcpkit.http")

JSON = "application/json"
SSE = "text/event-stream"


# ====================================================================== Content-Type / Accept
def _media_ranges(accept: str) -> list[tuple[str, float]]:
    """``Accept`` -> [(media range, q)]; malformed q values count as 1."""
    out = []
    for part in accept.split(","):
        fields = part.split(";")
        media = fields[0].strip().lower()
        if not media:
            continue
        q = 1.0
        for param in fields[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 1.0
        out.append((media, q))
    return out


def accepts(accept: str, media_type: str) -> bool:
    """Whether ``accept`` allows ``media_type`` (exact, ``type/*`` or ``*/*``, q > 0).

    The most specific range decides, as RFC 9110 says (so ``*/*, application/json;q=0`` refuses JSON).
    """
    kind = media_type.split("/", 1)[0] + "/*"
    best = -1
    q_best = 0.0
    for media, q in _media_ranges(accept):
        rank = 2 if media == media_type else 1 if media == kind else 0 if media == "*/*" else -1
        if rank > best:
            best, q_best = rank, q
    return best >= 0 and q_best > 0


def content_type_ok(value: str | None) -> bool:
    """``application/json`` with optional parameters (charset). An absent header is accepted:
    RFC 9110 lets the recipient sniff, and some peers omit it; a wrong one is refused."""
    if value is None:
        return True
    return value.split(";", 1)[0].strip().lower() == JSON


#: (Content-Type, Accept) pairs that passed :func:`check_post`: a client sends the same two on
#: every request, so the parse runs once per pair (bounded: cleared when full).
_POST_OK: set[tuple[str | None, str | None]] = set()
_POST_OK_MAX = 256


def check_post(hdrs: dict[str, str]) -> tuple[int, errors.MCPError] | None:
    """The ``Content-Type`` (415) and ``Accept`` (406) rules for a POST, both eras.

    Both revisions say the client MUST list ``application/json`` and ``text/event-stream``;
    peers differ (some send only one, some none), so mcpkit refuses only an ``Accept`` that
    allows neither — it can answer in either. An absent ``Accept`` means anything.
    """
    key = (hdrs.get("content-type"), hdrs.get("accept"))
    if key in _POST_OK:
        return None
    refused = _check_post(hdrs)
    if refused is None:
        if len(_POST_OK) >= _POST_OK_MAX:
            _POST_OK.clear()
        _POST_OK.add(key)
    return refused


def _check_post(hdrs: dict[str, str]) -> tuple[int, errors.MCPError] | None:
    if not content_type_ok(hdrs.get("content-type")):
        return 415, errors.invalid_request(
            f"Unsupported Media Type: the body must be {JSON}, not {hdrs.get('content-type')!r}")
    accept = hdrs.get("accept")
    if accept is not None and not (accepts(accept, JSON) or accepts(accept, SSE)):
        return 406, errors.invalid_request(f"Not Acceptable: the Accept header must allow {JSON} and {SSE}")
    return None


def check_get(hdrs: dict[str, str]) -> tuple[int, errors.MCPError] | None:
    """A GET opens an event stream (2025-11-25): its ``Accept`` must allow ``text/event-stream``."""
    accept = hdrs.get("accept")
    if accept is not None and not accepts(accept, SSE):
        return 406, errors.invalid_request(f"Not Acceptable: the Accept header must allow {SSE}")
    return None


# ====================================================================== server limits
@dataclass(frozen=True)
class Limits:
    """Per-process limits of :func:`~mcpkit.transports.http.run_http_server` (each is also a
    keyword option of it; ``None`` switches a limit off).

    max_header_bytes: the request line plus all headers (431 above it).
    max_headers: the number of header fields (431 above it).
    request_timeout: seconds from a request's first byte (or the connection's opening) until
        its headers and body are complete (408, then close; checked once a second).
    keep_alive_timeout: seconds an idle keep-alive connection is kept.
    max_connections: open connections per process; a request on a connection above it gets 503.
    max_inflight: requests being handled per process; more get 503 with ``Retry-After``.
    retry_after: the ``Retry-After`` value of those 503s, in seconds.
    """

    max_header_bytes: int | None = 64 * 1024
    max_headers: int | None = 100
    request_timeout: float | None = 20.0
    keep_alive_timeout: float = 15.0
    max_connections: int | None = 1000
    max_inflight: int | None = 1000
    retry_after: int = 1

    @classmethod
    def pop_from(cls, options: dict[str, Any]) -> Limits:
        """Take the limit options out of ``options`` (the rest are the app's)."""
        names = cls.__dataclass_fields__.keys()
        return cls(**{k: options.pop(k) for k in list(options) if k in names})


def refusal(status: int, error: errors.MCPError, *, close: bool = True,
            extra: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    """A whole HTTP/1.1 response carrying a JSON-RPC error (written straight to a socket)."""
    from http import HTTPStatus

    body = codec.encode_error(None, error)
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode(),
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n"]
    head += [name + b": " + value + b"\r\n" for name, value in extra]
    if close:
        head.append(b"connection: close\r\n")
    return b"".join(head) + b"\r\n" + body


def busy_app(retry_after: int) -> Any:
    """The ASGI app that answers a request over the connection or in-flight cap."""
    body = codec.encode_error(None, errors.MCPError(errors.INTERNAL_ERROR,
                                                    "Service Unavailable: too many requests in flight; retry later"))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"retry-after", str(retry_after).encode()), (b"connection", b"close")]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a request that breaks a limit."""


class _Sweeper:
    """Once a second, asks every open connection whether its pending request is late; runs
    while there are connections."""

    def __init__(self) -> None:
        self.running = False

    def start(self, loop: asyncio.AbstractEventLoop, connections: set[Any]) -> None:
        if not self.running:
            self.running = True
            loop.call_later(1.0, self._sweep, loop, connections)

    def _sweep(self, loop: asyncio.AbstractEventLoop, connections: set[Any]) -> None:
        now = loop.time()
        for conn in list(connections):
            expire = getattr(conn, "expire_if_late", None)
            if expire is not None:
                expire(now)
        if connections:
            loop.call_later(1.0, self._sweep, loop, connections)
        else:
            self.running = False


def http_protocol(limits: Limits) -> type[asyncio.Protocol] | None:
    """uvicorn's httptools protocol with ``limits`` enforced, or None without httptools
    (uvicorn's h11 protocol is used then, with :func:`uvicorn_options`' coarser limits)."""
    try:
        import httptools
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover
        return None

    max_bytes = limits.max_header_bytes
    max_count = limits.max_headers
    deadline = limits.request_timeout
    max_conn = limits.max_connections
    max_inflight = limits.max_inflight
    busy = busy_app(limits.retry_after)
    _sweeper = _Sweeper()
    too_large = errors.invalid_request("Request Header Fields Too Large")
    timeout_error = errors.invalid_request("Request Timeout: the request's headers and body were not received in time")
    bad_http = errors.parse_error("Invalid HTTP request")

    class LimitedHttpTools(HttpToolsProtocol):
        """Counts header bytes as they arrive (so a huge header never accumulates), checks each
        request's deadline (one sweep a second over the open connections: a request costs a
        clock read, no timer), and keeps a half-closed connection open until its answer is sent."""

        _in_head = True  # between a request's first byte (or the connection's start) and its headers' end
        _head_bytes = 0  # bytes received while in the head (a cheap upper bound of the head's size)
        _deadline = 0.0  # loop time by which the current request must be complete (0: none pending)
        _eof = False
        _receiving = False  # between a request's first byte and its end: the client may still send
        _refusing = False  # a refusal was written: close lingering (see ._linger)

        # -------------------------------------------------------------- connection
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(LingeringTransport(transport, self._may_still_send))
            if deadline is not None:
                self._deadline = self.loop.time() + deadline
                _sweeper.start(self.loop, self.connections)

        def eof_received(self) -> bool | None:  # type: ignore[override]
            """The client closed its side. A half-close (``shutdown(SHUT_WR)``) and a full close
            look the same here, so a complete request being handled keeps the socket open and
            the server probes: it writes an interim ``100 Continue`` (which HTTP/1.1 clients must
            accept and skip), now and then again; a client that is gone answers with a reset,
            the next write fails, and the handler is cancelled as on any disconnect. A client
            that only half-closed gets its answer, and then the connection is closed.

            Once the response has started (an event stream) nothing can be interleaved, so an
            EOF then is taken as a disconnect, as before."""
            cycle = self.cycle
            if (cycle is not None and not cycle.response_started and not cycle.response_complete
                    and not cycle.more_body and not self._in_head):
                self._eof = True
                cycle.keep_alive = False
                self._probe(0.2)
                return True
            return None  # nothing to answer: the transport closes

        def _may_still_send(self) -> bool:
            """Whether closing now could leave the client sending (then the close lingers)."""
            return not self._eof and (self._refusing or self._receiving)

        def _probe(self, wait: float) -> None:
            cycle = self.cycle
            if self.transport.is_closing() or cycle is None or cycle.response_started or cycle.response_complete:
                return
            self.transport.write(_CONTINUE)
            self.loop.call_later(wait, self._probe, min(wait * 2, 5.0))

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._eof and not self.transport.is_closing():
                self.transport.close()

        # -------------------------------------------------------------- deadline
        def expire_if_late(self, now: float) -> None:
            """Called by the sweeper: 408 and close when the pending request is late."""
            if not self._deadline or now < self._deadline or self.transport.is_closing():
                return
            self._deadline = 0.0
            cycle = self.cycle
            if cycle is None or not cycle.response_started:
                log.info("closing a connection whose request was not received within %ss", deadline)
                self._refusing = True
                self.transport.write(refusal(408, timeout_error))
            if cycle is not None:
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()

        # -------------------------------------------------------------- parsing
        def data_received(self, data: bytes) -> None:
            if self._in_head:
                self._head_bytes += len(data)
            self._unset_keepalive_if_required()
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()
                return
            except httptools.HttpParserError as exc:
                if isinstance(exc.__context__, _Refused):
                    self._refuse(431, too_large)
                else:
                    log.info("invalid HTTP request received")
                    self._refuse(400, bad_http)
                return
            if self._in_head and max_bytes is not None and self._head_bytes > max_bytes:
                self._refuse(431, too_large)  # an unfinished head already over the limit

        def _refuse(self, status: int, error: errors.MCPError) -> None:
            self._deadline = 0.0
            self._refusing = True
            if not self.transport.is_closing():
                self.transport.write(refusal(status, error))
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._refuse(400, errors.parse_error(msg))

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head = True
            self._receiving = True
            if deadline is not None and not self._deadline:
                self._deadline = self.loop.time() + deadline

        def on_headers_complete(self) -> None:
            if max_count is not None and len(self.headers) > max_count:
                raise _Refused
            if max_bytes is not None and self._head_bytes > max_bytes:
                # The bytes received may include body bytes: count the head exactly (rarely reached).
                size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
                if size > max_bytes:
                    raise _Refused
            self._in_head = False
            self._head_bytes = 0
            if (max_conn is not None and len(self.connections) > max_conn) or (
                    max_inflight is not None and len(self.tasks) >= max_inflight):
                log.warning("refusing a request with 503: %d connections, %d requests in flight",
                            len(self.connections), len(self.tasks))
                app = self.app
                self.app = busy
                try:
                    super().on_headers_complete()
                finally:
                    self.app = app
            else:
                super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._deadline = 0.0
            self._receiving = False
            super().on_message_complete()

    return LimitedHttpTools


def uvicorn_options(limits: Limits, *, parser: str = "auto") -> dict[str, Any]:
    """The ``uvicorn.Config`` arguments that enforce ``limits``; ``parser="h11"`` picks the
    h11 protocol even when httptools is installed (what an install without httptools gets).

    Under a uvicorn outside the tested versions (:mod:`._uvicorn_guard`) no uvicorn class is
    subclassed: uvicorn's own h11 protocol serves, with the coarser h11 limits."""
    subclass = _uvicorn_guard.may_subclass()
    protocol = http_protocol(limits) if parser != "h11" and subclass else None
    options: dict[str, Any] = {"timeout_keep_alive": limits.keep_alive_timeout}
    if protocol is not None:
        options["http"] = protocol
    else:  # h11 only: its own head-size cap and uvicorn's plain-text 503
        options["http"] = lingering_h11_protocol() if subclass else "h11"
        if limits.max_header_bytes is not None:
            options["h11_max_incomplete_event_size"] = limits.max_header_bytes
        caps = [c for c in (limits.max_connections, limits.max_inflight) if c is not None]
        if caps:
            options["limit_concurrency"] = min(caps)
    return options
