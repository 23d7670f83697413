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
