"""Workload 4, HTTP: ``wrk`` load (``bench/wrk/mcp.lua``) against each side's Streamable HTTP
server, cell by cell (mode x connections), sides interleaved per round; the floor (a bare ASGI
app on mcpkit's uvicorn stack, servers/floor_asgi.py) in the same rounds, in the echo cell at
16 connections (or the largest count given)."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from _common import (
    ECHO_TEXT,
    FLOOR_ASGI,
    PROTOCOL_VERSION,
    REPO,
    SIDES,
    WRK_LUA,
    Pinning,
    Results,
    Side,
    discover_line,
    echo_line,
    free_port,
    kill,
    med,
    mib,
    proc_cpu_ns,
    proc_status,
    tail_file,
)
from _rounds import interleaved


def ensure_wrk() -> str | None:
    path = shutil.which("wrk")
    if path:
        return path
    if os.geteuid() != 0:
        print(
            "  wrk is not installed and this is not root: install the Debian package `wrk`\n"
            "  (sudo apt-get install -y wrk) to run the HTTP workload.",
            flush=True,
        )
        return None
    print("  installing wrk (apt-get install -y wrk) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    if subprocess.run(["apt-get", "install", "-y", "wrk"], **quiet).returncode != 0:
        subprocess.run(["apt-get", "update"], **quiet)
        subprocess.run(["apt-get", "install", "-y", "wrk"], **quiet)
    return shutil.which("wrk")


class HttpServer:
    def __init__(self, side: Side, pin: Pinning):
        self.side = side
        self.port = free_port()
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            pin.taskset("server") + side.server_argv("http", str(self.port)),
            stdin=subprocess.DEVNULL,
            stdout=self.stderr,
            stderr=self.stderr,
            env=side.env,
            cwd=str(REPO),
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def post(self, method: str, body: bytes, timeout: float = 5) -> tuple[int, bytes]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": method,
        }
        if method == "tools/call":
            headers["Mcp-Name"] = "echo"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("POST", "/mcp", body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                status, body = self.post("server/discover", discover_line(1))
            except OSError as exc:
                last = str(exc)
                time.sleep(0.05)
                continue
            if status != 200 or b'"result"' not in body:
                raise RuntimeError(f"server/discover over HTTP: {status} {body[:300]!r}")
            status, body = self.post("tools/call", echo_line(2))
            if status != 200 or ECHO_TEXT.encode() not in body:
                raise RuntimeError(f"tools/call over HTTP: {status} {body[:300]!r}")
            return
        raise RuntimeError(f"not ready within {timeout:.0f} s ({last})")

    def stop(self) -> None:
        kill(self.proc, grace=5, sig=signal.SIGINT)

    def diag(self) -> str:
        t = tail_file(self.stderr)
        return f"\nserver output:\n{t}" if t else ""


def run_wrk(srv: HttpServer, pin: Pinning, mode: str, conns: int, duration: float) -> dict:
    cmd = pin.taskset("client") + [
        "wrk", "-t1", f"-c{conns}", f"-d{duration:g}s", "--timeout", "5s", "-s", str(WRK_LUA), srv.url, "--", mode,
    ]
    cpu0 = proc_cpu_ns(srv.proc.pid)
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    cpu1 = proc_cpu_ns(srv.proc.pid)
    m = re.search(r"^BENCHJSON (\{.*\})$", cp.stdout, re.M)
    if cp.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({cp.returncode}): {cp.stdout[-400:]} {cp.stderr[-400:]}")
    out = json.loads(m.group(1))
    out["cpu_s"] = (cpu1 - cpu0) / 1e9 if cpu0 is not None and cpu1 is not None else None
    out["errors"] = (
        out["bad_body_or_status"] + out["connect_errors"] + out["read_errors"] + out["write_errors"] + out["timeouts"]
    )
    return out


def wl_http(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, duration: float, conc: list[int], modes: list[str], warmup: float) -> None:
    print(f"== HTTP (wrk): {modes} x c={conc}, {duration:g} s each, {rounds} rounds", flush=True)
    if not WRK_LUA.exists():
        res.error("both", "http", f"missing {WRK_LUA}")
        return
    if not ensure_wrk():
        for n in res.active:
            res.error(n, "http", "wrk is not available; HTTP workload skipped")
        return
    servers: dict[str, HttpServer] = {}
    cells: dict[tuple[str, str, int], list[dict]] = {}
    floor_cell = ("echo", 16 if 16 in conc else max(conc))
    try:
        for name in res.active:
            side = sides[name]
            if name == "floor":
                side = Side("floor", side.python, side.env, side.imports, side.build_code, script=str(FLOOR_ASGI))
            servers[name] = HttpServer(side, pin)
        for name in list(servers):
            try:
                servers[name].wait_ready()
            except Exception as exc:
                res.error(name, "http", f"{type(exc).__name__}: {exc}{servers[name].diag()}")
                servers.pop(name).stop()
        if warmup > 0:
            for name, srv in servers.items():
                try:
                    run_wrk(srv, pin, "echo", 16, warmup)
                except Exception as exc:
                    res.error(name, "http", f"warm-up: {exc}{srv.diag()}")
        for r, (mode, c), name in interleaved(rounds, servers.__contains__, [(m, c) for m in modes for c in conc]):
            if name == "floor" and (mode, c) != floor_cell:
                continue
            srv = servers[name]
            try:
                out = run_wrk(srv, pin, mode, c, duration)
            except Exception as exc:
                res.error(name, "http", f"{mode} c={c}: {exc}{srv.diag()}")
                continue
            cells.setdefault((name, mode, c), []).append(out)
            res.sample(f"http.{mode}.{c}.rps", name, r, out["requests"] / (out["duration_us"] / 1e6))
            if out["cpu_s"] is not None and out["requests"]:
                res.sample(f"http.{mode}.{c}.cpu", name, r, out["cpu_s"] * 1e6 / out["requests"])
            if srv.proc.poll() is not None:
                res.error(name, "http", f"server died during {mode} c={c}{srv.diag()}")
                servers.pop(name)
            print(
                f"  r{r + 1} {mode:8} c={c:<3} {name:8} {out['requests'] / (out['duration_us'] / 1e6):9.0f} req/s"
                f"  p50 {out['p50_us'] / 1e3:7.2f} ms  p99 {out['p99_us'] / 1e3:7.2f} ms  err {out['errors']}",
                flush=True,
            )
        total = {n: sum(o["requests"] for (s, _, _), outs in cells.items() if s == n for o in outs) for n in servers}
        rss_after = {n: proc_status(srv.proc.pid).get("VmRSS") for n, srv in servers.items()}
    finally:
        for srv in servers.values():
            srv.stop()

    res.raw["http"] = {f"{n}/{m}/c{c}": outs for (n, m, c), outs in cells.items()}

    def agg(name, mode, c):
        outs = cells.get((name, mode, c))
        if not outs:
            return None
        reqs = sum(o["requests"] for o in outs)
        dur = sum(o["duration_us"] for o in outs) / 1e6
        cpu = [o["cpu_s"] for o in outs if o["cpu_s"] is not None]
        return {
            "rps": reqs / dur if dur else None,
            "p50": med([o["p50_us"] / 1e3 for o in outs]),
            "p99": med([o["p99_us"] / 1e3 for o in outs]),
            "errors": sum(o["errors"] for o in outs),
            "checked": sum(o["checked"] for o in outs),
            "cpu_us": (sum(cpu) * 1e6 / reqs) if cpu and reqs else None,
        }

    label = {"echo": "echo tools/call", "discover": "server/discover"}
    for mode in modes:
        for c in conc:
            a = {n: agg(n, mode, c) for n in SIDES}
            g = lambda k: {n: (a[n] or {}).get(k) for n in SIDES}
            wl = f"HTTP {label[mode]} c={c}"
            res.row_rounds(wl, "throughput (median of rounds)", "req/s", "higher", f"http.{mode}.{c}.rps")
            res.row(wl, "latency p50", "ms", "lower", g("p50"))
            res.row(wl, "latency p99", "ms", "lower", g("p99"))
            res.row(wl, "errors (non-200 / no result / socket)", "count", "lower", g("errors"))
            res.row_rounds(wl, "server CPU per request", "µs", "lower", f"http.{mode}.{c}.cpu")
    res.row("RSS", "HTTP server after all HTTP runs", "MiB", "lower", {n: mib(rss_after.get(n)) for n in SIDES})
    res.notes.append("HTTP requests served per server: " + ", ".join(f"{n} {v}" for n, v in total.items()))
