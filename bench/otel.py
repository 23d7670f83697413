#!/usr/bin/env python3
"""Tracing off and on, mcpkit beside the official MCP Python SDK (mcp==2.3.0), in one run.

    python bench/otel.py [--rounds 5] [--calls 2000] [--duration 5] [--concurrency 16] [--smoke]

Four sides, measured in the same interleaved rounds (bench/_rounds.py: every round measures
every side, who goes first alternating):

- ``mcpkit``, ``official``: each library as it ships, no OpenTelemetry SDK in the process. mcpkit
  then installs nothing (no middleware, one ``is None`` check per request); the official SDK
  calls the OpenTelemetry API for every request anyway (its ``OpenTelemetryMiddleware`` is
  always on), which without an SDK makes non-recording spans.
- ``mcpkit+otel``, ``official+otel``: the same echo servers started through
  bench/servers/otel_wrap.py, which sets up the OpenTelemetry SDK as an application would (a
  TracerProvider with a BatchSpanProcessor and an exporter that drops the spans, a
  MeterProvider with an in-memory reader). The same setup for both: mcpkit instruments itself
  when it finds it (SERVER spans, plus the two ``operation.duration`` histograms, which the
  official SDK does not record: mcpkit does more per request here); the official SDK's
  middleware records its spans.

Workloads: stdio warm (``--calls`` sequential ``tools/call echo`` per round, fresh server per
round) and HTTP (wrk, ``--concurrency`` connections, ``--duration`` s per round, one server per
side for the whole run). Reported: the median over rounds per side, the median of the
per-round ratios on/off for each library (the cost of tracing) with the median of the time
it adds per request (1/on - 1/off per round), and mcpkit/official in each state; then the
servers' own CPU time per request (/proc, every thread: what tracing costs the server itself,
which a loaded machine does not inflate the way it inflates wall-clock time). The official SDK comes from bench/.venv-official (run.py installs it); the SDK for its
``+otel`` side is installed into bench/.venv-otel-sdk (pip ``--target``, the version of the
opentelemetry-api the official SDK brought). Stdlib only in this process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import _common
from _common import BENCH, SERVERS, Pinning, Results, Side, ensure_official_venv, make_sides, ms, pct
from _http import HttpServer, ensure_wrk, run_wrk
from _rounds import attempt, interleaved
from _stdio import check_echo, sequential, stdio_round

SDK_DIR = BENCH / ".venv-otel-sdk"
WRAP = SERVERS / "otel_wrap.py"
LIBS = ("mcpkit", "official")
ALL = ("mcpkit", "mcpkit+otel", "official", "official+otel")


def ensure_otel_sdk(official_python: str) -> None:
    """The OpenTelemetry SDK for the official side, matching its opentelemetry-api."""
    r = subprocess.run([official_python, "-c", "import importlib.metadata as m; print(m.version('opentelemetry-api'))"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"the official SDK's interpreter has no opentelemetry-api: {r.stderr.strip()}")
    version = r.stdout.strip()
    if (SDK_DIR / f"opentelemetry_sdk-{version}.dist-info").exists():
        return
    print(f"installing opentelemetry-sdk=={version} into {SDK_DIR.relative_to(BENCH.parent)} ...", flush=True)
    subprocess.run([official_python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--target",
                    str(SDK_DIR), f"opentelemetry-sdk=={version}"], check=True)


def traced(side: Side, sdk_path: str | None) -> Side:
    env = dict(side.env)
    env["BENCH_OTEL_TARGET"] = side.script
    if sdk_path:
        env["PYTHONPATH"] = ":".join(p for p in (env.get("PYTHONPATH"), sdk_path) if p)
    return Side(f"{side.name}+otel", side.python, env, side.imports, side.build_code, script=str(WRAP))


def stdio_warm(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, calls: int) -> dict[str, list[float]]:
    print(f"== stdio warm tools/call: {rounds} rounds x {calls} sequential calls", flush=True)
    rps: dict[str, list[float | None]] = {n: [] for n in sides}
    lat: dict[str, list[float]] = {n: [] for n in sides}
    ok = {n: True for n in sides}
    cpu: dict[str, list[float | None]] = {n: [] for n in sides}
    requests = [_common.echo_line(i) for i in range(2, calls + 2)]
    for r, _, name in interleaved(rounds, ok.get):
        while len(rps[name]) < r:
            rps[name].append(None)
        while len(cpu[name]) < r:
            cpu[name].append(None)
        with stdio_round(res, "otel-stdio", name, ok, sides[name], pin) as srv:
            srv.discover()
            for i in range(50):  # warm-up
                srv.send(_common.echo_line(10_000_000 + i))
                srv.recv()
            cpu0 = cpu_seconds(srv.proc.pid)
            elapsed, took = sequential(srv, requests, lambda i, resp: check_echo(resp, i + 2))
            lat[name].extend(took)
            rps[name].append(calls / elapsed)
            cpu[name].append(per_request_us(cpu0, cpu_seconds(srv.proc.pid), calls))
            srv.close_stdin_and_wait(10)
            if name.endswith("+otel") and b"otel: first span" not in _stderr(srv):
                res.notes.append(f"{name}: no span was exported (stdio)")
        print(f"  r{r + 1} {name:14} {rps[name][-1] or 0:9.0f} req/s", flush=True)
    res.raw["stdio"] = {n: {"rps": v, "p50_ms": ms(pct(lat[n], 50)) if lat[n] else None, "cpu_us": cpu[n]}
                        for n, v in rps.items()}
    CPU["stdio"] = cpu
    return rps  # type: ignore[return-value]


def _stderr(srv: object) -> bytes:
    f = srv.stderr  # type: ignore[attr-defined]
    f.seek(0)
    return f.read()


def http(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, duration: float, conns: int,
         warmup: float) -> dict[str, list[float]]:
    print(f"== HTTP echo tools/call (wrk c={conns}, {duration:g} s): {rounds} rounds", flush=True)
    out: dict[str, list[float]] = {n: [] for n in sides}
    cpu: dict[str, list[float | None]] = {n: [] for n in sides}
    CPU["http"] = cpu
    if not ensure_wrk():
        res.error("all", "otel-http", "wrk is not available; HTTP skipped")
        return out
    servers: dict[str, HttpServer] = {}
    try:
        for name in sides:
            servers[name] = HttpServer(sides[name], pin)
        for name in list(servers):
            with attempt(res, "otel-http", name, diag=servers[name].diag):
                servers[name].wait_ready()
                if warmup:
                    run_wrk(servers[name], pin, "echo", conns, warmup)
            if name not in servers or servers[name].proc.poll() is not None:
                servers.pop(name, None)
        for r, _, name in interleaved(rounds, servers.__contains__):
            with attempt(res, "otel-http", name, diag=servers[name].diag):
                cpu0 = cpu_seconds(servers[name].proc.pid)
                o = run_wrk(servers[name], pin, "echo", conns, duration)
                if o["errors"]:
                    raise RuntimeError(f"{o['errors']} errors")
                out[name].append(o["requests"] / (o["duration_us"] / 1e6))
                cpu[name].append(per_request_us(cpu0, cpu_seconds(servers[name].proc.pid), o["requests"]))
                print(f"  r{r + 1} {name:14} {out[name][-1]:9.0f} req/s  p50 {o['p50_us'] / 1e3:6.2f} ms", flush=True)
    finally:
        for name, srv in servers.items():
            srv.stop()
            if name.endswith("+otel"):
                srv.stderr.seek(0)
                if b"otel: first span" not in srv.stderr.read():
                    res.notes.append(f"{name}: no span was exported (HTTP)")
    res.raw["http"] = out  # type: ignore[assignment]
    res.raw["http_cpu_us"] = cpu  # type: ignore[assignment]
    return out


#: Server CPU µs per request, per workload and side (one value per round).
CPU: dict[str, dict[str, list[float | None]]] = {}


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system, every thread) process ``pid`` has used, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_request_us(before: float | None, after: float | None, requests: int) -> float | None:
    if before is None or after is None or not requests:
        return None
    return (after - before) / requests * 1e6


def cpu_table(cpu: dict[str, dict[str, list[float | None]]]) -> list[str]:
    """Server CPU µs per request: what tracing costs the server, whatever share of a core the
    machine's load leaves it (the wall-clock µs above grow with that share; these do not)."""
    def med(v: list[float | None]) -> float | None:
        xs = [x for x in v if x]
        return statistics.median(xs) if xs else None

    def f(v: float | None, sign: bool = False) -> str:
        return "—" if v is None else (f"{v:+.0f}" if sign else f"{v:.0f}")

    lines = ["| workload (server CPU µs per request, median of rounds) | mcpkit | mcpkit+otel | added | official "
             "| official+otel | added |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, sides in cpu.items():
        cells = []
        for lib in LIBS:
            off, on = sides.get(lib, []), sides.get(f"{lib}+otel", [])
            added = med([b - a for a, b in zip(off, on) if a and b])
            cells += [f(med(off)), f(med(on)), f(added, True)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def ratios(a: list[float | None], b: list[float | None]) -> float | None:
    """The median of the per-round ratios a/b (rounds where both ran)."""
    rs = [x / y for x, y in zip(a, b) if x and y]
    return statistics.median(rs) if rs else None


def added_us(on: list[float | None], off: list[float | None]) -> float | None:
    """The median over rounds of the time tracing adds per request: 1/on - 1/off, in µs."""
    ds = [(1 / x - 1 / y) * 1e6 for x, y in zip(on, off) if x and y]
    return statistics.median(ds) if ds else None


def table(name: str, rps: dict[str, list[float]]) -> list[str]:
    def medv(n: str) -> str:
        v = [x for x in rps.get(n, []) if x]
        return f"{statistics.median(v):,.0f}" if v else "—"

    def pc(r: float | None) -> str:
        return "—" if r is None else f"{(r - 1) * 100:+.1f}%"

    def x(r: float | None) -> str:
        return "—" if r is None else f"{r:.2f}x"

    def us(v: float | None) -> str:
        return "—" if v is None else f"{v:+.0f} µs"

    cost = [f"{pc(ratios(rps[f'{lib}+otel'], rps[lib]))} ({us(added_us(rps[f'{lib}+otel'], rps[lib]))})" for lib in LIBS]
    lines = [f"| {name} | " + " | ".join(medv(n) for n in ALL) + f" | {cost[0]} | {cost[1]}"
             + f" | {x(ratios(rps['mcpkit'], rps['official']))} | {x(ratios(rps['mcpkit+otel'], rps['official+otel']))} |"]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000, help="stdio: sequential calls per round")
    ap.add_argument("--duration", type=float, default=5.0, help="HTTP: seconds per wrk run")
    ap.add_argument("--concurrency", type=int, default=16, help="HTTP: wrk connections")
    ap.add_argument("--workloads", default="stdio,http")
    ap.add_argument("--smoke", action="store_true", help="a tiny run: checks that everything still works")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--official-python", help="an interpreter with mcp==2.3.0 (default: bench/.venv-official)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.rounds, args.calls, args.duration = 1, 200, 1.0
    official_python = args.official_python or ensure_official_venv(args.no_install)
    ensure_otel_sdk(official_python)
    _common.SIDES[:] = list(ALL)  # the round order of _rounds alternates over these
    base = make_sides(official_python)
    sides = {"mcpkit": base["mcpkit"], "mcpkit+otel": traced(base["mcpkit"], None),
             "official": base["official"], "official+otel": traced(base["official"], str(SDK_DIR))}
    pin = Pinning(not args.no_pin)
    pin.pin_self()
    res = Results(list(ALL))
    t0 = time.monotonic()
    results: dict[str, dict[str, list[float]]] = {}
    wls = [w.strip() for w in args.workloads.split(",")]
    if "stdio" in wls:
        results[f"stdio warm, {args.calls} sequential tools/call"] = stdio_warm(res, sides, pin, args.rounds, args.calls)
    if "http" in wls:
        results[f"HTTP tools/call, wrk c={args.concurrency}"] = http(
            res, sides, pin, args.rounds, args.duration, args.concurrency, 0.0 if args.smoke else 1.0)
    head = ["| workload (req/s, median of rounds) | mcpkit | mcpkit+otel | official | official+otel "
            "| tracing on/off, mcpkit (added per request) | tracing on/off, official (added per request) "
            "| mcpkit/official off | mcpkit/official on |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [line for name, rps in results.items() for line in table(name, rps)]
    text = "\n".join([*head, *rows, "", *cpu_table(CPU)])
    print("\n" + text)
    for note in res.notes:
        print(f"note: {note}")
    for err in res.errors:
        print(f"error: {err}")
    print(f"({args.rounds} rounds, {time.monotonic() - t0:.0f} s)")
    return 1 if res.errors else 0


if __name__ == "__main__":
    sys.exit(main())
