"""Issue 18, item 20: the HTTP client stops reading an answer at ``max_response_bytes``.

A raw asyncio HTTP server on 127.0.0.1 (in a thread of this process) answers ``tools/call``
by the tool's name: ``ok`` normally; ``declared`` with a 64 MiB JSON body and its
Content-Length; ``chunked`` with 64 MiB of JSON and no Content-Length; ``sse-line`` with an
event stream whose one line never ends; ``sse-event`` with an event whose data lines never
stop; ``gzip`` with 64 KiB of gzip that inflates to 64 MiB. The client must raise :class:`ResponseTooLarge` quickly, naming the limit and the
option, close that connection, stay within a bounded RSS (measured in a child process from
``/proc/self/status``), and answer the next request.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.paths import subprocess_env
from tests.helpers.servers import free_port

MIB = 1024 * 1024
HUGE = 64 * MIB  # what each hostile answer would send in all
CHUNK = 256 * 1024


class HostileServer:
    """HTTP/1.1 by hand, so nothing in a server framework shapes or buffers the answers."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.open = 0  # connections open right now
        packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        piece = b"x" * CHUNK
        self.bomb = packer.compress(b'{"jsonrpc":"2.0","id":1,"result":{"pad":"') + b"".join(
            packer.compress(piece) for _ in range(HUGE // CHUNK)) + packer.compress(b'"}}') + packer.flush()
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self._ready.wait(10), "the raw server did not start"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._conn, "127.0.0.1", self.port)
            self._ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                msg = json.loads(await reader.readexactly(length)) if length else {}
                if "id" not in msg:
                    writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                name = (msg.get("params") or {}).get("name")
                await getattr(self, "_" + str(name).replace("-", "_"), self._ok)(writer, msg["id"])
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def _ok(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "ok"}], "isError": False}}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    async def _send(self, writer: asyncio.StreamWriter, head: bytes, first: bytes, piece: bytes, *,
                    chunked: bool) -> None:
        """``head``, then ``first`` and ``piece`` repeated up to HUGE bytes, stopping when the
        client goes away (then the connection is over)."""
        writer.write(head)

        def frame(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data

        writer.write(frame(first))
        sent = len(first)
        while sent < HUGE:
            if writer.is_closing():
                raise ConnectionResetError
            writer.write(frame(piece))
            sent += len(piece)
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _declared(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        first = b'{"jsonrpc":"2.0","id":%d,"result":{"pad":"' % rid
        rest = HUGE - len(first) - 3
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % HUGE
        await self._send(writer, head, first, b"x" * CHUNK, chunked=False)
        writer.write(b"x" * (rest % CHUNK) + b'"}}')

    async def _chunked(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        await self._send(writer, head, b'{"jsonrpc":"2.0","id":%d,"result":{"pad":[' % rid, b"1," * (CHUNK // 2),
                         chunked=True)

    async def _gzip(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(self.bomb) + self.bomb)
        await writer.drain()

    async def _sse_line(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        await self._send(writer, head, b"event: message\ndata: ", b"x" * CHUNK, chunked=True)

    async def _sse_event(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        line = b"data: " + b"y" * 8186 + b"\n"  # 8 KiB lines, and never the blank line that ends the event
        await self._send(writer, head, b"event: message\n", line * (CHUNK // len(line)), chunked=True)


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    srv = HostileServer()
    yield srv
    srv.stop()


CHILD = r"""
import asyncio, json, sys, time
from mcpkit.client import Client, EraCache

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])  # kB

async def main(url):
    out = {}
    async with Client(url, mode="modern", era_cache=EraCache(), timeout=30) as client:
        await client.call_tool("ok")
        out["base_kb"] = status("VmRSS")
        for name in sys.argv[2:]:
            start = time.monotonic()
            try:
                await client.call_tool(name)
                error = "no error"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            seconds = time.monotonic() - start
            nxt = (await client.call_tool("ok")).content[0].text
            out[name] = {"error": error, "seconds": seconds, "next": nxt}
    out["peak_kb"] = status("VmHWM")
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""

CASES = ("declared", "chunked", "gzip", "sse-line", "sse-event")
WHAT = {"declared": "the HTTP response", "chunked": "the HTTP response", "gzip": "the HTTP response",
        "sse-line": "an SSE line", "sse-event": "an SSE event"}


@pytest.mark.parametrize("case", CASES)
def test_a_huge_answer_is_refused_quickly_with_bounded_memory(hostile: HostileServer, case: str) -> None:
    """One child per case: its peak RSS (VmHWM) against its RSS after a first small answer."""
    proc = subprocess.run([sys.executable, "-c", CHILD, hostile.url, case], env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    limit = 16 * MIB
    assert out[case]["error"] == (f"ResponseTooLarge: {WHAT[case]} from {hostile.url} is longer than {limit} bytes"
                                  " (max_response_bytes); it was not read further"), out
    assert out[case]["seconds"] < 8, out
    assert out[case]["next"] == "ok", out  # the same Client answers the next request
    grown_mib = (out["peak_kb"] - out["base_kb"]) / 1024
    assert grown_mib < 40, f"RSS grew by {grown_mib:.0f} MiB for an answer capped at 16 MiB"  # 64 MiB sent


def test_the_option_sets_the_limit_and_the_connection_is_released(hostile: HostileServer) -> None:
    from mcpkit.client import Client, EraCache, ResponseTooLarge

    async def main() -> tuple[BaseException, str, int]:
        async with Client(hostile.url, mode="modern", era_cache=EraCache(), max_response_bytes=MIB) as client:
            with pytest.raises(ResponseTooLarge) as info:
                await client.call_tool("chunked")
            for _ in range(100):  # the half-read answer's connection is closed, not kept for reuse
                if hostile.open == 0:
                    break
                await asyncio.sleep(0.05)
            still_open = hostile.open
            result = await client.call_tool("ok")
            return info.value, result.content[0].text, still_open  # type: ignore[union-attr]

    exc, nxt, still_open = asyncio.run(asyncio.wait_for(main(), 60))
    assert exc.limit == MIB  # type: ignore[attr-defined]
    assert f"longer than {MIB} bytes (max_response_bytes)" in str(exc)
    assert still_open == 0
    assert nxt == "ok"


def test_default_matches_stdio_and_bad_values_are_refused() -> None:
    from mcpkit.client import Client
    from mcpkit.client._limits import DEFAULT_MAX_RESPONSE_BYTES
    from mcpkit.transports._stdio_main import MAX_LINE

    assert DEFAULT_MAX_RESPONSE_BYTES == MAX_LINE == 16 * MIB
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_response_bytes must be a positive number of bytes"):
            Client("http://127.0.0.1:9/mcp", max_response_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected options for a stdio server: max_response_bytes"):
        Client([sys.executable, "-c", "pass"], max_response_bytes=MIB)
