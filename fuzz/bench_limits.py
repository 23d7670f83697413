"""Per-request cost of the HTTP limits: uvicorn's httptools protocol against mcpkit's limited
subclass (``mcpkit/transports/_limits.py``), in process, with a no-op transport and a minimal app.

    PYTHONPATH=. python fuzz/bench_limits.py [--requests 20000] [--rounds 8]

Each round feeds one keep-alive connection ``--requests`` POSTs (one ``data_received`` call
each) and runs the event loop until they are answered; the best round of each protocol is
reported in microseconds per request, rounds interleaved (and the order alternated) so
machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from mcpkit.transports import _limits

BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
REQUEST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
           b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
           b"Mcp-Method: ping\r\nContent-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)


async def app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})


class NullTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def write(self, data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def one_round(cls: type[asyncio.Protocol], n: int) -> float:
    config = Config(app, lifespan="off", log_level="warning", access_log=False)
    config.load()
    proto: Any = cls(config, ServerState(), {}, asyncio.get_running_loop())  # type: ignore[call-arg]
    proto.connection_made(NullTransport())
    start = time.perf_counter()
    for _ in range(n):
        proto.data_received(REQUEST)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    elapsed = time.perf_counter() - start
    proto.connection_lost(None)
    return elapsed / n * 1e6


async def main(n: int, rounds: int) -> dict[str, float]:
    limited = _limits.http_protocol(_limits.Limits())
    assert limited is not None
    best = {"httptools": float("inf"), "limited": float("inf")}
    pair: list[tuple[str, type[asyncio.Protocol]]] = [("httptools", HttpToolsProtocol), ("limited", limited)]
    for i in range(rounds):
        for name, cls in pair if i % 2 == 0 else pair[::-1]:  # alternate which goes first
            best[name] = min(best[name], await one_round(cls, n))
    return {k: round(v, 2) for k, v in best.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    result = asyncio.run(main(args.requests, args.rounds))
    result["overhead_us"] = round(result["limited"] - result["httptools"], 2)
    print(json.dumps(result))
