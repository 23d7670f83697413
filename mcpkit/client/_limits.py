"""Bounded reads of HTTP answers: a JSON body, and each line and event of an SSE stream, stop at
``max_response_bytes`` (raising :class:`~mcpkit.errors.ResponseTooLarge`) instead of growing
without end. Nothing past the limit is buffered; the caller closes the response, which closes
its connection (a half-read answer is never handed back to the pool)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..errors import ResponseTooLarge
from ..protocol import sse

if TYPE_CHECKING:
    import httpx

#: The default ``max_response_bytes``: the same 16 MiB as stdio's line limit.
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024

_EOL = re.compile(rb"\r\n|\r|\n")


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"max_response_bytes must be a positive number of bytes, not {limit!r}")
    return limit


def too_large(what: str, url: str, limit: int) -> ResponseTooLarge:
    return ResponseTooLarge(f"{what} from {url} is longer than {limit} bytes (max_response_bytes);"
                            " it was not read further", limit)


async def read_body(resp: httpx.Response, limit: int, url: str) -> bytes:
    """The whole body, refused once it passes ``limit`` (decoded bytes; Content-Length first)."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large("the HTTP response", url, limit)
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf += chunk
        if len(buf) > limit:
            raise too_large("the HTTP response", url, limit)
    return bytes(buf)


async def lines(resp: httpx.Response, limit: int, url: str) -> AsyncIterator[str]:
    """The lines of an event stream (CRLF, LF or CR endings), none longer than ``limit``."""
    buf = bytearray()
    scanned = 0  # bytes of buf already searched for a line ending (each byte is searched once)
    async for chunk in resp.aiter_bytes():
        buf += chunk
        start = 0
        pos = max(scanned - 1, 0)  # back one: a CR left at the end may start a CRLF
        while (m := _EOL.search(buf, pos)) is not None:
            if m.group() == b"\r" and m.end() == len(buf):
                break  # maybe the first half of a CRLF split across chunks
            if m.start() - start > limit:
                raise too_large("an SSE line", url, limit)
            yield buf[start:m.start()].decode("utf-8", "replace")
            start = pos = m.end()
        del buf[:start]
        scanned = len(buf)
        if len(buf) > limit:
            raise too_large("an SSE line", url, limit)
    if buf:
        yield buf.rstrip(b"\r").decode("utf-8", "replace")


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
