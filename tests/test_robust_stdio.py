"""Reliability over stdio (issue 10, hole 3): the server bounds the requests it handles at
once and stops reading its input meanwhile (backpressure)."""

from __future__ import annotations

import asyncio
import json
import os

from mcpkit import Server
from mcpkit.transports.stdio import serve_stdio
from tests.helpers.messages import line, request


def test_stdio_server_bounds_inflight_requests() -> None:
    server = Server("bounded", "1.0")
    running = 0
    peak = 0

    @server.tool()
    async def slow() -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return "done"

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    n = 40
    os.write(in_w, b"".join(line(request(i, "tools/call", name="slow", arguments={})) + b"\n" for i in range(n)))
    os.close(in_w)

    async def main() -> None:
        await serve_stdio(server, in_fd=in_r, out_fd=out_w, max_inflight=4)

    asyncio.run(main())
    os.close(out_w)
    with os.fdopen(out_r, "rb") as f:
        answers = [json.loads(x) for x in f.read().splitlines()]
    os.close(in_r)
    assert sorted(a["id"] for a in answers) == list(range(n))
    assert all(a["result"]["content"][0]["text"] == "done" for a in answers)
    assert peak <= 4, peak


def _serve_pipes(server: Server, chunks: list[bytes], *, no_add_reader: bool = False) -> list[dict]:
    """Serve ``chunks`` (written one by one, with pauses, so that they arrive as separate reads)
    and return the answers."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        if no_add_reader:
            def refuse(*args: object) -> None:
                raise NotImplementedError

            loop.add_reader = refuse  # type: ignore[method-assign]

        async def feed() -> None:
            for chunk in chunks:
                os.write(in_w, chunk)
                await asyncio.sleep(0.02)
            os.close(in_w)

        writer = loop.create_task(feed())
        await serve_stdio(server, in_fd=in_r, out_fd=out_w)
        await writer

    asyncio.run(main())
    os.close(out_w)
    with os.fdopen(out_r, "rb") as f:
        answers = [json.loads(x) for x in f.read().splitlines()]
    os.close(in_r)
    return answers


def _echo_server() -> Server:
    server = Server("echo", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def test_an_oversized_line_over_several_reads_is_refused_once(monkeypatch) -> None:
    from mcpkit.transports import _stdio_main

    monkeypatch.setattr(_stdio_main, "MAX_LINE", 1000)
    big = line(request(1, "tools/call", name="echo", arguments={"text": "x" * 3000}))
    small = line(request(2, "tools/call", name="echo", arguments={"text": "ok"})) + b"\n"
    answers = _serve_pipes(_echo_server(), [big[:700], big[700:1500], big[1500:] + b"\n" + small[:10], small[10:]])
    assert [a.get("id") for a in answers] == [None, 2]
    assert answers[0]["error"]["code"] == -32600
    assert answers[1]["result"]["content"][0]["text"] == "ok"


def test_lines_split_across_reads_and_a_last_line_without_newline_are_served() -> None:
    one = line(request(1, "tools/call", name="echo", arguments={"text": "a"})) + b"\n"
    two = line(request(2, "tools/call", name="echo", arguments={"text": "b"}))
    answers = _serve_pipes(_echo_server(), [one[:5], one[5:] + two[:7], two[7:]])
    assert sorted(a["id"] for a in answers) == [1, 2]


def test_a_loop_without_add_reader_reads_through_a_stream(monkeypatch) -> None:
    from mcpkit.transports import _stdio_main

    monkeypatch.setattr(_stdio_main, "MAX_LINE", 1000)
    one = line(request(1, "tools/call", name="echo", arguments={"text": "a"})) + b"\n"
    big = line(request(2, "tools/call", name="echo", arguments={"text": "x" * (_stdio_main.MAX_LINE + 10)})) + b"\n"
    three = line(request(3, "tools/call", name="echo", arguments={"text": "c"})) + b"\n"
    answers = _serve_pipes(_echo_server(), [one, big, three], no_add_reader=True)
    assert [a.get("id") for a in answers] == [1, None, 3]
