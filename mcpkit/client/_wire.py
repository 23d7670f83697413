"""A lean HTTP/1.1 transport for the client's ``httpx.AsyncClient``: plain asyncio protocols
and ``httptools`` (the ``fast`` extra) instead of httpcore, anyio and h11.

httpx still builds every request (headers, auth flows, cookies) and mcpkit still decides
redirects; this only moves bytes. It keeps a bounded keep-alive pool per (scheme, host, port)
with idle expiry; a connection the server closes is dropped when the protocol hears of it
(``connection_lost``/``eof_received``), never found by polling. Bodies stream: each piece is
handed on as it arrives (an SSE answer is read incrementally), and a connection whose answer
was not read to its end is closed, never reused. ``https`` goes to httpx's own transport
(the same certificate verification as ever). Failures are httpx's exceptions
(``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``RemoteProtocolError``, ``PoolTimeout``).

:func:`client` builds the ``httpx.AsyncClient`` mcpkit uses when the caller gave none: with
this transport when httptools imports, no proxy from the environment applies to the URL and
``MCPKIT_HTTP_TRANSPORT`` is not ``httpx``; else with httpx's default transport.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import httpx

try:
    import httptools
except ImportError:  # pragma: no cover - the fast extra is not installed
    httptools = None  # type: ignore[assignment]

#: Set to ``httpx`` to use httpx's default transport (httpcore) for the client's own pool.
OPT_OUT_ENV = "MCPKIT_HTTP_TRANSPORT"

#: Idle connections kept per origin, connections open per origin, and seconds an idle one lives.
MAX_IDLE = 20
MAX_CONNECTIONS = 100
IDLE_EXPIRY = 5.0
#: Body bytes buffered before reading from the socket pauses (resumes as the reader catches up).
HIGH_WATER = 256 * 1024


def available() -> bool:
    return httptools is not None


def proxy_applies(url: str) -> bool:
    """Whether the environment names a proxy for ``url``'s scheme (or all schemes). Any such
    setting keeps httpx's own transport, which applies it (and ``NO_PROXY``) exactly."""
    scheme = httpx.URL(url).scheme
    proxies = urllib.request.getproxies()
    return bool(proxies.get(scheme) or proxies.get("all"))


def wanted(url: str) -> bool:
    """Whether :func:`client` uses this transport for ``url``."""
    return (available() and os.environ.get(OPT_OUT_ENV, "").strip().lower() != "httpx"
            and httpx.URL(url).scheme == "http" and not proxy_applies(url))


def client(url: str, verify: Any = True, timeout: httpx.Timeout | None = None) -> httpx.AsyncClient:
    """The client's own ``httpx.AsyncClient`` for ``url`` (see the module's docstring)."""
    return client_and_wire(url, verify, timeout)[0]


def client_and_wire(url: str, verify: Any = True,
                    timeout: httpx.Timeout | None = None) -> tuple[httpx.AsyncClient, WireTransport | None]:
    """:func:`client`, and its lean transport (None when it has httpx's default one)."""
    timeout = timeout if timeout is not None else httpx.Timeout(None, connect=10.0)
    if not wanted(url):
        return httpx.AsyncClient(timeout=timeout, verify=verify), None
    wire = WireTransport(verify=verify)
    return httpx.AsyncClient(timeout=timeout, verify=verify, transport=wire), wire


class _Exchange:
    """One response as it arrives: the head, then body pieces, then the end (or an error)."""

    __slots__ = ("status", "reason", "headers", "version", "head", "chunks", "buffered", "done", "error",
                 "waiter")

    def __init__(self) -> None:
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.version = b"HTTP/1.1"
        self.head = False
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.done = False
        self.error: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None

    @property
    def until_close(self) -> bool:
        """No Content-Length and not chunked: the body ends when the connection does."""
        names = {n.lower() for n, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names \
            and self.status not in (204, 304)

    def wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: requests written in turn, each answer parsed by httptools."""

    def __init__(self, pool: _Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        # Control characters in a header value are taken as httpx's own transport takes them
        # (mcpkit escapes whatever it shows of a header, e.g. a 401's error_description).
        self.parser.set_dangerous_leniencies(lenient_headers=True)
        self.exchange: _Exchange | None = None
        self.closed = False
        self.reusable = True
        self.paused = False
        #: When it last went back to the pool (time.monotonic()).
        self.idle_since = 0.0
        self._drain: asyncio.Future[None] | None = None

    # ------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None or ex.done:  # bytes nobody asked for: this connection is not to be trusted again
            self._lost(httpx.RemoteProtocolError("the server sent data without a request"))
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._lost(httpx.RemoteProtocolError("the server switched protocols, which was not asked for"))
        except httptools.HttpParserError as exc:
            self._lost(httpx.RemoteProtocolError(f"malformed HTTP response: {exc}"))
        else:
            if ex.buffered > HIGH_WATER and not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(exc)
        self.resume_writing()  # a writer waiting to drain finds the connection closed

    def pause_writing(self) -> None:
        if self._drain is None or self._drain.done():
            self._drain = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        d = self._drain
        if d is not None and not d.done():
            d.set_result(None)

    # ------------------------------------------------------------ httptools callbacks
    def on_message_begin(self) -> None:
        ex = self.exchange
        if ex is None or ex.done:  # a second answer to one request
            self.reusable = False

    def on_status(self, status: bytes) -> None:
        ex = self.exchange
        if ex is not None and not ex.done:
            ex.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        ex = self.exchange
        if ex is not None and not ex.done:
            ex.headers.append((name, value))

    def on_headers_complete(self) -> None:
        ex = self.exchange
        if ex is None or ex.done:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            ex.headers, ex.reason = [], b""
            return
        ex.status = status
        ex.version = b"HTTP/" + self.parser.get_http_version().encode()
        if not self.parser.should_keep_alive():
            self.reusable = False
        ex.head = True
        ex.wake()

    def on_body(self, body: bytes) -> None:
        ex = self.exchange
        if ex is not None and not ex.done:
            ex.chunks.append(body)
            ex.buffered += len(body)
            ex.wake()

    def on_message_complete(self) -> None:
        ex = self.exchange
        if ex is not None and ex.head and not ex.done:
            ex.done = True
            ex.wake()

    # ------------------------------------------------------------ use
    def _lost(self, exc: Exception | None) -> None:
        """The connection is over (closed by the server, broken, or refused by us)."""
        first = not self.closed
        self.closed, self.reusable = True, False
        if first:
            self.pool.forget(self)
            if self.transport is not None:
                self.transport.close()
        ex = self.exchange
        if ex is None or ex.done or ex.error is not None:
            return
        if isinstance(exc, httpx.HTTPError):
            ex.error = exc
        elif ex.head and ex.until_close:
            ex.done = True
        elif ex.head:
            ex.error = httpx.RemoteProtocolError("the server closed the connection before the end of the body"
                                                 f"{f' ({exc})' if exc else ''}")
        else:
            ex.error = httpx.RemoteProtocolError("Server disconnected without sending a response."
                                                 f"{f' ({exc})' if exc else ''}")
        ex.wake()

    def close(self) -> None:
        self._lost(None)

    async def send(self, request: httpx.Request, write_timeout: float | None) -> None:
        assert self.transport is not None
        self.exchange = _Exchange()
        target = request.url.raw_path
        head = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
        chunked = False
        for name, value in request.headers.raw:
            head += (name, b": ", value, b"\r\n")
            if name.lower() == b"transfer-encoding" and value.lower() == b"chunked":
                chunked = True
        head.append(b"\r\n")
        stream = request.stream
        if isinstance(stream, httpx.ByteStream):
            # A body given as bytes (what mcpkit sends): the head and body in one write.
            body = request.content
            self.transport.write(b"".join(head) + (b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
                                                   if chunked and body else b"0\r\n\r\n" if chunked else body))
        else:
            self.transport.write(b"".join(head))
            assert isinstance(stream, httpx.AsyncByteStream)
            async for part in stream:
                if part:
                    self.transport.write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part)
                    await self._drained(write_timeout)
            if chunked:
                self.transport.write(b"0\r\n\r\n")
        await self._drained(write_timeout)

    async def _drained(self, timeout: float | None) -> None:
        d = self._drain
        if d is None or d.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(d), timeout)
        except TimeoutError:
            raise httpx.WriteTimeout("writing the request timed out") from None
        if self.closed:
            raise httpx.WriteError("the server closed the connection while the request was being written")

    async def wait(self, timeout: float | None) -> None:
        """Until the exchange has news (the head, a body piece, its end or an error)."""
        ex = self.exchange
        assert ex is not None
        ex.waiter = fut = asyncio.get_running_loop().create_future()
        try:
            if timeout is None:
                await fut
            else:
                try:
                    await asyncio.wait_for(fut, timeout)
                except TimeoutError:
                    raise httpx.ReadTimeout(f"no answer within {timeout} s") from None
        finally:
            ex.waiter = None

    def take(self) -> bytes | None:
        """The next body bytes buffered (all of them, joined), or None when none are."""
        ex = self.exchange
        assert ex is not None
        if not ex.chunks:
            return None
        data = ex.chunks.popleft() if len(ex.chunks) == 1 else b"".join(ex.chunks)
        ex.chunks.clear()
        ex.buffered = 0
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.transport.resume_reading()
        return data


async def answer_head(pool: _Pool, conn: _Connection, send: Coroutine[Any, Any, None] | bytes,
                      read_timeout: float | None, write_timeout: float | None = None) -> _Exchange:
    """Send a request on ``conn`` (await ``send``, which writes it, or write the bytes
    ``send`` within ``write_timeout``), then await the head of its answer: the exchange.
    On any failure ``conn`` is closed and left (an OSError becomes httpx's WriteError)."""
    try:
        if type(send) is bytes:
            assert conn.transport is not None
            conn.exchange = ex = _Exchange()
            conn.transport.write(send)
            if conn._drain is not None:
                await conn._drained(write_timeout)
        else:
            await send  # type: ignore[misc]
            ex = conn.exchange  # type: ignore[assignment]
            assert ex is not None
        while not ex.head:
            if ex.error is not None:
                raise ex.error
            await conn.wait(read_timeout)
    except BaseException as exc:
        conn.close()
        pool.done_with(conn)
        if isinstance(exc, OSError):
            raise httpx.WriteError(str(exc)) from None
        raise
    return ex


async def body_chunks(conn: _Connection, read_timeout: float | None) -> AsyncIterator[bytes]:
    """The body of the answer on ``conn``, chunk by chunk as it arrives, to its end."""
    ex = conn.exchange
    assert ex is not None
    while True:
        data = conn.take()
        if data is not None:
            yield data
            continue
        if ex.error is not None:
            raise ex.error
        if ex.done:
            return
        await conn.wait(read_timeout)


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; closing it hands the connection back (when the answer
    was read to its end and the server keeps the connection alive) or closes it."""

    def __init__(self, conn: _Connection, read_timeout: float | None) -> None:
        self.conn = conn
        self.read_timeout = read_timeout
        self.released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in body_chunks(self.conn, self.read_timeout):
            yield data
        self._release()

    def _release(self) -> None:
        if self.released:
            return
        self.released = True
        conn = self.conn
        ex = conn.exchange
        if ex is not None and ex.done and ex.error is None and not ex.chunks and conn.reusable and not conn.closed:
            conn.exchange = None
            conn.pool.put_back(conn)
        else:
            conn.close()
            conn.pool.done_with(conn)

    async def aclose(self) -> None:
        self._release()


class _Pool:
    """The connections to one (scheme, host, port): at most :data:`MAX_CONNECTIONS` open, at
    most :data:`MAX_IDLE` of them idle (most recent first), each idle one for :data:`IDLE_EXPIRY`
    (one timer per pool sweeps the expired ones, none is set per request)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[_Connection] = []
        self.open = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_loop: asyncio.AbstractEventLoop | None = None

    def forget(self, conn: _Connection) -> None:
        """A connection closed: an idle one leaves the pool at once."""
        if conn in self.idle:
            self.idle.remove(conn)
            self.open -= 1
            self._next()

    def put_back(self, conn: _Connection) -> None:
        if len(self.idle) >= MAX_IDLE:
            conn.close()
            self.done_with(conn)
            return
        conn.idle_since = time.monotonic()
        self.idle.append(conn)
        loop = asyncio.get_running_loop()
        if self._sweeper is None or self._sweep_loop is not loop:  # (a pool used from another loop: its own)
            self._sweep_loop = loop
            self._sweeper = loop.call_later(IDLE_EXPIRY, self._sweep)
        self._next()

    def _sweep(self) -> None:
        """Close the connections idle for :data:`IDLE_EXPIRY`; come back for the next one."""
        self._sweeper = None
        now = time.monotonic()
        for conn in [c for c in self.idle if now - c.idle_since >= IDLE_EXPIRY]:
            conn.close()  # it leaves the pool (forget)
        if self.idle:
            due = min(c.idle_since for c in self.idle) + IDLE_EXPIRY - now
            self._sweeper = asyncio.get_running_loop().call_later(max(due, 0.0), self._sweep)

    def done_with(self, conn: _Connection) -> None:
        """A connection in use was closed: its place is free."""
        self.open -= 1
        self._next()

    def _next(self) -> None:
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def idle_one(self) -> _Connection | None:
        """The most recent idle connection that is still good, or None."""
        idle = self.idle
        while idle:
            conn = idle.pop()
            if conn.closed:  # (it left the pool already: forget)
                continue
            if time.monotonic() - conn.idle_since < IDLE_EXPIRY:
                return conn
            conn.close()  # expired, its sweep not yet run
            self.done_with(conn)
        return None

    async def acquire(self, connect_timeout: float | None, pool_timeout: float | None) -> _Connection:
        while True:
            conn = self.idle_one()
            if conn is not None:
                return conn
            if self.open < MAX_CONNECTIONS:
                break
            w = asyncio.get_running_loop().create_future()
            self.waiters.append(w)
            try:
                await asyncio.wait_for(w, pool_timeout)
            except TimeoutError:
                raise httpx.PoolTimeout(f"no connection to {self.host}:{self.port} became free") from None
        self.open += 1
        try:
            return await self._connect(connect_timeout)
        except BaseException:
            self.open -= 1
            self._next()
            raise

    async def _connect(self, timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        conn = _Connection(self)
        try:
            transport, _ = await asyncio.wait_for(loop.create_connection(lambda: conn, self.host, self.port), timeout)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {self.host}:{self.port} timed out") from None
        except ConnectionRefusedError as exc:
            raise httpx.ConnectError(f"All connection attempts failed: connection refused ({exc})") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        conn.transport = transport  # uvloop calls connection_made a moment after this
        return conn

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in list(self.idle):
            conn.close()
        self.idle.clear()


class WireTransport(httpx.AsyncBaseTransport):
    """``http://`` over asyncio and httptools; ``https://`` through httpx's own transport
    (made with the same ``verify``)."""

    def __init__(self, verify: Any = True) -> None:
        if httptools is None:  # pragma: no cover
            raise RuntimeError("the lean HTTP transport needs httptools (pip install 'mcpkit[fast]')")
        self._verify = verify
        self._pools: dict[tuple[str, int], _Pool] = {}
        self._tls: httpx.AsyncHTTPTransport | None = None

    def _fallback(self) -> httpx.AsyncHTTPTransport:
        if self._tls is None:
            self._tls = httpx.AsyncHTTPTransport(verify=self._verify)
        return self._tls

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http" or request.method == "HEAD":
            return await self._fallback().handle_async_request(request)
        timeouts = request.extensions.get("timeout") or {}
        pool = self.pool(url.raw_host.decode("ascii"), url.port or 80)
        conn = await pool.acquire(timeouts.get("connect"), timeouts.get("pool"))
        read_timeout = timeouts.get("read")
        ex = await answer_head(pool, conn, conn.send(request, timeouts.get("write")), read_timeout)
        return httpx.Response(ex.status, headers=ex.headers, stream=_Body(conn, read_timeout),
                              extensions={"http_version": ex.version, "reason_phrase": ex.reason})

    def pool(self, host: str, port: int) -> _Pool:
        """The keep-alive pool of ``http://host:port``."""
        pool = self._pools.get((host, port))
        if pool is None:
            pool = self._pools[(host, port)] = _Pool(host, port)
        return pool

    async def aclose(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        if self._tls is not None:
            await self._tls.aclose()
