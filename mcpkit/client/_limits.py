"""Bounded reads of HTTP answers: a JSON body, and each line and event of an SSE stream, stop at
``max_response_bytes`` (raising :class:`~mcpkit.errors.ResponseTooLarge`) instead of growing
without end. Nothing past the limit is buffered; the caller closes the response, which closes
its connection (a half-read answer is never handed back to the pool)."""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..errors import ProtocolError, ResponseTooLarge
from ..protocol import sse

if TYPE_CHECKING:
    import httpx

#: The default ``max_response_bytes``: the same 16 MiB as stdio's line limit.
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024

_EOL = re.compile(rb"\r\n|\r|\n")
#: The most a compressed answer is inflated by at a time (a bomb never lands in one piece).
_PIECE = 64 * 1024


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"max_response_bytes must be a positive number of bytes, not {limit!r}")
    return limit


def too_large(what: str, url: str, limit: int) -> ResponseTooLarge:
    return ResponseTooLarge(f"{what} from {url} is longer than {limit} bytes (max_response_bytes);"
                            " it was not read further", limit)


async def decoded(resp: httpx.Response) -> AsyncIterator[bytes]:
    """The body's bytes, content-decoded in pieces of at most 64 KiB for gzip and deflate (the
    encodings httpx asks for), so a compressed answer cannot expand past the limit in one step."""
    encoding = resp.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        async for raw in resp.aiter_raw():
            yield raw
        return
    if encoding not in ("gzip", "x-gzip", "deflate"):
        async for chunk in resp.aiter_bytes():  # another (or a stacked) encoding: httpx decodes it
            yield chunk
        return
    # deflate is meant to be zlib-wrapped, but some servers send it raw (httpx accepts both).
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in encoding else zlib.MAX_WBITS)
    first = True
    async for raw in resp.aiter_raw():
        data = raw
        while data:
            try:
                out = inflater.decompress(data, _PIECE)
            except zlib.error:
                if not (first and encoding == "deflate"):
                    raise ProtocolError("the HTTP response is not valid " + encoding) from None
                inflater, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                continue
            first = False
            data = inflater.unconsumed_tail
            if out:
                yield out
    tail = inflater.flush()  # what the last piece left pending: at most one match, never much
    if tail:
        yield tail


async def read_body(resp: httpx.Response, limit: int, url: str) -> bytes:
    """The whole body, refused once it passes ``limit`` (decoded bytes; Content-Length first)."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large("the HTTP response", url, limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in decoded(resp):
        size += len(chunk)
        if size > limit:
            raise too_large("the HTTP response", url, limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def lines(resp: httpx.Response, limit: int, url: str) -> AsyncIterator[str]:
    """The lines of an event stream (CRLF, LF or CR endings), none longer than ``limit``.
    Each byte is searched once; a partial line is kept as a list of pieces, never copied."""
    pending: list[bytes] = []
    size = 0
    after_cr = False  # the last chunk ended with CR: a LF starting the next one completes a CRLF
    async for chunk in decoded(resp):
        if not chunk:
            continue
        if after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        after_cr = False
        start = 0
        for m in _EOL.finditer(chunk):
            piece = chunk[start:m.start()]
            if size + len(piece) > limit:
                raise too_large("an SSE line", url, limit)
            yield (b"".join(pending) + piece if pending else piece).decode("utf-8", "replace")
            pending, size, start = [], 0, m.end()
            after_cr = m.group() == b"\r" and start == len(chunk)
        if start < len(chunk):
            pending.append(chunk[start:])
            size += len(chunk) - start
            if size > limit:
                raise too_large("an SSE line", url, limit)
    if pending:
        yield b"".join(pending).decode("utf-8", "replace")


async def events(lines: AsyncIterator[str], limit: int | None = None, url: str = "") -> AsyncIterator[sse.Event]:
    """The events of an SSE body, given its lines; an event whose lines add up to more than
    ``limit`` bytes is refused."""
    parser = sse.Parser()
    size = 0
    async for line in lines:
        if line.startswith(":"):
            continue  # a comment (keep-alive): the parser keeps nothing of it
        if line:
            size += len(line) + 1
            if limit is not None and size > limit:
                raise too_large("an SSE event", url, limit)
        else:
            size = 0
        ev = parser.feed(line)
        if ev is not None:
            yield ev
    last = parser.end()
    if last is not None:
        yield last
