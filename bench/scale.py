"""Scale-out rows: HTTP ``tools/call`` at 1 and 2 workers, with and without Redis, direct and
through nginx (wrk, ``bench/wrk/mcp.lua`` echo mode); and change-notification fan-out
latency to 200 ``subscriptions/listen`` streams spread over 2 workers.

    python bench/scale.py [--duration 5] [--connections 16] [--listeners 200] [--changes 20]

Needs ``redis-server``, ``nginx`` and ``wrk`` (``scripts/install_system_deps.sh``; ``apt-get
install wrk``). Starts everything on loopback ports in temporary directories, stops it all
at the end, prints a markdown table and writes it to ``bench/results/scale.md`` (raw
numbers in ``scale.json``). A report, not a gate; the load is bounded (fixed durations).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from tests.helpers.nginx import Nginx  # noqa: E402
from tests.helpers.redis import RedisServer, workers_argv  # noqa: E402
from tests.helpers.servers import ServerProcess  # noqa: E402

ECHO = BENCH / "servers" / "echo_mcpkit.py"
DEMO = REPO / "examples" / "demo.py"
WRK_LUA = BENCH / "wrk" / "mcp.lua"


def wrk(url: str, conns: int, duration: float) -> dict[str, Any]:
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{duration:g}s", "--timeout", "5s", "-s", str(WRK_LUA), url, "--", "echo"]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    m = re.search(r"^BENCHJSON (\{.*\})$", cp.stdout, re.M)
    if cp.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({cp.returncode}): {cp.stdout[-400:]} {cp.stderr[-400:]}")
    out = json.loads(m.group(1))
    out["rps"] = out["requests"] / (out["duration_us"] / 1e6)
    out["errors"] = sum(out[k] for k in ("bad_body_or_status", "connect_errors", "read_errors", "write_errors", "timeouts"))
    return out


def start(spec: Path, workers: int, redis_url: str | None) -> ServerProcess:
    proc = ServerProcess(workers_argv(spec, workers=workers, redis_url=redis_url))
    if not proc.wait_ready():
        raise RuntimeError(proc.output())
    return proc


def throughput(redis: RedisServer, duration: float, conns: int) -> list[dict[str, Any]]:
    rows = []
    setups: list[tuple[str, str, int, bool]] = [
        ("1 worker", "direct", 1, False),
        ("1 worker + Redis", "direct", 1, True),
        ("2 workers + Redis (one port)", "direct", 2, True),
        ("1 worker", "nginx", 1, False),
        ("2 workers + Redis", "nginx", 2, True),
    ]
    for label, via, workers, with_redis in setups:
        url_redis = redis.url if with_redis else None
        procs: list[ServerProcess] = []
        nginx = None
        try:
            if via == "direct":
                procs.append(start(ECHO, workers, url_redis))
                url = procs[0].url
            else:  # nginx round-robin over single-worker processes (as over machines)
                procs = [start(ECHO, 1, url_redis) for _ in range(workers)]
                nginx = Nginx([f"127.0.0.1:{p.port}" for p in procs])
                url = nginx.url
            wrk(url, conns, min(2.0, duration))  # warm-up
            out = wrk(url, conns, duration)
            row = {"setup": label, "via": via, "connections": conns, **out}
            rows.append(row)
            print(f"  {label:32} {via:6} {out['rps']:8.0f} req/s  p50 {out['p50_us'] / 1000:6.2f} ms  "
                  f"p99 {out['p99_us'] / 1000:6.2f} ms  errors {out['errors']}", flush=True)
        finally:
            if nginx is not None:
                nginx.close()
            for p in procs:
                p.stop()
    return rows


async def _fanout(url: str, listeners: int, changes: int, workers: list[int]) -> dict[str, Any]:
    from mcpkit import Client

    # The era is pinned: 200 clients probing server/discover at once would only measure the probe.
    clients = [Client(url, mode="2026-07-28") for _ in range(listeners)]
    arrivals: list[list[float]] = [[] for _ in range(listeners)]
    done = asyncio.Event()

    async def listen(i: int) -> None:
        async with clients[i] as client:
            async for _note in client.listen(resources=["notes://groceries"]):
                arrivals[i].append(time.perf_counter())
                if len(arrivals[i]) == changes and all(len(a) == changes for a in arrivals):
                    done.set()
                if len(arrivals[i]) == changes:
                    return

    tasks = []
    for i in range(listeners):  # open them in small batches, not as one burst
        tasks.append(asyncio.create_task(listen(i)))
        if i % 20 == 19:
            await asyncio.sleep(0.1)
    deadline = time.monotonic() + 60
    while not all(c.acknowledged for c in clients):
        if time.monotonic() > deadline:
            raise RuntimeError("listeners did not all start")
        await asyncio.sleep(0.05)
    sent: list[float] = []
    await asyncio.sleep(1.0)  # let the workers settle after 200 connections
    cpu0 = _cpu_seconds(workers)
    async with Client(url, mode="2026-07-28") as writer:
        for k in range(changes):
            sent.append(time.perf_counter())
            await writer.call_tool("save_note", {"name": "groceries", "text": f"v{k}"})
            await asyncio.sleep(0.1)
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    cpu = _cpu_seconds(workers) - cpu0  # includes the 20 save_note calls and idle keep-alives
    lat = sorted((a[k] - sent[k]) * 1000 for a in arrivals for k in range(changes))
    return {"listeners": listeners, "changes": changes, "deliveries": len(lat),
            "p50_ms": statistics.median(lat), "p99_ms": lat[int(len(lat) * 0.99) - 1], "max_ms": lat[-1],
            "worker_cpu_us_per_delivery": cpu * 1e6 / len(lat)}


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / os.sysconf("SC_CLK_TCK")


def fanout(redis: RedisServer, listeners: int, changes: int) -> dict[str, Any]:
    proc = start(DEMO, 2, redis.url)
    try:
        redis.command("CONFIG", "RESETSTAT")
        workers = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.proc.pid)], capture_output=True,
                                                  text=True).stdout.split()]
        out = asyncio.run(_fanout(proc.url, listeners, changes, workers))
        stats = redis.command("INFO", "commandstats").decode()
        m = re.search(r"cmdstat_publish:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)", stats)
        if m:
            out["redis_publish_calls"] = int(m.group(1))
            out["redis_usec_per_publish"] = float(m.group(3))
        print(f"  fan-out to {listeners} listeners on 2 workers: p50 {out['p50_ms']:.1f} ms, p99 {out['p99_ms']:.1f} ms, "
              f"Redis {out.get('redis_usec_per_publish')} us per PUBLISH, worker CPU "
              f"{out['worker_cpu_us_per_delivery']:.0f} us per delivery", flush=True)
        return out
    finally:
        proc.stop()


def table(rows: list[dict[str, Any]], fan: dict[str, Any] | None, machine: str) -> str:
    lines = [f"Machine: {machine}. wrk -t1 -c{rows[0]['connections'] if rows else '?'}, echo tools/call, everything on one host.", "",
             "| setup | via | req/s | p50 ms | p99 ms | errors |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['setup']} | {r['via']} | {r['rps']:.0f} | {r['p50_us'] / 1000:.2f} | {r['p99_us'] / 1000:.2f} | {r['errors']} |")
    if fan:
        lines += ["", "| fan-out | listeners | changes | deliveries | p50 ms | p99 ms | max ms | Redis µs per PUBLISH "
                  "| worker CPU µs per delivery |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                  f"| save_note → resources/updated, 2 workers | {fan['listeners']} | {fan['changes']} | {fan['deliveries']} | "
                  f"{fan['p50_ms']:.1f} | {fan['p99_ms']:.1f} | {fan['max_ms']:.1f} | {fan.get('redis_usec_per_publish', '?')} "
                  f"| {fan['worker_cpu_us_per_delivery']:.0f} |"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--listeners", type=int, default=200)
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--skip", default="", help="comma list: throughput,fanout")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 1
    redis = RedisServer()
    redis.start()
    try:
        skip = set(args.skip.split(","))
        rows = [] if "throughput" in skip else throughput(redis, args.duration, args.connections)
        fan = None if "fanout" in skip else fanout(redis, args.listeners, args.changes)
    finally:
        redis.close()
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    text = table(rows, fan, machine)
    print(text)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / "scale.md").write_text(text)
    (out / "scale.json").write_text(json.dumps({"throughput": rows, "fanout": fan, "machine": machine}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
