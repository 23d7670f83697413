"""The client workload's three drivers, one per process: sequential ``tools/call echo`` over
stdio against a server command (the bench uses bench/servers/floor_stdio.py).

    python bench/client_floor.py KIND CALLS [--loop asyncio|uvloop] -- SERVER_ARGV...

KIND is ``driver`` (the floor: a bare synchronous JSON-lines loop, stdlib json, blocking
pipe reads: what a client costs with nothing in it), ``asyncio`` (the floor of an asyncio
client: the same requests from a coroutine on asyncio's default loop, the answers read by a
reader callback (``add_reader``) that resolves a future per request; what any client on that
loop pays before it does anything of its own), ``mcpkit`` (``mcpkit.Client``, library
defaults) or ``official`` (the official SDK's ``mcp.Client`` over ``StdioServerParameters``;
run it with the SDK's interpreter). ``--loop uvloop`` runs the coroutine kinds on uvloop's loop
instead of asyncio's default one (the choice is the application's; mcpkit's servers make it
where uvloop is installed). Each connects, makes 50 warm-up calls, then CALLS
sequential calls, checks every answer, and prints one JSON line: ``calls_per_s`` and this
process's CPU µs per call (user + system, ``getrusage``) over the timed calls.

Stdlib only, apart from the client under test.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from typing import Any

ECHO_TEXT = "bench-echo-payload"
WARMUP = 50
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def check(text: str) -> None:
    if text != ECHO_TEXT:
        raise RuntimeError(f"unexpected echo: {text!r}")


def run_driver(calls: int, argv: list[str]) -> tuple[float, float]:
    # stdin unbuffered (one write per request), stdout buffered (readline then costs one read).
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    write, read = proc.stdin.write, open(proc.stdout.fileno(), "rb", closefd=False).readline
    loads, dumps = json.loads, json.dumps

    def call(req_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        write(dumps({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params},
                    separators=(",", ":")).encode() + b"\n")
        msg = loads(read())
        if msg.get("id") != req_id or "result" not in msg:
            raise RuntimeError(f"bad answer: {msg!r}")
        result: dict[str, Any] = msg["result"]
        return result

    try:
        call(0, "server/discover", {"_meta": META})
        params = {"name": "echo", "arguments": {"text": ECHO_TEXT}, "_meta": META}
        for i in range(1, WARMUP + 1):
            check(call(i, "tools/call", params)["content"][0]["text"])
        c0, t0 = cpu_s(), time.perf_counter()
        for i in range(WARMUP + 1, WARMUP + 1 + calls):
            check(call(i, "tools/call", params)["content"][0]["text"])
        return time.perf_counter() - t0, cpu_s() - c0
    finally:
        proc.stdin.close()
        proc.wait(10)


async def run_asyncio(calls: int, argv: list[str]) -> tuple[float, float]:
    import asyncio
    import os

    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    rfd, wfd = proc.stdout.fileno(), proc.stdin.fileno()
    os.set_blocking(rfd, False)
    pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
    rest = [b""]
    loads, dumps = json.loads, json.dumps

    def readable() -> None:
        *lines, rest[0] = (rest[0] + os.read(rfd, 65536)).split(b"\n")
        for line in lines:
            msg = loads(line)
            pending.pop(msg["id"]).set_result(msg)

    async def call(req_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        fut = pending[req_id] = loop.create_future()
        os.write(wfd, dumps({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params},
                            separators=(",", ":")).encode() + b"\n")
        msg = await fut
        if "result" not in msg:
            raise RuntimeError(f"bad answer: {msg!r}")
        result: dict[str, Any] = msg["result"]
        return result

    loop.add_reader(rfd, readable)
    try:
        await call(0, "server/discover", {"_meta": META})
        params = {"name": "echo", "arguments": {"text": ECHO_TEXT}, "_meta": META}
        for i in range(1, WARMUP + 1):
            check((await call(i, "tools/call", params))["content"][0]["text"])
        c0, t0 = cpu_s(), time.perf_counter()
        for i in range(WARMUP + 1, WARMUP + 1 + calls):
            check((await call(i, "tools/call", params))["content"][0]["text"])
        return time.perf_counter() - t0, cpu_s() - c0
    finally:
        loop.remove_reader(rfd)
        proc.stdin.close()
        proc.wait(10)


async def run_mcpkit(calls: int, argv: list[str]) -> tuple[float, float]:
    from mcpkit import Client

    async with Client(argv) as client:
        for _ in range(WARMUP):
            check((await client.call_tool("echo", {"text": ECHO_TEXT})).content[0].text)  # type: ignore[union-attr]
        c0, t0 = cpu_s(), time.perf_counter()
        for _ in range(calls):
            check((await client.call_tool("echo", {"text": ECHO_TEXT})).content[0].text)  # type: ignore[union-attr]
        return time.perf_counter() - t0, cpu_s() - c0


async def run_official(calls: int, argv: list[str]) -> tuple[float, float]:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=argv[0], args=argv[1:])) as client:
        async def one() -> None:
            result = await client.call_tool("echo", {"text": ECHO_TEXT})
            check(result.content[0].text)  # type: ignore[union-attr]

        for _ in range(WARMUP):
            await one()
        c0, t0 = cpu_s(), time.perf_counter()
        for _ in range(calls):
            await one()
        return time.perf_counter() - t0, cpu_s() - c0


USAGE = "usage: client_floor.py driver|asyncio|mcpkit|official CALLS [--loop asyncio|uvloop] -- SERVER_ARGV..."


def main(argv: list[str]) -> int:
    loop = "asyncio"
    if len(argv) >= 4 and argv[2] == "--loop":
        loop, argv = argv[3], argv[:2] + argv[4:]
    if len(argv) < 4 or argv[2] != "--" or loop not in ("asyncio", "uvloop"):
        raise SystemExit(USAGE)
    kind, calls, server = argv[0], int(argv[1]), argv[3:]
    if kind == "driver":
        if loop != "asyncio":
            raise SystemExit("client_floor.py: the synchronous driver runs on no event loop (no --loop)")
        elapsed, cpu = run_driver(calls, server)
    elif kind in ("asyncio", "mcpkit", "official"):
        import asyncio

        run = {"asyncio": run_asyncio, "mcpkit": run_mcpkit, "official": run_official}[kind]
        if loop == "uvloop":  # the loop a client's application may choose (mcpkit's servers run on it)
            import uvloop

            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                elapsed, cpu = runner.run(run(calls, server))
        else:
            elapsed, cpu = asyncio.run(run(calls, server))
    else:
        raise SystemExit(f"unknown driver {kind!r}")
    print(json.dumps({"calls_per_s": calls / elapsed, "cpu_us_per_call": cpu * 1e6 / calls}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
