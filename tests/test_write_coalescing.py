"""The HTTP transport hands a response's head and body to the socket in one write.

uvicorn writes a response's head at ``http.response.start`` and its body at
``http.response.body``; :class:`mcpkit.transports._linger.LingeringTransport` holds the first
write until the next one or the end of the loop step, so a small answer is one syscall.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit.transports._linger import LingeringTransport


class Recording(asyncio.Transport):
    """An in-memory stand-in for the socket transport: records each call that reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []

    def write(self, data: Any) -> None:
        self.calls.append(("write", bytes(data)))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(("writelines", [bytes(d) for d in list_of_data]))

    def write_eof(self) -> None:
        self.calls.append(("write_eof", None))

    def can_write_eof(self) -> bool:
        return True

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        self.calls.append(("close", None))

    def abort(self) -> None:
        self.calls.append(("abort", None))

    def get_write_buffer_size(self) -> int:
        return 0


def test_head_and_body_leave_in_one_call() -> None:
    async def main() -> list[tuple[str, Any]]:
        raw = Recording()
        t = LingeringTransport(raw, lambda: False)
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        assert raw.calls == [] and t.get_write_buffer_size() == 19  # held, and counted as buffered
        t.write(b"{}")
        return raw.calls

    assert asyncio.run(main()) == [("writelines", [b"HTTP/1.1 200 OK\r\n\r\n", b"{}"])]


def test_a_lone_write_leaves_at_the_end_of_the_loop_step() -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        raw = Recording()
        t = LingeringTransport(raw, lambda: False)
        buf = bytearray(b"event: message\n\n")
        t.write(buf)
        buf[:] = b"X" * len(buf)  # the caller may reuse its buffer once write() returns
        before = list(raw.calls)
        await asyncio.sleep(0)
        return before, raw.calls

    before, after = asyncio.run(main())
    assert before == [] and after == [("write", b"event: message\n\n")]


def test_close_sends_what_is_held_first_and_abort_drops_it() -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        raw = Recording()
        t = LingeringTransport(raw, lambda: False)
        t.write(b"answer")
        t.close()
        raw2 = Recording()
        t2 = LingeringTransport(raw2, lambda: False)
        t2.write(b"answer")
        t2.abort()
        await asyncio.sleep(0)
        t2.write(b"late")  # after abort: dropped
        return raw.calls, raw2.calls

    closed, aborted = asyncio.run(main())
    assert closed == [("write", b"answer"), ("close", None)]
    assert aborted == [("abort", None)]
