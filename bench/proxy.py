#!/usr/bin/env python3
"""The proxy's cost: per-call latency, calls/s and CPU per call of ``tools/call echo`` through
``mcpkit proxy --http`` against a direct call, beside FastMCP's proxy in front of the same backend.

    python bench/proxy.py [--rounds 5] [--seconds 2] [--latency-seconds 1] [--connections 8]
                          [--era both|2026-07-28|2025-11-25] [--no-install] [--save] [--json FILE]

Two cells, one interleaved run (every round measures every side of both cells, and the
order of the sides alternates round by round, so drift hits all of them alike):

- ``http->http``: the backend is bench/servers/echo_mcpkit.py over Streamable HTTP;
  ``direct`` calls it (wrk), ``backend`` is the backend round trip as a bare Python peer makes
  it (see below), ``client`` the mcpkit Client's own sequential round trip to it (information:
  what the client library costs), ``mcpkit`` and ``fastmcp`` call a proxy (HTTP) in front of it,
  and so do the two floors (bench/servers/floor_proxy.py, nothing of MCP): ``floor``, a bare ASGI
  relay on the same uvicorn stack as mcpkit's proxy (what any proxy on that stack pays), and
  ``floor-raw``, a relay of asyncio protocols on uvloop with no HTTP server (what any Python
  proxy on an event loop pays at the least);
- ``stdio->http``: the backend is echo_mcpkit.py over stdio; ``direct`` calls an
  echo_mcpkit.py HTTP server (the front's transport, no proxy), ``backend`` the stdio server
  itself (the backend round trip), ``mcpkit`` and ``fastmcp`` an HTTP proxy spawning it.

The load comes from ``wrk`` (bench/wrk/mcp.lua: every response is checked), never from a
Python client, so the client is not what is measured. Each side is measured in both eras
(``--era`` picks one), every side of a cell in the same era: 2026-07-28, stateless requests
with ``_meta`` in params, which every front here speaks (FastMCP 4.2.3's too, through the
official SDK 2.3.0); 2025-11-25, ``initialize`` + ``notifications/initialized`` sent from
Python first, then wrk sends ``tools/call`` in that session (``Mcp-Session-Id``,
``MCP-Protocol-Version``).

- latency: the median (p50) of one wrk connection's sequential calls for
  ``--latency-seconds``; the ``backend`` side's round trip is, for stdio, one line written to
  the stdio server's stdin and its answer read back, and for HTTP, one POST of the bytes wrk
  sends written on a plain blocking keep-alive socket and its answer read to its
  Content-Length: the median of ``--calls`` sequential calls (no client library);
- throughput: calls/s of ``--connections`` wrk connections for ``--seconds``;
- CPU per call: the front process's utime+stime (/proc/PID/stat) over the throughput run,
  per call (the proxy's own, without its backend); and the backend's (the HTTP backend
  process, or the stdio backend the proxy spawned).

Reported: medians over rounds, and the median of the per-round ratios. FastMCP
(``fastmcp==4.2.3``) is installed into bench/.venv-fastmcp on first use. ``--save`` writes the
table to bench/results/proxy-<date>.md (and the numbers to .json beside it; proxy-<date>-2 for a second run that day). Target: the proxy
adds at most one backend round trip (the ``backend`` side, in both cells) plus 20% of a direct
call (wrk's ``direct`` latency), and serves at least 3x
FastMCP's proxy throughput.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
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
FLOOR_PROXY = BENCH / "servers" / "floor_proxy.py"
FASTMCP_VENV = BENCH / ".venv-fastmcp"
FASTMCP_SPEC = "fastmcp==4.2.3"
FASTMCP_VERSION = "4.2.3"
WRK_LUA = BENCH / "wrk" / "mcp.lua"
PY = sys.executable
MODERN, LEGACY = "2026-07-28", "2025-11-25"
ECHO_TEXT = "bench-echo-payload"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
CLK_TCK = os.sysconf("SC_CLK_TCK")


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


class Front:
    """An HTTP server wrk calls: its URL and process (whose CPU time is read)."""

    def __init__(self, argv: list[str], procs: list[subprocess.Popen[bytes]],
                 extra_env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([*argv[:1], *(str(self.port) if a == "{port}" else a for a in argv[1:])],
                                     env={**env(), **(extra_env or {})}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
        procs.append(self.proc)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.argv = argv
        self.sessions: dict[str, str] = {}

    def wait_ready(self, timeout: float = 60) -> Front:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{' '.join(self.argv)} exited with {self.proc.returncode}")
            try:
                urllib.request.urlopen(self.url, timeout=2)
            except urllib.error.HTTPError:
                return self
            except OSError:
                time.sleep(0.2)
                continue
            return self
        raise SystemExit(f"{' '.join(self.argv)} did not answer within {timeout:.0f} s")

    def post(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {}, exc.read()

    def wrk_args(self, era: str) -> list[str]:
        """The mcp.lua arguments for ``era`` (a 2025-11-25 session initialized first, once)."""
        if era == MODERN:
            return ["echo"]
        if era not in self.sessions:
            status, headers, body = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}, {})
            sid = headers.get("mcp-session-id")
            if status != 200 or not sid or b'"result"' not in body:
                raise SystemExit(f"initialize at {' '.join(self.argv)}: {status} {body[:300]!r}")
            status, _, body = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                        {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
            if status not in (200, 202):
                raise SystemExit(f"notifications/initialized at {' '.join(self.argv)}: {status} {body[:300]!r}")
            self.sessions[era] = sid
        return ["echo-session", self.sessions[era]]


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` (all its threads), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except (OSError, ValueError):
        pass
    return out


def wrk(front: Front, era: str, conns: int, seconds: int) -> dict[str, Any]:
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds:g}s", "--timeout", "5s", "-s", str(WRK_LUA), front.url,
           "--", *front.wrk_args(era)]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    m = re.search(r"^BENCHJSON (\{.*\})$", cp.stdout, re.M)
    if cp.returncode != 0 or not m:
        raise SystemExit(f"wrk failed ({cp.returncode}) at {' '.join(front.argv)}: {cp.stdout[-400:]} "
                         f"{cp.stderr[-400:]}")
    out: dict[str, Any] = json.loads(m.group(1))
    kinds = ("bad_body_or_status", "connect_errors", "read_errors", "write_errors", "timeouts")
    out["errors"] = sum(out[k] for k in kinds)
    if out["errors"]:
        print(f"wrk at {' '.join(front.argv)} ({era}): {out['errors']} errors of {out['requests']} requests "
              f"({', '.join(f'{k} {out[k]}' for k in kinds if out[k])})", file=sys.stderr, flush=True)
    if out["errors"] >= out["requests"]:
        raise SystemExit(f"wrk at {' '.join(front.argv)} ({era}): every request failed")
    return out


def measure(front: Front, backend_pid: int | None, era: str, args: argparse.Namespace) -> dict[str, float]:
    """One side in one round: latency (one connection), then throughput and CPU per call."""
    lat = wrk(front, era, 1, args.latency_seconds)
    backend = backend_pid if backend_pid is not None else next(iter(children(front.proc.pid)), None)
    cpu0, bcpu0 = cpu_ticks(front.proc.pid), cpu_ticks(backend) if backend else None
    thr = wrk(front, era, args.connections, args.seconds)
    cpu1, bcpu1 = cpu_ticks(front.proc.pid), cpu_ticks(backend) if backend else None
    calls = thr["requests"]
    out = {"latency_ms": lat["p50_us"] / 1e3, "calls_per_s": (calls - thr["errors"]) / (thr["duration_us"] / 1e6),
           "errors": lat["errors"] + thr["errors"]}
    if cpu0 is not None and cpu1 is not None and calls:
        out["cpu_us"] = (cpu1 - cpu0) / CLK_TCK * 1e6 / calls
    if bcpu0 is not None and bcpu1 is not None and calls:
        out["backend_cpu_us"] = (bcpu1 - bcpu0) / CLK_TCK * 1e6 / calls
    return out


def stdio_round_trip(calls: int) -> float:
    """The stdio backend's round trip: a 2026-07-28 ``tools/call`` line written, its answer read
    (the median of ``calls``, after a warm-up), in ms."""
    proc = subprocess.Popen([PY, str(ECHO), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env(), cwd=REPO, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        times = []
        for i in range(calls + 20):
            line = json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"text": ECHO_TEXT}, "_meta": META}}, separators=(",", ":"))
            t0 = time.perf_counter()
            proc.stdin.write(line.encode() + b"\n")
            answer = proc.stdout.readline()
            if i >= 20:
                times.append(time.perf_counter() - t0)
            if ECHO_TEXT.encode() not in answer:
                raise SystemExit(f"the stdio backend answered {answer[:300]!r}")
        return statistics.median(times) * 1000.0
    finally:
        proc.stdin.close()
        proc.wait(10)


def http_request_bytes(url: str, era: str, session: str | None) -> bytes:
    """The POST wrk's bench/wrk/mcp.lua sends for ``tools/call echo`` in ``era``."""
    from urllib.parse import urlsplit

    where = urlsplit(url)
    if era == MODERN:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": ECHO_TEXT}, "_meta": META}}, separators=(",", ":"))
        extra = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
    else:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": ECHO_TEXT}}}, separators=(",", ":"))
        extra = f"MCP-Protocol-Version: {LEGACY}\r\nMcp-Session-Id: {session}\r\n"
    return (f"POST {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
            f"{body}").encode()


def http_round_trip(front: Front, era: str, calls: int) -> float:
    """The HTTP backend's round trip as a bare Python peer makes it: the request wrk sends,
    written on one plain blocking keep-alive socket, the answer read to its Content-Length
    (the median of ``calls`` sequential calls, after a warm-up), in ms."""
    import socket
    from urllib.parse import urlsplit

    session = front.wrk_args(era)[1] if era == LEGACY else None
    request = http_request_bytes(front.url, era, session)
    where = urlsplit(front.url)
    times = []
    with socket.create_connection((where.hostname, where.port or 80)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(calls + 20):
            t0 = time.perf_counter()
            sock.sendall(request)
            buf = b""
            while b"\r\n\r\n" not in buf:
                got = sock.recv(65536)
                if not got:
                    raise SystemExit("the HTTP backend closed the connection")
                buf += got
            head, _, body = buf.partition(b"\r\n\r\n")
            m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            if not m:
                raise SystemExit(f"the HTTP backend answered without Content-Length: {head[:300]!r}")
            while len(body) < int(m.group(1)):
                got = sock.recv(65536)
                if not got:
                    raise SystemExit("the HTTP backend closed the connection mid-body")
                body += got
            if i >= 20:
                times.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200") or ECHO_TEXT.encode() not in body:
                raise SystemExit(f"the HTTP backend answered {head[:100]!r} {body[:300]!r}")
    return statistics.median(times) * 1000.0


def client_round_trip(url: str, era: str, calls: int) -> float:
    """The mcpkit Client's own sequential ``tools/call echo`` round trip to ``url`` in ``era``
    (the median of ``calls``, after a warm-up), in ms: what the client library costs."""
    import asyncio

    from mcpkit.client import Client

    async def run() -> float:
        times = []
        async with Client(url, mode="modern" if era == MODERN else "legacy") as client:
            for i in range(calls + 20):
                t0 = time.perf_counter()
                await client.call_tool("echo", {"text": ECHO_TEXT})
                if i >= 20:
                    times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000.0

    return asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=2, help="each throughput run (wrk)")
    ap.add_argument("--latency-seconds", type=int, default=1, help="each latency run (wrk, one connection)")
    ap.add_argument("--calls", type=int, default=200, help="sequential calls of a backend round trip (stdio, HTTP) and of the Client's")
    ap.add_argument("--connections", "--concurrency", type=int, default=8)
    ap.add_argument("--era", choices=(MODERN, LEGACY, "both"), default="both")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--save", action="store_true", help="write bench/results/proxy-<date>.md and .json")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    ap.add_argument("--no-fastmcp", action="store_true", help="leave FastMCP's proxy out")
    ap.add_argument("--compare-httpx", action="store_true",
                    help="http->http: also a side 'mcpkit-httpx', the proxy with MCPKIT_HTTP_TRANSPORT=httpx "
                         "(its backend client on httpx's default transport instead of the lean one)")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (the Debian package `wrk`)")
    fastmcp_py = "" if args.no_fastmcp else ensure_fastmcp(args.no_install)
    eras = [MODERN, LEGACY] if args.era == "both" else [args.era]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        back = Front([PY, str(ECHO), "http", "{port}"], procs).wait_ready()
        stdio_backend = [PY, str(ECHO), "stdio"]
        proxy = [PY, "-m", "mcpkit", "proxy", "--http", "--port", "{port}"]
        fastmcp = [fastmcp_py, str(FASTMCP_PROXY), "{port}"]
        cells: dict[str, dict[str, Front | None]] = {
            "http->http": {"direct": back, "backend": None, "client": None,  # bare-socket and Client round trips
                           "mcpkit": Front([*proxy, back.url], procs),
                           "fastmcp": Front([*fastmcp, back.url], procs) if fastmcp_py else None,
                           "floor": Front([PY, str(FLOOR_PROXY), "{port}", back.url], procs),
                           "floor-raw": Front([PY, str(FLOOR_PROXY), "--raw", "{port}", back.url], procs)},
            "stdio->http": {"direct": back, "backend": None,  # the front's transport, no proxy; the round trip
                            "mcpkit": Front([*proxy, "--", *stdio_backend], procs),
                            "fastmcp": Front([*fastmcp, "--", *stdio_backend], procs) if fastmcp_py else None},
        }
        if args.compare_httpx:
            cells["http->http"]["mcpkit-httpx"] = Front([*proxy, back.url], procs, {"MCPKIT_HTTP_TRANSPORT": "httpx"})
        for sides in cells.values():
            if not fastmcp_py:
                del sides["fastmcp"]
        for sides in cells.values():
            for front in sides.values():
                if front is not None:
                    front.wait_ready()
                    for era in eras:
                        wrk(front, era, args.connections, 1)  # warm up (connections, the proxy's backend)
        samples: dict[tuple[str, str, str], list[dict[str, float]]] = {}
        for r in range(args.rounds):
            for cell, sides in cells.items():
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for side in order:
                    front = sides[side]
                    for era in eras:
                        if front is None and cell == "http->http":
                            rt = http_round_trip(back, era, args.calls) if side == "backend" else \
                                client_round_trip(back.url, era, args.calls)
                            samples.setdefault((cell, side, era), []).append({"latency_ms": rt})
                            continue
                        if front is None:
                            if era == MODERN or len(eras) == 1:
                                samples.setdefault((cell, side, MODERN), []).append(
                                    {"latency_ms": stdio_round_trip(args.calls)})
                            continue
                        backend_pid = back.proc.pid if cell == "http->http" and side != "direct" else None
                        got = measure(front, backend_pid, era, args)
                        samples.setdefault((cell, side, era), []).append(got)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
        for proc in procs:
            proc.wait(10)
    text = report(samples, args, eras)
    print(text)
    numbers = {f"{c}/{s}/{e}": v for (c, s, e), v in samples.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1))
    if args.save:
        stem = BENCH / "results" / f"proxy-{datetime.date.today().isoformat()}"
        n = 1
        while stem.with_suffix(".md").exists():  # a second run the same day keeps the first
            n += 1
            stem = BENCH / "results" / f"proxy-{datetime.date.today().isoformat()}-{n}"
        argv: list[str] = []  # the command line, without --json's file (a path of this machine)
        for a, before in zip(sys.argv[1:], sys.argv, strict=False):
            if a != "--json" and before != "--json" and not a.startswith("--json="):
                argv.append(a)
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        stem.with_suffix(".md").write_text(
            f"# bench/proxy.py\n\n`python bench/proxy.py {' '.join(argv)}` ({os.cpu_count()} CPUs shared with other "
            f"jobs; load average at the end {load}; bench, proxies and backends on the same cores)\n\n{text}\n")
        stem.with_suffix(".json").write_text(json.dumps(numbers, indent=1) + "\n")
        print(f"wrote {stem.relative_to(REPO)}.md and .json", file=sys.stderr)
    return 0


def report(samples: dict[tuple[str, str, str], list[dict[str, float]]], args: argparse.Namespace,
           eras: list[str]) -> str:
    med = statistics.median

    def col(key: tuple[str, str, str], field: str) -> list[float]:
        return [s[field] for s in samples.get(key, []) if field in s]

    def fmt(values: list[float], spec: str) -> str:
        return format(med(values), spec) if values else "-"

    lines = [f"{args.rounds} interleaved rounds; load from wrk (bench/wrk/mcp.lua); latency: p50 of one connection's "
             f"sequential calls for {args.latency_seconds:g} s (backend, the backend round trip: median of "
             f"{args.calls} sequential calls by a bare Python peer, a line written and read for stdio, the request "
             f"wrk sends on a plain keep-alive socket for HTTP; client: the same by the mcpkit Client); throughput: {args.connections} connections for {args.seconds:g} s; CPU: "
             "utime+stime per call of the process wrk calls (front) and of its backend, over the throughput run",
             " (calls/s counts only the calls answered right; errors: wrk's failed or wrong answers, all rounds)",
             "", "| cell | side | era | latency ms | calls/s | front CPU µs/call | backend CPU µs/call | errors |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for (cell, side, era) in samples:
        key = (cell, side, era)
        lines.append(f"| {cell} | {side} | {era} | {fmt(col(key, 'latency_ms'), '.2f')} | "
                     f"{fmt(col(key, 'calls_per_s'), '.0f')} | {fmt(col(key, 'cpu_us'), '.0f')} | "
                     f"{fmt(col(key, 'backend_cpu_us'), '.0f')} | "
                     f"{int(sum(col(key, 'errors'))) if col(key, 'errors') else '-'} |")
    lines.append("")
    for era in eras:
        for cell in ("http->http", "stdio->http"):
            direct = col((cell, "direct", era), "latency_ms")
            backend = col((cell, "backend", MODERN if cell == "stdio->http" else era), "latency_ms")
            added = [m - d for m, d in zip(col((cell, "mcpkit", era), "latency_ms"), direct, strict=True)]
            budget = [b + 0.2 * d for b, d in zip(backend, direct, strict=True)]
            fast = bool(col((cell, "fastmcp", era), "latency_ms"))  # absent with --no-fastmcp
            f_added = [f - d for f, d in zip(col((cell, "fastmcp", era), "latency_ms"), direct, strict=fast)]
            ratio = [m / f for m, f in zip(col((cell, "mcpkit", era), "calls_per_s"),
                                           col((cell, "fastmcp", era), "calls_per_s"), strict=fast)]
            cpu = [f / m for m, f in zip(col((cell, "mcpkit", era), "cpu_us"), col((cell, "fastmcp", era), "cpu_us"),
                                         strict=fast)]
            client_rt = col((cell, "client", era), "latency_ms")
            floor_added = [f - d for f, d in zip(col((cell, "floor", era), "latency_ms"), direct, strict=False)]
            raw_added = [f - d for f, d in zip(col((cell, "floor-raw", era), "latency_ms"), direct, strict=False)]
            if floor_added and raw_added:
                over = [m / f for m, f in zip(added, floor_added, strict=True) if f > 0]
                lines.append(f"- {cell} ({era}): the floors add {med(floor_added):.2f} ms (a bare ASGI relay on the same "
                             f"uvicorn stack: {'within' if med(floor_added) <= med(budget) else 'over'} the budget) and "
                             f"{med(raw_added):.2f} ms (a bare asyncio relay, no HTTP server: "
                             f"{'within' if med(raw_added) <= med(budget) else 'over'} it); the mcpkit proxy adds "
                             f"{med(over):.2f}x what the ASGI floor adds ({med(added) - med(floor_added):+.2f} ms)")
            if client_rt:
                lines.append(f"- {cell} ({era}): one backend round trip (bare Python peer, plain socket) "
                             f"{med(backend):.2f} ms; a direct call (wrk) {med(direct):.2f} ms; the mcpkit Client's own "
                             f"sequential round trip to the backend {med(client_rt):.2f} ms (information)")
            httpx_added = [m - d for m, d in zip(col((cell, "mcpkit-httpx", era), "latency_ms"), direct, strict=False)]
            if httpx_added:
                lines.append(f"- {cell} ({era}): with its backend client on httpx's default transport "
                             f"(mcpkit-httpx) the proxy adds {med(httpx_added):.2f} ms per call")
            if not f_added:
                lines.append(f"- {cell} ({era}): the mcpkit proxy adds {med(added):.2f} ms per call (budget: one "
                             f"backend round trip + 20% of a direct call = {med(budget):.2f} ms; "
                             f"{'met' if med(added) <= med(budget) else 'NOT met'})")
                continue
            lines.append(
                f"- {cell} ({era}): the mcpkit proxy adds {med(added):.2f} ms per call (budget: one backend round "
                f"trip + 20% of a direct call = {med(budget):.2f} ms; {'met' if med(added) <= med(budget) else 'NOT met'}"
                f"); FastMCP's adds {med(f_added):.2f} ms; throughput {med(ratio):.2f}x FastMCP's proxy "
                f"({'met' if med(ratio) >= 3 else 'NOT met'}: target 3x); FastMCP's proxy spends "
                f"{med(cpu):.2f}x mcpkit's CPU per call")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
