#!/usr/bin/env python3
"""Benchmark mcpkit side by side with the official MCP Python SDK (mcp==2.3.0).

Run with the project's interpreter (the one that can import mcpkit):

    python bench/run.py            # full run, writes bench/results/latest.{md,json}
    python bench/run.py --smoke    # <= 30 s: checks every workload still runs

The official SDK is installed on first use into bench/.venv-official (from
PyPI, ``mcp==2.3.0``). Both libraries serve the same echo tool through
bench/servers/echo_{mcpkit,official}.py; every workload alternates
mcpkit/official round by round. Only 127.0.0.1 is used and every load phase
has a fixed duration or request count.

Stdlib only. Linux only (/proc, sched_setaffinity, pidfd).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import http.client
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SERVERS = BENCH / "servers"
WRK_LUA = BENCH / "wrk" / "mcp.lua"
OFFICIAL_VENV = BENCH / ".venv-official"
OFFICIAL_SPEC = "mcp==2.3.0"
OFFICIAL_VERSION = "2.3.0"

PROTOCOL_VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
ECHO_TEXT = "bench-echo-payload"
MIB = 1024 * 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")
MARKER = "@@bench-import-marker@@"

SIDES = ("mcpkit", "official")


def discover_line(req_id: int = 1) -> bytes:
    msg = {"jsonrpc": "2.0", "id": req_id, "method": "server/discover", "params": {"_meta": META}}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def echo_line(req_id: int, text: str = ECHO_TEXT) -> bytes:
    msg = {
        "jsonrpc": "2.0",
        "id": req_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": META},
    }
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


# --------------------------------------------------------------------------- sides


class Side:
    """One library under test: its interpreter, environment and server script."""

    def __init__(self, name: str, python: str, env: dict[str, str], imports: tuple[str, str], build_code: str):
        self.name = name
        self.python = python
        self.env = env
        # (package import, server-entry import) for -X importtime
        self.imports = imports
        self.build_code = build_code
        self.script = str(SERVERS / f"echo_{name}.py")

    def server_argv(self, *args: str) -> list[str]:
        return [self.python, self.script, *args]


def make_sides(official_python: str) -> dict[str, Side]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    mk_env = dict(base)
    # mcpkit runs from the repo checkout: make it importable without installing.
    mk_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    mcpkit = Side(
        "mcpkit",
        sys.executable,
        mk_env,
        ("import mcpkit", "from mcpkit import Server"),
        "from mcpkit import Server\n"
        "server = Server('echo', '1.0.0')\n"
        "@server.tool()\n"
        "async def echo(text: str) -> str:\n"
        "    '''Echo the text back.'''\n"
        "    return text\n",
    )
    official = Side(
        "official",
        official_python,
        dict(base),
        ("import mcp", "from mcp.server.mcpserver import MCPServer"),
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('echo', version='1.0.0', log_level='WARNING')\n"
        "@server.tool()\n"
        "async def echo(text: str) -> str:\n"
        "    '''Echo the text back.'''\n"
        "    return text\n",
    )
    return {"mcpkit": mcpkit, "official": official}


# --------------------------------------------------------------------------- helpers


class Pinning:
    """Client (this process, wrk) on one core, servers on another, when possible."""

    def __init__(self, enabled: bool):
        cores = sorted(os.sched_getaffinity(0))
        self.enabled = enabled and len(cores) >= 2
        self.client_core = cores[0]
        self.server_core = cores[1] if len(cores) >= 2 else cores[0]

    def pin_self(self) -> None:
        if self.enabled:
            os.sched_setaffinity(0, {self.client_core})

    @contextlib.contextmanager
    def on_server_core(self):
        """Spawn children on the server core: they inherit this process's affinity.

        (Cheaper than a preexec_fn, which forces fork() instead of vfork().)
        """
        if self.enabled:
            os.sched_setaffinity(0, {self.server_core})
        try:
            yield
        finally:
            if self.enabled:
                os.sched_setaffinity(0, {self.client_core})

    def taskset(self, role: str) -> list[str]:
        if not self.enabled or not shutil.which("taskset"):
            return []
        core = self.client_core if role == "client" else self.server_core
        return ["taskset", "-c", str(core)]


class LineReader:
    """Read newline-terminated lines from a pipe fd with a timeout."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def readline(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response line within {timeout:.0f} s")
            r, _, _ = select.select([self.fd], [], [], remaining)
            if not r:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise EOFError("server closed stdout" + (f" (partial: {bytes(self.buf)[:200]!r})" if self.buf else ""))
            self.buf += chunk


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM in bytes from /proc/PID/status."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, val = line.split(":", 1)
                    out[key] = int(val.split()[0]) * 1024
    except OSError:
        pass
    return out


def proc_cpu_ticks(pid: int) -> int | None:
    """utime + stime (clock ticks) from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime/stime are fields 14/15.
    return int(fields[11]) + int(fields[12])


def wait_exit(proc: subprocess.Popen, timeout: float) -> float | None:
    """Seconds until `proc` exits (precise via pidfd); kills it and returns None on timeout."""
    t0 = time.perf_counter()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    try:
        if fd is not None:
            r, _, _ = select.select([fd], [], [], timeout)
            elapsed = time.perf_counter() - t0
            if r:
                proc.wait()
                return elapsed
        else:
            deadline = t0 + timeout
            while time.perf_counter() < deadline:
                if proc.poll() is not None:
                    return time.perf_counter() - t0
                time.sleep(0.0002)
    finally:
        if fd is not None:
            os.close(fd)
    kill(proc)
    return None


def kill(proc: subprocess.Popen, grace: float = 0.0, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=grace or 3)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


def tail_file(f, n: int = 800) -> str:
    try:
        f.flush()
        f.seek(0)
        data = f.read().decode(errors="replace")
    except (OSError, ValueError):
        return ""
    return data[-n:].strip()


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def round_order(r: int) -> tuple[str, ...]:
    """Alternate who goes first each round."""
    return SIDES if r % 2 == 0 else SIDES[::-1]


# --------------------------------------------------------------------------- results


class Results:
    def __init__(self, sides: list[str]):
        self.active = list(sides)
        self.rows: list[dict] = []
        self.errors: list[str] = []
        self.raw: dict[str, dict] = {}
        self.notes: list[str] = []

    def error(self, side: str, workload: str, msg: str) -> None:
        text = f"[{workload}] {side}: {msg}"
        self.errors.append(text)
        print("  ERROR " + text.replace("\n", "\n        "), flush=True)

    def row(self, workload: str, metric: str, unit: str, better: str, values: dict[str, float | None]) -> None:
        self.rows.append({"workload": workload, "metric": metric, "unit": unit, "better": better, **{s: values.get(s) for s in SIDES}})

    def get(self, workload: str, metric: str, side: str):
        for r in self.rows:
            if r["workload"] == workload and r["metric"] == metric:
                return r.get(side)
        return None


# --------------------------------------------------------------------------- setup


def ensure_official_venv(no_install: bool) -> str:
    py = OFFICIAL_VENV / "bin" / "python"

    def version() -> str | None:
        if not py.exists():
            return None
        r = subprocess.run(
            [str(py), "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
            capture_output=True,
            text=True,
        )
        return r.stdout.strip() if r.returncode == 0 else None

    if version() == OFFICIAL_VERSION:
        return str(py)
    if no_install:
        raise SystemExit(f"{OFFICIAL_VENV.relative_to(REPO)} lacks {OFFICIAL_SPEC} and --no-install was given")
    print(f"installing {OFFICIAL_SPEC} into {OFFICIAL_VENV.relative_to(REPO)} ...", flush=True)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(OFFICIAL_VENV)], check=True)
    subprocess.run(
        [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", OFFICIAL_SPEC],
        check=True,
    )
    if version() != OFFICIAL_VERSION:
        raise SystemExit(f"could not install {OFFICIAL_SPEC} into {OFFICIAL_VENV}")
    return str(py)


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


def machine_info(sides: dict[str, Side]) -> dict:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "official_sdk": OFFICIAL_SPEC,
    }
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        if rev.returncode == 0:
            info["mcpkit_commit"] = rev.stdout.strip()
    except OSError:
        pass
    for name, side in sides.items():
        r = subprocess.run([side.python, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True)
        info[f"python_{name}"] = r.stdout.strip()
    if shutil.which("wrk"):
        r = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
        info["wrk"] = (r.stdout or r.stderr).splitlines()[0].split("Copyright")[0].strip() if (r.stdout or r.stderr) else "?"
    return info


# --------------------------------------------------------------------------- workload 1: import


def run_timed(cmd: list[str], side: Side, pin: Pinning, timeout: float = 60) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    with pin.on_server_core():
        proc = subprocess.Popen(cmd, env=side.env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise
    t1 = time.perf_counter()
    return t1 - t0, subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def parse_importtime(stderr: str) -> float:
    """Sum of cumulative µs of the top-level imports after the marker."""
    total = 0
    seen_marker = False
    for line in stderr.splitlines():
        if MARKER in line:
            seen_marker = True
            continue
        if not seen_marker or not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        name = parts[2][1:] if parts[2].startswith(" ") else parts[2]
        if not name.startswith(" "):
            total += int(parts[1])
    if not seen_marker:
        raise ValueError("import marker not found in -X importtime output")
    return total


def wl_import(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, warmup: bool = True) -> None:
    print(f"== import: {rounds} rounds", flush=True)
    timing_code = "import time as _t\n_t0 = _t.perf_counter()\n{code}print(_t.perf_counter() - _t0)\n"
    it_code = f"import sys; sys.stderr.write('{MARKER}\\n'); sys.stderr.flush(); {{stmt}}"
    samples = {s: {"bare": [], "asyncio": [], "wiretypes": [], "wall": [], "inproc": [], "importtime_pkg": [], "importtime_entry": []} for s in res.active}
    # Each library's wire-type dependency alone: the floor of its import cost.
    wire_lib = {"mcpkit": "import msgspec", "official": "import pydantic"}
    ok = {}
    for name in res.active:  # warm-up: byte-compile and fill the page cache
        side = sides[name]
        if not warmup:
            ok[name] = True
            continue
        _, cp = run_timed([side.python, "-c", timing_code.format(code=side.build_code)], side, pin)
        ok[name] = cp.returncode == 0
        if not ok[name]:
            res.error(name, "import", f"building a one-tool server failed:\n{cp.stderr.strip()[-800:]}")
    for r in range(rounds):
        for name in round_order(r):
            if not ok.get(name):
                continue
            side = sides[name]
            s = samples[name]
            t, _ = run_timed([side.python, "-c", "pass"], side, pin)
            s["bare"].append(t)
            t, _ = run_timed([side.python, "-c", "import asyncio"], side, pin)
            s["asyncio"].append(t)
            t, _ = run_timed([side.python, "-c", wire_lib.get(name, "pass")], side, pin)
            s["wiretypes"].append(t)
            t, cp = run_timed([side.python, "-c", timing_code.format(code=side.build_code)], side, pin)
            if cp.returncode != 0:
                res.error(name, "import", cp.stderr.strip()[-800:])
                ok[name] = False
                continue
            s["wall"].append(t)
            s["inproc"].append(float(cp.stdout.strip().splitlines()[-1]))
            for key, stmt in zip(("importtime_pkg", "importtime_entry"), side.imports):
                _, cp = run_timed([side.python, "-X", "importtime", "-c", it_code.format(stmt=stmt)], side, pin)
                try:
                    if cp.returncode != 0:
                        raise ValueError(f"`{stmt}` failed")
                    s[key].append(parse_importtime(cp.stderr) / 1e6)
                except ValueError as exc:
                    res.error(name, "import", f"{exc}: {cp.stderr[-400:]}")
    res.raw["import"] = samples

    def m(name, key):
        return med(samples[name][key]) if name in samples else None

    res.row("import", "bare `python -c pass` (floor)", "ms", "lower", {n: ms(m(n, "bare")) for n in SIDES})
    res.row("import", "-X importtime cumulative: `import mcpkit` / `import mcp`", "ms", "lower", {n: ms(m(n, "importtime_pkg")) for n in SIDES})
    res.row("import", "-X importtime cumulative: `from mcpkit import Server` / `from mcp.server.mcpserver import MCPServer`", "ms", "lower", {n: ms(m(n, "importtime_entry")) for n in SIDES})
    res.row("import", "import + one-tool server, in-process", "ms", "lower", {n: ms(m(n, "inproc")) for n in SIDES})
    res.row("import", "import + one-tool server, process wall", "ms", "lower", {n: ms(m(n, "wall")) for n in SIDES})
    above = {}
    for n in SIDES:
        w, b = m(n, "wall"), m(n, "bare")
        above[n] = ms(w - b) if w is not None and b is not None else None
    res.row("import", "import + one-tool server, wall above bare python", "ms", "lower", above)
    ref = {}
    for n in SIDES:
        w, b = m(n, "asyncio"), m(n, "bare")
        ref[n] = ms(w - b) if w is not None and b is not None else None
    res.row("import", "reference: `import asyncio` alone, wall above bare python", "ms", "lower", ref)
    wref = {}
    for n in SIDES:
        w, b = m(n, "wiretypes"), m(n, "bare")
        wref[n] = ms(w - b) if w is not None and b is not None else None
    res.row("import", "reference: wire-type library alone (`msgspec` / `pydantic`), wall above bare python", "ms", "lower", wref)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


# --------------------------------------------------------------------------- stdio helpers


class StdioServer:
    def __init__(self, side: Side, pin: Pinning):
        self.side = side
        self.stderr = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter()
        with pin.on_server_core():
            self.proc = subprocess.Popen(
                side.server_argv("stdio"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=side.env,
                cwd=str(REPO),
                bufsize=0,
            )
        self.wfd = self.proc.stdin.fileno()
        self.reader = LineReader(self.proc.stdout.fileno())

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]

    def recv(self, timeout: float = 30) -> dict:
        return json.loads(self.reader.readline(timeout))

    def discover(self, timeout: float = 60) -> dict:
        self.send(discover_line(1))
        resp = self.recv(timeout)
        if resp.get("id") != 1 or "result" not in resp:
            raise RuntimeError(f"server/discover did not return a result: {json.dumps(resp)[:300]}")
        return resp

    def close_stdin_and_wait(self, timeout: float = 10) -> float | None:
        self.proc.stdin.close()
        return wait_exit(self.proc, timeout)

    def cleanup(self) -> None:
        kill(self.proc)
        for f in (self.proc.stdout, self.proc.stdin):
            try:
                f.close()
            except Exception:
                pass

    def diag(self) -> str:
        t = tail_file(self.stderr)
        return f"\nserver stderr:\n{t}" if t else ""


def check_echo(resp: dict, req_id: int, text: str = ECHO_TEXT) -> str | None:
    if resp.get("id") != req_id:
        return f"id {resp.get('id')!r} != {req_id}"
    result = resp.get("result")
    if not isinstance(result, dict):
        return f"no result: {json.dumps(resp)[:300]}"
    if result.get("isError"):
        return f"isError: {json.dumps(result)[:300]}"
    content = result.get("content") or []
    if not content or content[0].get("type") != "text" or content[0].get("text") != text:
        return f"unexpected content: {json.dumps(content)[:300]}"
    return None


# --------------------------------------------------------------------------- workload 2: stdio cold


def wl_cold(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int) -> None:
    print(f"== stdio cold server/discover: {rounds} rounds", flush=True)
    samples = {s: {"discover": [], "peak_rss": [], "rss_after_discover": [], "exit": [], "exit_code": []} for s in res.active}
    ok = {n: True for n in res.active}
    for r in range(rounds):
        for name in round_order(r):
            if not ok.get(name):
                continue
            srv = StdioServer(sides[name], pin)
            try:
                srv.send(discover_line(1))
                resp = srv.recv(60)
                t_resp = time.perf_counter()
                if resp.get("id") != 1 or "result" not in resp:
                    raise RuntimeError(f"server/discover did not return a result: {json.dumps(resp)[:300]}")
                st = proc_status(srv.proc.pid)
                exit_s = srv.close_stdin_and_wait(10)
                if exit_s is None:
                    raise RuntimeError("did not exit within 10 s of stdin EOF")
                s = samples[name]
                s["discover"].append(t_resp - srv.t_spawn)
                s["peak_rss"].append(st.get("VmHWM", 0))
                s["rss_after_discover"].append(st.get("VmRSS", 0))
                s["exit"].append(exit_s)
                s["exit_code"].append(srv.proc.returncode)
            except Exception as exc:  # noqa: BLE001 - keep the other side running
                ok[name] = False
                res.error(name, "stdio-cold", f"{type(exc).__name__}: {exc}{srv.diag()}")
            finally:
                srv.cleanup()
    res.raw["stdio_cold"] = samples
    for n in res.active:
        codes = set(samples[n]["exit_code"])
        if codes - {0}:
            res.notes.append(f"{n}: stdio server exit codes after stdin EOF: {sorted(codes)}")

    def m(name, key):
        return med(samples[name][key]) if name in samples else None

    res.row("stdio cold", "spawn → server/discover response (median)", "ms", "lower", {n: ms(m(n, "discover")) for n in SIDES})
    res.row("stdio cold", "peak RSS of server (VmHWM after discover)", "MiB", "lower", {n: mib(m(n, "peak_rss")) for n in SIDES})
    res.row("stdio cold", "exit after stdin EOF (median)", "ms", "lower", {n: ms(m(n, "exit")) for n in SIDES})


def mib(b: float | None) -> float | None:
    return None if b is None else b / MIB


# --------------------------------------------------------------------------- workload 3: stdio warm


def wl_warm(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, calls: int) -> None:
    print(f"== stdio warm tools/call: {rounds} rounds x {calls} sequential calls", flush=True)
    samples = {s: {"rps": [], "lat": []} for s in res.active}
    ok = {n: True for n in res.active}
    requests = [echo_line(i) for i in range(2, calls + 2)]
    warmup = [echo_line(10_000_000 + i) for i in range(50)]
    for r in range(rounds):
        for name in round_order(r):
            if not ok.get(name):
                continue
            srv = StdioServer(sides[name], pin)
            try:
                srv.discover()
                for i, line in enumerate(warmup):
                    srv.send(line)
                    err = check_echo(srv.recv(), 10_000_000 + i)
                    if err:
                        raise RuntimeError(f"warm-up call {i}: {err}")
                lat = []
                send, readline, loads, now = srv.send, srv.reader.readline, json.loads, time.perf_counter
                t_start = now()
                for i, line in enumerate(requests):
                    t0 = now()
                    send(line)
                    resp = loads(readline(30))
                    lat.append(now() - t0)
                    err = check_echo(resp, i + 2)
                    if err:
                        raise RuntimeError(f"call {i}: {err}")
                elapsed = now() - t_start
                samples[name]["rps"].append(calls / elapsed)
                samples[name]["lat"].extend(lat)
                srv.close_stdin_and_wait(10)
            except Exception as exc:  # noqa: BLE001
                ok[name] = False
                res.error(name, "stdio-warm", f"{type(exc).__name__}: {exc}{srv.diag()}")
            finally:
                srv.cleanup()
    res.raw["stdio_warm"] = {
        n: {"rps": v["rps"], "p50_ms": ms(pct(v["lat"], 50)) if v["lat"] else None, "p99_ms": ms(pct(v["lat"], 99)) if v["lat"] else None}
        for n, v in samples.items()
    }

    def lat(n, p):
        return ms(pct(samples[n]["lat"], p)) if n in samples and samples[n]["lat"] else None

    res.row("stdio warm", f"echo tools/call, {calls} sequential (median of rounds)", "req/s", "higher", {n: med(samples[n]["rps"]) if n in samples else None for n in SIDES})
    res.row("stdio warm", "echo latency p50", "ms", "lower", {n: lat(n, 50) for n in SIDES})
    res.row("stdio warm", "echo latency p99", "ms", "lower", {n: lat(n, 99) for n in SIDES})


# --------------------------------------------------------------------------- workload 5: RSS


def wl_rss(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, n_requests: int, window: int = 16) -> None:
    print(f"== RSS: idle after discover, then after {n_requests} echo calls (window {window}), {rounds} rounds", flush=True)
    samples = {s: {"idle": [], "after": [], "hwm": []} for s in res.active}
    ok = {n: True for n in res.active}
    for r in range(rounds):
        for name in round_order(r):
            if not ok.get(name):
                continue
            srv = StdioServer(sides[name], pin)
            try:
                srv.discover()
                time.sleep(0.3)  # let start-up work settle
                idle = proc_status(srv.proc.pid).get("VmRSS", 0)
                sent = done = 0
                pending = set()
                while done < n_requests:
                    while sent < n_requests and len(pending) < window:
                        srv.send(echo_line(sent + 2))
                        pending.add(sent + 2)
                        sent += 1
                    resp = srv.recv(30)
                    rid = resp.get("id")
                    if rid not in pending:
                        raise RuntimeError(f"unexpected response id {rid!r}")
                    pending.discard(rid)
                    err = check_echo(resp, rid)
                    if err:
                        raise RuntimeError(err)
                    done += 1
                time.sleep(0.3)
                st = proc_status(srv.proc.pid)
                samples[name]["idle"].append(idle)
                samples[name]["after"].append(st.get("VmRSS", 0))
                samples[name]["hwm"].append(st.get("VmHWM", 0))
                srv.close_stdin_and_wait(10)
            except Exception as exc:  # noqa: BLE001
                ok[name] = False
                res.error(name, "rss", f"{type(exc).__name__}: {exc}{srv.diag()}")
            finally:
                srv.cleanup()
    res.raw["rss"] = samples

    def m(n, k):
        return mib(med(samples[n][k])) if n in samples and samples[n][k] else None

    res.row("RSS", "stdio server idle, after discover", "MiB", "lower", {n: m(n, "idle") for n in SIDES})
    res.row("RSS", f"stdio server after {n_requests:,} echo calls", "MiB", "lower", {n: m(n, "after") for n in SIDES})


# --------------------------------------------------------------------------- workload 4: HTTP


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
    cpu0 = proc_cpu_ticks(srv.proc.pid)
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    cpu1 = proc_cpu_ticks(srv.proc.pid)
    m = re.search(r"^BENCHJSON (\{.*\})$", cp.stdout, re.M)
    if cp.returncode != 0 or not m:
        raise RuntimeError(f"wrk failed ({cp.returncode}): {cp.stdout[-400:]} {cp.stderr[-400:]}")
    out = json.loads(m.group(1))
    out["cpu_s"] = (cpu1 - cpu0) / CLK_TCK if cpu0 is not None and cpu1 is not None else None
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
    try:
        for name in res.active:
            servers[name] = HttpServer(sides[name], pin)
        for name in list(servers):
            try:
                servers[name].wait_ready()
            except Exception as exc:  # noqa: BLE001
                res.error(name, "http", f"{type(exc).__name__}: {exc}{servers[name].diag()}")
                servers.pop(name).stop()
        if warmup > 0:
            for name, srv in servers.items():
                try:
                    run_wrk(srv, pin, "echo", 16, warmup)
                except Exception as exc:  # noqa: BLE001
                    res.error(name, "http", f"warm-up: {exc}{srv.diag()}")
        for r in range(rounds):
            for mode in modes:
                for c in conc:
                    for name in round_order(r):
                        srv = servers.get(name)
                        if srv is None:
                            continue
                        try:
                            out = run_wrk(srv, pin, mode, c, duration)
                        except Exception as exc:  # noqa: BLE001
                            res.error(name, "http", f"{mode} c={c}: {exc}{srv.diag()}")
                            continue
                        cells.setdefault((name, mode, c), []).append(out)
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
    floor = http_floor(pin, duration, "mcpkit" in sides and sides["mcpkit"] or None) if "mcpkit" in res.active else None

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
            g = lambda k: {n: (a[n] or {}).get(k) for n in SIDES}  # noqa: E731
            wl = f"HTTP {label[mode]} c={c}"
            res.row(wl, "throughput", "req/s", "higher", g("rps"))
            res.row(wl, "latency p50", "ms", "lower", g("p50"))
            res.row(wl, "latency p99", "ms", "lower", g("p99"))
            res.row(wl, "errors (non-200 / no result / socket)", "count", "lower", g("errors"))
            res.row(wl, "server CPU per request", "µs", "lower", g("cpu_us"))
    if floor is not None:
        res.row("HTTP floor", "bare uvicorn ASGI app (same stack as mcpkit), fixed answer, c=16: server CPU per request",
                "µs", "lower", {"mcpkit": floor})
    res.row("RSS", "HTTP server after all HTTP runs", "MiB", "lower", {n: mib(rss_after.get(n)) for n in SIDES})
    res.notes.append("HTTP requests served per server: " + ", ".join(f"{n} {v}" for n, v in total.items()))


def http_floor(pin: Pinning, duration: float, side: "Side | None") -> float | None:
    """CPU per request of a bare ASGI app on mcpkit's uvicorn stack: the floor under any MCP server."""
    if side is None:
        return None
    floor_side = Side.__new__(Side)
    floor_side.__dict__.update(side.__dict__)
    floor_side.script = str(REPO / "bench" / "servers" / "floor_asgi.py")
    srv = HttpServer(floor_side, pin)
    try:
        srv.wait_ready()
        run_wrk(srv, pin, "echo", 16, min(duration, 2.0))  # warm-up
        out = run_wrk(srv, pin, "echo", 16, duration)
        return out["cpu_s"] * 1e6 / out["requests"] if out.get("cpu_s") and out["requests"] else None
    except Exception as exc:  # noqa: BLE001
        print(f"  floor measurement failed: {exc}{srv.diag()}", flush=True)
        return None
    finally:
        srv.stop()


# --------------------------------------------------------------------------- report


def fmt(v, unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "count":
        return f"{int(v)}"
    if unit == "req/s":
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ratio_cells(row) -> tuple[str, str]:
    a, b = row["mcpkit"], row["official"]
    if a is None or b is None or row["unit"] == "count":
        return "", ""
    r = f"{a / b:.3g}" if b else "∞"
    if row["better"] == "higher":
        adv = a / b if b else None
    else:
        adv = b / a if a else None
    return r, (f"{adv:.3g}×" if adv is not None else "")


def budgets(res: Results, c16: int, c64: int) -> list[tuple[str, str, str]]:
    http_c16, http_c64 = f"HTTP echo tools/call c={c16}", f"HTTP echo tools/call c={c64}"
    out = []

    def add(label, value, ok, shown):
        out.append((label, shown if value is not None else "n/a", "n/a" if value is None else ("PASS" if ok else "MISS")))

    v = res.get("import", "import + one-tool server, wall above bare python", "mcpkit")
    add("import + one-tool server ≤ 50 ms wall above bare python", v, v is not None and v <= 50, f"{fmt(v, 'ms')} ms")
    v = res.get("stdio cold", "spawn → server/discover response (median)", "mcpkit")
    add("stdio cold discover ≤ 50 ms", v, v is not None and v <= 50, f"{fmt(v, 'ms')} ms")
    a = res.get("stdio warm", next((r["metric"] for r in res.rows if r["workload"] == "stdio warm" and r["unit"] == "req/s"), ""), "mcpkit")
    b = res.get("stdio warm", next((r["metric"] for r in res.rows if r["workload"] == "stdio warm" and r["unit"] == "req/s"), ""), "official")
    v = a / b if a and b else None
    add("stdio warm echo ≥ 5× official req/s", v, v is not None and v >= 5, f"{v:.2f}×" if v else "")
    a, b = res.get(http_c16, "throughput", "mcpkit"), res.get(http_c16, "throughput", "official")
    v = a / b if a and b else None
    add(f"HTTP echo c={c16} ≥ 8× official req/s", v, v is not None and v >= 8, f"{v:.2f}×" if v else "")
    v = res.get(http_c16, "server CPU per request", "mcpkit")
    add(f"server CPU per HTTP call (echo, c={c16}) ≤ 100 µs", v, v is not None and v <= 100, f"{fmt(v, 'µs')} µs")
    a, b = res.get(http_c64, "latency p99", "mcpkit"), res.get(http_c64, "latency p99", "official")
    v = a / b if a and b else None
    add(f"HTTP echo p99 at c={c64} ≤ 1/5 official", v, v is not None and v <= 0.2, f"{v:.3f}× official ({fmt(a, 'ms')} vs {fmt(b, 'ms')} ms)" if v else "")
    v = res.get("RSS", "stdio server idle, after discover", "mcpkit")
    add("RSS idle (stdio) ≤ 25 MiB", v, v is not None and v <= 25, f"{fmt(v, 'MiB')} MiB")
    v = res.get("stdio cold", "exit after stdin EOF (median)", "mcpkit")
    add("exit after stdin EOF ≤ 20 ms", v, v is not None and v <= 20, f"{fmt(v, 'ms')} ms")
    return out


def render(res: Results, info: dict, params: dict, budget_rows) -> str:
    lines = [
        f"## mcpkit vs official MCP Python SDK ({OFFICIAL_SPEC})",
        "",
        f"- date: {info['date']}" + (f"; mcpkit commit {info['mcpkit_commit']}" if info.get("mcpkit_commit") else ""),
        f"- machine: {info['nproc']} CPUs, {info['cpu']}, Linux {info['kernel']}",
        f"- python: mcpkit {info.get('python_mcpkit', '?')}, official {info.get('python_official', '?')}"
        + (f"; {info['wrk']}" if info.get("wrk") else ""),
        "- parameters: " + ", ".join(f"{k}={v}" for k, v in params.items()),
        "- ratio = mcpkit ÷ official; advantage = how many times better mcpkit is (>1 = mcpkit better)",
        "",
        "| workload | metric | unit | mcpkit | official | ratio | advantage |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in res.rows:
        r, adv = ratio_cells(row)
        lines.append(
            f"| {row['workload']} | {row['metric']} | {row['unit']} | {fmt(row['mcpkit'], row['unit'])} | "
            f"{fmt(row['official'], row['unit'])} | {r} | {adv} |"
        )
    lines += ["", "### Budgets (mcpkit)", "", "| budget | measured | verdict |", "| --- | --- | --- |"]
    for label, shown, verdict in budget_rows:
        lines.append(f"| {label} | {shown} | {verdict} |")
    if res.notes or res.errors:
        lines += ["", "### Notes", ""]
        lines += [f"- {n}" for n in res.notes]
        lines += [f"- ERROR {e.splitlines()[0]}" for e in res.errors]
    return "\n".join(lines) + "\n"


def update_readme(table: str) -> None:
    readme = BENCH / "README.md"
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    text = readme.read_text()
    if start not in text or end not in text:
        print("README.md has no results markers; not updated")
        return
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    table = re.sub(r"^(#+) ", r"#\1 ", table, flags=re.M)  # nest under "## Latest results"
    readme.write_text(f"{head}{start}\n{table}{end}{tail}")
    print("updated bench/README.md")


# --------------------------------------------------------------------------- main


ALL_WORKLOADS = ("import", "cold", "warm", "http", "rss")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny run (<= 30 s once the venv exists): checks everything still runs")
    ap.add_argument("--workloads", default=",".join(ALL_WORKLOADS), help=f"comma list from {','.join(ALL_WORKLOADS)}")
    ap.add_argument("--sides", default="mcpkit,official", help="comma list: mcpkit,official")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run (default 10)")
    ap.add_argument("--http-rounds", type=int, default=3, help="interleaved rounds per HTTP cell (default 3: the median then survives one disturbed round)")
    ap.add_argument("--concurrency", default="1,16,64", help="HTTP connection counts (default 1,16,64)")
    ap.add_argument("--import-rounds", type=int, default=10)
    ap.add_argument("--cold-rounds", type=int, default=20)
    ap.add_argument("--warm-rounds", type=int, default=3)
    ap.add_argument("--warm-calls", type=int, default=2000)
    ap.add_argument("--rss-requests", type=int, default=10_000)
    ap.add_argument("--no-pin", action="store_true", help="do not pin client and server to different cores")
    ap.add_argument("--no-install", action="store_true", help="fail instead of creating bench/.venv-official")
    ap.add_argument("--official-python", help="use this interpreter (with mcp==2.3.0) instead of bench/.venv-official")
    ap.add_argument("--out", help="output basename under bench/results (default latest, or smoke with --smoke)")
    ap.add_argument("--update-readme", action="store_true", help="also put the table into bench/README.md")
    args = ap.parse_args(argv)

    t_begin = time.monotonic()
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = set(workloads) - set(ALL_WORKLOADS)
    if bad:
        ap.error(f"unknown workloads: {sorted(bad)}")
    chosen = [s.strip() for s in args.sides.split(",") if s.strip()]
    if set(chosen) - set(SIDES) or not chosen:
        ap.error("--sides takes mcpkit and/or official")

    conc = [int(c) for c in args.concurrency.split(",")]
    modes = ["echo", "discover"]
    warmup = 2.0
    if args.smoke:
        args.import_rounds, args.cold_rounds, args.warm_rounds = 1, 1, 1
        args.warm_calls, args.rss_requests = 200, 500
        args.duration, args.http_rounds, warmup = 1.0, 1, 0.0
        conc = [16, 64]
    out_name = args.out or ("smoke" if args.smoke else "latest")

    official_python = args.official_python or (ensure_official_venv(args.no_install) if "official" in chosen else sys.executable)
    sides = make_sides(official_python)
    if "http" in workloads:
        ensure_wrk()
    info = machine_info(sides)
    print(f"machine: {info['nproc']} CPUs, {info['cpu']}, python {info['python']}", flush=True)

    pin = Pinning(not args.no_pin)
    pin.pin_self()
    if pin.enabled:
        print(f"pinning: client on core {pin.client_core}, servers on core {pin.server_core}", flush=True)

    res = Results(chosen)
    if "import" in workloads:
        wl_import(res, sides, pin, args.import_rounds, warmup=not args.smoke)
    if "cold" in workloads:
        wl_cold(res, sides, pin, args.cold_rounds)
    if "warm" in workloads:
        wl_warm(res, sides, pin, args.warm_rounds, args.warm_calls)
    if "http" in workloads:
        wl_http(res, sides, pin, args.http_rounds, args.duration, conc, modes, warmup)
    if "rss" in workloads:
        wl_rss(res, sides, pin, 1, args.rss_requests)

    params = {
        "import_rounds": args.import_rounds,
        "cold_rounds": args.cold_rounds,
        "warm": f"{args.warm_rounds}x{args.warm_calls}",
        "http": f"{args.http_rounds}x{args.duration:g}s c={','.join(map(str, conc))}",
        "rss_requests": args.rss_requests,
        "pinned": pin.enabled,
    }
    if args.smoke:
        params["smoke"] = True
    c16 = 16 if 16 in conc else max(conc)
    budget_rows = budgets(res, c16, max(conc))
    table = render(res, info, params, budget_rows)
    elapsed = time.monotonic() - t_begin

    print()
    print(table)
    for label, shown, verdict in budget_rows:
        print(f"{verdict:4}  {label}: {shown}")
    print(f"\ntotal time {elapsed:.0f} s")

    results_dir = BENCH / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / f"{out_name}.md").write_text(table)
    (results_dir / f"{out_name}.json").write_text(
        json.dumps(
            {
                "machine": info,
                "parameters": params,
                "elapsed_s": round(elapsed, 1),
                "rows": res.rows,
                "budgets": [{"budget": b, "measured": m, "verdict": v} for b, m, v in budget_rows],
                "notes": res.notes,
                "errors": res.errors,
                "raw": res.raw,
            },
            indent=1,
            default=str,
        )
        + "\n"
    )
    print(f"wrote bench/results/{out_name}.md and .json")
    if args.update_readme:
        update_readme(table)
    if res.errors:
        print(f"{len(res.errors)} error(s):")
        for e in res.errors:
            print("  " + e.splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
