#!/usr/bin/env python3
"""mcpkit Client's sequential ``tools/call echo`` over HTTP: the lean transport against httpx's
default one (``MCPKIT_HTTP_TRANSPORT=httpx``), interleaved, in one process.

    python bench/client_http.py [--rounds 6] [--calls 1000]

Starts bench/servers/echo_mcpkit.py over Streamable HTTP (2026-07-28 requests), then per round
opens one Client per side (the order alternating), warms it with 50 calls and times ``--calls``
sequential calls. Prints, per side, the median over rounds of calls/s and of each round's p50
per-call latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SIDES = ("httpx", "lean")


async def one(url: str, side: str, calls: int) -> tuple[float, float]:
    from mcpkit import Client

    os.environ["MCPKIT_HTTP_TRANSPORT"] = side  # read when the Client builds its HTTP pool
    async with Client(url) as c:
        for _ in range(50):
            await c.call_tool("echo", {"text": "hi"})
        lat = []
        t0 = time.perf_counter()
        for _ in range(calls):
            s = time.perf_counter()
            await c.call_tool("echo", {"text": "hi"})
            lat.append(time.perf_counter() - s)
        elapsed = time.perf_counter() - t0
    return calls / elapsed, statistics.median(lat) * 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    server = subprocess.Popen([sys.executable, str(BENCH / "servers" / "echo_mcpkit.py"), "http", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url, timeout=1)
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the echo server did not start") from None
                time.sleep(0.1)
                continue
            break
        got: dict[str, list[tuple[float, float]]] = {side: [] for side in SIDES}
        for r in range(args.rounds):
            for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                got[side].append(asyncio.run(one(url, side, args.calls)))
    finally:
        server.terminate()
        server.wait(10)
    print(f"{args.rounds} interleaved rounds of {args.calls} sequential tools/call (2026-07-28) per side")
    for side, rows in got.items():
        print(f"{side:6s} calls/s {statistics.median(r[0] for r in rows):6.0f}   "
              f"p50 ms {statistics.median(r[1] for r in rows):.3f}   per round: {[round(r[0]) for r in rows]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
