#!/usr/bin/env python3
"""The proxy's cost: per-call latency and calls/s of ``tools/call echo`` through ``mcpkit
proxy --http`` against a direct call, beside FastMCP's proxy in front of the same backend.

    python bench/proxy.py [--rounds 5] [--calls 200] [--seconds 2] [--concurrency 8] [--no-install]

Two cells, one interleaved run (every round measures every side of both cells, and the
order of the sides alternates round by round, so drift hits all of them alike):

- ``http->http``: the backend is bench/servers/echo_mcpkit.py over Streamable HTTP;
  ``direct`` calls it, ``mcpkit`` and ``fastmcp`` call a proxy (HTTP) in front of it;
- ``stdio->http``: the backend is echo_mcpkit.py over stdio; ``direct`` calls an
  echo_mcpkit.py HTTP server (the front's transport, no proxy), ``backend`` the stdio server
  itself (the backend round trip), ``mcpkit`` and ``fastmcp`` an HTTP proxy spawning it.

The client is mcpkit's (auto era: 2026-07-28 where the front speaks it), in this process.
Latency: the median of ``--calls`` sequential calls per round; throughput: calls completed by
``--concurrency`` concurrent callers in ``--seconds``. Reported: medians over rounds, and the
median of the per-round ratios. FastMCP (``fastmcp==4.2.3``) is installed into
bench/.venv-fastmcp on first use. Target: the proxy adds at most one backend round trip plus
20% of a direct call, and serves at least 3x FastMCP's proxy throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
ECHO = BENCH / "servers" / "echo_mcpkit.py"
FASTMCP_PROXY = BENCH / "servers" / "fastmcp_proxy.py"
FASTMCP_VENV = BENCH / ".venv-fastmcp"
FASTMCP_SPEC = "fastmcp==4.2.3"
FASTMCP_VERSION = "4.2.3"
PY = sys.executable


def ensure_fastmcp(no_install: bool) -> str:
    py = FASTMCP_VENV / "bin" / "python"

    def version() -> str | None:
        if not py.exists():
            return None
        r = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('fastmcp'))"],
                           capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    if version() == FASTMCP_VERSION:
        return str(py)
    if no_install:
        raise SystemExit(f"{FASTMCP_VENV.relative_to(REPO)} lacks {FASTMCP_SPEC} and --no-install was given")
    print(f"installing {FASTMCP_SPEC} into {FASTMCP_VENV.relative_to(REPO)} ...", flush=True)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(FASTMCP_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", FASTMCP_SPEC], check=True)
    if version() != FASTMCP_VERSION:
        raise SystemExit(f"could not install {FASTMCP_SPEC}")
    return str(py)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO) + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    return out


def start(argv: list[str], port: int, procs: list[subprocess.Popen[bytes]]) -> str:
    proc = subprocess.Popen(argv, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
    procs.append(proc)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
        except urllib.error.HTTPError:
            return url
        except OSError:
            time.sleep(0.2)
            continue
        return url
    raise SystemExit(f"{' '.join(argv)} did not answer within 60 s")


async def latency(target: Any, calls: int) -> float:
    from mcpkit import Client

    async with Client(target, cache=False) as c:
        for _ in range(20):  # warm up (connections, imports, the proxy's backend)
            await c.call_tool("echo", {"text": "warm"})
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await c.call_tool("echo", {"text": "bench-echo-payload"})
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


async def throughput(target: Any, seconds: float, concurrency: int) -> float:
    from mcpkit import Client

    async with Client(target, cache=False) as c:
        for _ in range(10):
            await c.call_tool("echo", {"text": "warm"})
        done = 0
        stop = time.perf_counter() + seconds

        async def caller() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                await c.call_tool("echo", {"text": "bench-echo-payload"})
                done += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        return done / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = ap.parse_args()
    fastmcp_py = ensure_fastmcp(args.no_install)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        back = free_port()
        back_url = start([PY, str(ECHO), "http", str(back)], back, procs)
        stdio_backend = [PY, str(ECHO), "stdio"]
        ports = {k: free_port() for k in ("m-http", "m-stdio", "f-http", "f-stdio")}
        proxy = [PY, "-m", "mcpkit", "proxy", "--http", "--port"]
        targets: dict[str, dict[str, Any]] = {
            "http->http": {
                "direct": back_url,
                "mcpkit": start([*proxy, str(ports["m-http"]), back_url], ports["m-http"], procs),
                "fastmcp": start([fastmcp_py, str(FASTMCP_PROXY), str(ports["f-http"]), back_url], ports["f-http"],
                                 procs),
            },
            "stdio->http": {
                "direct": back_url,          # the front's transport, no proxy
                "backend": stdio_backend,    # the backend round trip
                "mcpkit": start([*proxy, str(ports["m-stdio"]), "--", *stdio_backend], ports["m-stdio"], procs),
                "fastmcp": start([fastmcp_py, str(FASTMCP_PROXY), str(ports["f-stdio"]), "--", *stdio_backend],
                                 ports["f-stdio"], procs),
            },
        }
        lat: dict[tuple[str, str], list[float]] = {}
        thr: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            for cell, sides in targets.items():
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for side in order:
                    lat.setdefault((cell, side), []).append(asyncio.run(latency(sides[side], args.calls)))
                    if side != "backend":
                        thr.setdefault((cell, side), []).append(
                            asyncio.run(throughput(sides[side], args.seconds, args.concurrency)))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
        for proc in procs:
            proc.wait(10)
    report(lat, thr, args)
    if args.json:
        Path(args.json).write_text(json.dumps({"latency_ms": {f"{c}/{s}": v for (c, s), v in lat.items()},
                                               "calls_per_s": {f"{c}/{s}": v for (c, s), v in thr.items()}},
                                              indent=1))
    return 0


def report(lat: dict[tuple[str, str], list[float]], thr: dict[tuple[str, str], list[float]],
           args: argparse.Namespace) -> None:
    med = statistics.median
    print(f"\n{args.rounds} interleaved rounds; latency: median of {args.calls} sequential calls; "
          f"throughput: {args.concurrency} concurrent callers for {args.seconds:g} s\n")
    print("| cell | side | latency ms | calls/s |")
    print("|---|---|---:|---:|")
    for (cell, side), values in lat.items():
        t = thr.get((cell, side))
        print(f"| {cell} | {side} | {med(values):.2f} | {med(t):.0f} |" if t else
              f"| {cell} | {side} | {med(values):.2f} | - |")
    print()
    for cell in ("http->http", "stdio->http"):
        direct = lat[(cell, "direct")]
        backend = lat[(cell, "backend")] if (cell, "backend") in lat else direct
        added = [m - d for m, d in zip(lat[(cell, "mcpkit")], direct, strict=True)]
        budget = [b + 0.2 * d for b, d in zip(backend, direct, strict=True)]
        ratio = [m / f for m, f in zip(thr[(cell, "mcpkit")], thr[(cell, "fastmcp")], strict=True)]
        f_added = [f - d for f, d in zip(lat[(cell, "fastmcp")], direct, strict=True)]
        print(f"{cell}: mcpkit proxy adds {med(added):.2f} ms per call (budget: one backend round trip + 20% of a "
              f"direct call = {med(budget):.2f} ms; {'met' if med(added) <= med(budget) else 'NOT met'}); "
              f"FastMCP's adds {med(f_added):.2f} ms; throughput {med(ratio):.2f}x FastMCP's proxy "
              f"({'met' if med(ratio) >= 3 else 'NOT met'}: target 3x)")


if __name__ == "__main__":
    sys.exit(main())
