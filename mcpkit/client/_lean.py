"""The lean request path of the client's HTTP transport: a POST written straight on a pooled
connection of the lean HTTP/1.1 transport (:mod:`._wire`), its answer read there, without
building ``httpx.Request``/``httpx.Response`` objects or going through httpx's client layer.

It applies only where it changes nothing but the cost: the transport's own ``httpx`` client on
the lean transport (plain ``http``, httptools present, no proxy from the environment, not
``MCPKIT_HTTP_TRANSPORT=httpx``), an empty cookie jar, and header values that are plain
printable ASCII. It sends the headers httpx would (its default ``User-Agent``,
``Accept-Encoding``, ``Connection``, and ``Host``, ``Content-Length``). The common answer, a
JSON body without a content encoding, is read here (to its end, within ``max_response_bytes``);
any other answer (an event stream, a compressed body, cookies to keep) is wrapped as an
``httpx.Response`` on the same connection and handled the usual way; a redirect is dropped and
the request is sent again the usual way, which follows it by the usual rules. Failures are
httpx's exceptions, as on the usual path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import httpx

from . import _limits, _wire
from ._credentials import partition

if TYPE_CHECKING:
    from ._wire import _Connection, _Exchange

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Headers the lean path writes itself (given ones go the usual way).
_OWN = frozenset({"host", "content-length", "transfer-encoding"})
#: Request heads kept per LeanPost (by their headers), and the mark of a set not seen yet.
_HEADS = 64
_UNKNOWN = object()


class WireHeaders(Mapping[str, str]):
    """An answer's headers as received: a case-insensitive mapping (the first value of a
    repeated header, as ``get_list`` gives every one), like ``httpx.Headers`` for reading."""

    __slots__ = ("raw", "_joined")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self._joined: dict[str, str] | None = None  # decoded on first use: most answers are never looked at

    @property
    def _first(self) -> dict[str, str]:
        first = self._joined
        if first is None:
            first = self._joined = {}
            for name, value in self.raw:
                key = name.decode("latin-1").lower()
                if key in first:
                    first[key] = first[key] + ", " + value.decode("latin-1")
                else:
                    first[key] = value.decode("latin-1")
        return first

    def __getitem__(self, key: str) -> str:
        return self._first[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._first

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return self._first.get(key.lower(), default)

    def get_list(self, key: str) -> list[str]:
        low = key.lower().encode("latin-1")
        return [v.decode("latin-1") for n, v in self.raw if n.lower() == low]

    def multi_items(self) -> list[tuple[str, str]]:
        return [(n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in self.raw]

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)

    def __repr__(self) -> str:
        return f"WireHeaders({self.multi_items()!r})"


#: Printable ASCII and tab: a header value written as is (anything else goes the usual way).
_SAFE = re.compile(r"[\t\x20-\x7e]*")
#: A header name: an HTTP token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class LeanPost:
    """POSTs to one URL on ``wire``'s pool, with ``client``'s defaults and timeouts."""

    def __init__(self, url: str, client: httpx.AsyncClient, wire: _wire.WireTransport) -> None:
        where = httpx.URL(url)
        self.url = url
        self.client = client
        self.ok = where.scheme == "http"
        self.pool = wire.pool(where.raw_host.decode("ascii"), where.port or 80)
        self.target = where.raw_path
        defaults = {k.lower(): v for k, v in client.headers.items()}
        defaults.pop("accept", None)  # the transport's own Accept is always given
        self.defaults = defaults
        #: The request line and Host; the client's default headers (none of them given).
        self.start = b"POST %b HTTP/1.1\r\nHost: %b\r\n" % (self.target, where.netloc)
        self._heads: dict[tuple[tuple[str, str], ...], tuple[bytes, str | None] | None] = {}
        self.default_lines = b"".join(b"%b: %b\r\n" % (n.encode(), v.encode()) for n, v in defaults.items())
        timeout = client.timeout
        self.connect_timeout, self.read_timeout = timeout.connect, timeout.read
        self.write_timeout, self.pool_timeout = timeout.write, timeout.pool

    def applies(self, url: str) -> bool:
        return self.ok and url == self.url and not self.client.cookies

    def prepared(self, headers: Mapping[str, str]) -> tuple[bytes, str | None] | None:
        """The request's head up to its Content-Length, and the partition of the credentials
        ``headers`` carry; None when a header must go the usual way. Kept per set of headers
        (a client sends the same few again and again), at most :data:`_HEADS` of them."""
        key = tuple(headers.items())
        got = self._heads.get(key, _UNKNOWN)
        if got is _UNKNOWN:
            prefix = self._prefix(headers)
            got = None if prefix is None else (prefix, partition(key))
            if len(self._heads) >= _HEADS:
                self._heads.clear()
            self._heads[key] = got
        return got  # type: ignore[return-value]

    def head(self, headers: Mapping[str, str], length: int) -> bytes | None:
        """The request's head, or None when a header must go the usual way."""
        prefix = self._prefix(headers)
        return None if prefix is None else b"%bContent-Length: %d\r\n\r\n" % (prefix, length)

    def _prefix(self, headers: Mapping[str, str]) -> bytes | None:
        parts = [self.start]
        given = [k.lower() for k in headers]
        if any(k in self.defaults for k in given):
            parts += (b"%b: %b\r\n" % (n.encode(), v.encode()) for n, v in self.defaults.items() if n not in given)
        else:
            parts.append(self.default_lines)
        for name, value in headers.items():
            if not (_TOKEN.fullmatch(name) and _SAFE.fullmatch(value)):
                return None
            parts += (name.encode(), b": ", value.encode(), b"\r\n")
        if not _OWN.isdisjoint(given):
            return None
        return b"".join(parts)

    async def send(self, prefix: bytes, body: bytes) -> tuple[_Connection, _Exchange]:
        """Write the request (its head up to Content-Length, then the body) on a pooled
        connection; back when the answer's head is in."""
        pool = self.pool
        conn = pool.idle_one() or await pool.acquire(self.connect_timeout, self.pool_timeout)
        data = b"%bContent-Length: %d\r\n\r\n%b" % (prefix, len(body), body)
        return conn, await _wire.answer_head(pool, conn, data, self.read_timeout, self.write_timeout)

    @staticmethod
    def headers(ex: _Exchange) -> WireHeaders:
        return WireHeaders(ex.headers)

    @staticmethod
    def plain(ex: _Exchange) -> bool:
        """Whether the answer is read here: not a redirect, no content encoding, no cookies,
        no event stream (one pass over the raw headers)."""
        encoded = False
        for name, value in ex.headers:
            low = name.lower()
            if low == b"content-type":
                if value.startswith(b"text/event-stream"):
                    return False
            elif low == b"content-encoding":
                if encoded or value.strip().lower() not in (b"", b"identity"):
                    return False
                encoded = True
            elif low == b"set-cookie" or (low == b"location" and ex.status in _REDIRECTS):
                return False
        return True

    @staticmethod
    def wrap(conn: _Connection, ex: _Exchange) -> httpx.Response:
        """The answer as an ``httpx.Response`` streaming from the connection (closing it hands
        the connection back, or closes it), as the lean transport gives it to httpx."""
        return httpx.Response(ex.status, headers=ex.headers, stream=_wire._Body(conn, None),
                              extensions={"http_version": ex.version, "reason_phrase": ex.reason})

    def keep_cookies(self, resp: httpx.Response) -> None:
        """Cookies an answer sets go into the client's jar (later requests then go the usual way)."""
        if "set-cookie" in resp.headers:
            resp.request = httpx.Request("POST", self.url)
            self.client.cookies.extract_cookies(resp)

    async def read(self, conn: _Connection, ex: _Exchange, headers: WireHeaders, limit: int) -> bytes:
        """The whole body, within ``limit`` bytes (Content-Length first); the connection goes back
        to the pool when the answer was read to its end, else it is closed."""
        done = False
        try:
            if ex.done and ex.error is None:  # the whole answer is in already (the common case)
                data = conn.take() or b""
                if len(data) > limit:
                    raise _limits.too_large("the HTTP response", self.url, limit)
                done = True
                return data
            declared = headers.get("content-length", "")
            if declared and declared.isdigit() and int(declared) > limit:
                raise _limits.too_large("the HTTP response", self.url, limit)
            chunks: list[bytes] = []
            size = 0
            async for data in _wire.body_chunks(conn, self.read_timeout):
                size += len(data)
                if size > limit:
                    raise _limits.too_large("the HTTP response", self.url, limit)
                chunks.append(data)
            done = True
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            if done and conn.reusable and not conn.closed:
                conn.exchange = None
                conn.pool.put_back(conn)
            else:
                conn.close()
                conn.pool.done_with(conn)


def lean_post(url: str, client: httpx.AsyncClient, wire: _wire.WireTransport | None) -> LeanPost | None:
    """A :class:`LeanPost` for ``url``, or None when the lean path cannot apply."""
    if wire is None or httpx.URL(url).scheme != "http":
        return None
    return LeanPost(url, client, wire)
