"""The stdio client's read side (issue 24): answers read from a loop callback on a pipe of the
client's own, lines split across reads, over-long lines skipped, a last line without its
newline, and the stream-reader path of a loop without ``add_reader``; and, on the write side,
a request bigger than the pipe, written whole."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest

from mcpkit import Client
from mcpkit.transports import _stdio_main

#: A stdio "server" that answers each request by id with a text content, after writing
#: whatever PRELUDE says, in pieces with pauses (so that lines arrive split across reads);
#: with a second argument ``length``, the text's length instead, written at once.
SCRIPT = r"""
import json, sys, time
prelude = sys.argv[1].encode()
lengths = sys.argv[2:] == ["length"]
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}
    else:
        text = msg["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": str(len(text)) if lengths else text}]}
    body = prelude + json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
    step = len(body) if lengths else 7
    for i in range(0, len(body), step):
        out.write(body[i:i + step]); out.flush(); time.sleep(0.001)
    out.write(b"\n"); out.flush()
"""


def _call(prelude: str, *, no_add_reader: bool = False) -> str:
    async def main() -> str:
        if no_add_reader:
            loop = asyncio.get_running_loop()

            def refuse(*args: object) -> None:
                raise NotImplementedError

            loop.add_reader = refuse  # type: ignore[method-assign]
        async with Client([sys.executable, "-c", SCRIPT, prelude], mode="modern") as client:
            result = await client.call_tool("echo", {"text": "hello"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    return asyncio.run(main())


def test_an_answer_split_across_many_reads_is_read() -> None:
    assert _call("") == "hello"


def test_an_over_long_line_is_skipped_with_a_warning(monkeypatch, caplog) -> None:
    monkeypatch.setattr(_stdio_main, "MAX_LINE", 200)
    with caplog.at_level(logging.WARNING, logger="mcpkit.client"):
        # Every answer is preceded by a line far over the limit, spread over many reads.
        assert _call("x" * 600 + "\n") == "hello"
    assert "skipped a line longer than 200 bytes" in caplog.text


@pytest.mark.parametrize("prelude", ["", "not json\n"])
def test_a_loop_without_add_reader_reads_through_a_task(prelude) -> None:
    assert _call(prelude, no_add_reader=True) == "hello"


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_request_bigger_than_the_pipe_is_written_whole(loop: str) -> None:
    # The pipe takes 64 KiB at once: the rest waits in the transport, and the send waits for it
    # (flow control), on either loop. The next call's small line goes after it, in order.
    from mcpkit.transports import loop_factory

    async def main() -> list[str]:
        async with Client([sys.executable, "-c", SCRIPT, "", "length"], mode="modern") as client:
            big = await client.call_tool("echo", {"text": "x" * 3_000_000})
            small = await client.call_tool("echo", {"text": "abc"})
            return [str(r.content[0].text) for r in (big, small)]  # type: ignore[union-attr]

    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        assert runner.run(main()) == ["3000000", "3"]
