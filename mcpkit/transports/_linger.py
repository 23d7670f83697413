"""Lingering close: a refusal reaches a client that is still sending.

When the server closes a connection whose client has not finished sending (a 431 in the
middle of a huge header, a 413 before a large body is read, a 408, a 400), closing the
socket with unread input makes the kernel answer the client with a reset, which can
destroy the answer before the client read it: the client sees ``ConnectionResetError``
instead of the status. So, as nginx's ``lingering_close`` does, the server instead writes
the answer, shuts down its writing side (the client reads the answer, then EOF), reads and
discards whatever still arrives for at most :data:`LINGER_SECONDS` and
:data:`LINGER_BYTES`, and then closes. A connection closed between requests (keep-alive
expiry, ``Connection: close`` after a complete request) closes at once.

:class:`LingeringTransport` wraps the connection's transport for uvicorn's protocol
(httptools or h11); the protocol says when the client may still be sending.

It also coalesces writes: uvicorn writes a response's head as soon as the app sends
``http.response.start`` and the body at ``http.response.body``, two ``send`` syscalls and two
TCP segments for every small JSON answer. The transport holds a write until the next one or
the end of the event-loop step it was made in, and hands both over in one ``writelines``
(one syscall, one segment); nothing waits longer than that step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

#: The longest a lingering connection is kept (seconds from the answer).
LINGER_SECONDS = 2.0
#: The most input discarded while lingering (bytes); past it the connection is closed.
LINGER_BYTES = 16 * 1024 * 1024


class _Drain(asyncio.Protocol):
    """The raw transport's protocol while lingering: discards input, closes on EOF, time or size."""

    def __init__(self, raw: asyncio.Transport, owner: Any, seconds: float, max_bytes: int) -> None:
        self.raw = raw
        self.owner = owner  # the HTTP protocol: told when the connection is finally lost
        self.left = max_bytes
        self.timer = asyncio.get_running_loop().call_later(seconds, self.finish)

    def data_received(self, data: bytes) -> None:
        self.left -= len(data)
        if self.left < 0:
            self.finish()

    def eof_received(self) -> bool | None:
        self.finish()
        return None

    def finish(self) -> None:
        self.timer.cancel()
        if self.raw.is_closing():
            return
        if self.raw.get_write_buffer_size():
            self.raw.abort()  # the answer is still unsent after the linger: the client is not reading
        else:
            self.raw.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.timer.cancel()
        self.owner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.owner.pause_writing()

    def resume_writing(self) -> None:
        self.owner.resume_writing()


class LingeringTransport(asyncio.Transport):
    """The transport an HTTP protocol sees: :meth:`close` lingers while ``may_still_send()``.

    Everything else goes to the real transport. Once closing, writes are dropped (the
    answer is out and the writing side is shut).
    """

    def __init__(self, raw: asyncio.Transport, may_still_send: Callable[[], bool], *,
                 seconds: float = LINGER_SECONDS, max_bytes: int = LINGER_BYTES) -> None:
        super().__init__()
        self._raw = raw
        self._may_still_send = may_still_send
        self._seconds = seconds
        self._max_bytes = max_bytes
        self._closing = False
        #: A write held until the next one or the end of this loop step (see the module doc).
        self._held: bytes | bytearray | memoryview | None = None
        self._loop = asyncio.get_running_loop()

    def _flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._closing:
                self._raw.write(held)

    def close(self) -> None:
        if self._closing:
            return
        self._flush()
        self._closing = True
        raw = self._raw
        if raw.is_closing():
            return
        try:
            linger = self._may_still_send() and raw.can_write_eof()
        except Exception:  # pragma: no cover - never keep a connection open on a doubt
            linger = False
        if not linger:
            raw.close()
            return
        drain = _Drain(raw, raw.get_protocol(), self._seconds, self._max_bytes)
        raw.set_protocol(drain)
        raw.write_eof()  # after the buffered answer: the client reads it, then EOF
        raw.resume_reading()

    def is_closing(self) -> bool:
        return self._closing or self._raw.is_closing()

    def abort(self) -> None:
        self._closing = True
        self._held = None
        self._raw.abort()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        held = self._held
        if held is None:
            # bytes only: a caller may reuse a bytearray or memoryview once write() returns
            self._held = data if type(data) is bytes else bytes(data)
            self._loop.call_soon(self._flush)
        else:
            self._held = None
            self._raw.writelines((held, data))

    def writelines(self, list_of_data: Any) -> None:
        if not self._closing:
            self._flush()
            self._raw.writelines(list_of_data)

    def write_eof(self) -> None:
        self._flush()
        self._raw.write_eof()

    def can_write_eof(self) -> bool:
        return self._raw.can_write_eof()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._raw.get_extra_info(name, default)

    def pause_reading(self) -> None:
        if not self._closing:
            self._raw.pause_reading()

    def resume_reading(self) -> None:
        if not self._closing:
            self._raw.resume_reading()

    def is_reading(self) -> bool:
        return self._raw.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._raw.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self._raw.get_write_buffer_size() + (len(held) if held is not None else 0)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._raw.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._raw.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._raw.get_protocol()


def lingering_h11_protocol() -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a lingering close (used when httptools is not installed)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class LingeringH11(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(LingeringTransport(transport, self._may_still_send))

        def _may_still_send(self) -> bool:
            conn = self.conn
            data, closed = conn.trailing_data
            if closed:
                return False
            return conn.their_state in (h11.SEND_BODY, h11.ERROR) or bool(data)

    return LingeringH11
