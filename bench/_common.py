"""What every part of the bench shares: paths and constants, the two sides under test, core
pinning, process and statistics helpers, the results table, and setup (the official SDK's
venv, the machine description)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
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

#: The sides of this run, in measuring order. ``mcpkit`` is this checkout; ``baseline`` (only with
#: ``run.py --baseline REV``) is mcpkit at another commit; ``floor`` is the bare-Python peer of each
#: workload (servers/floor_stdio.py, servers/floor_asgi.py, client_floor.py's driver, the bare
#: imports): what no library can go much under. All are measured in the same interleaved rounds.
SIDES: list[str] = ["mcpkit", "official", "floor"]
BASELINE_DIR = BENCH / ".baseline"
FLOOR_STDIO = SERVERS / "floor_stdio.py"
FLOOR_ASGI = SERVERS / "floor_asgi.py"


def add_baseline_side() -> None:
    if "baseline" not in SIDES:
        SIDES.insert(1, "baseline")


def baseline_tree(rev: str) -> tuple[Path, str]:
    """A clean copy of the checkout at ``rev`` (``git archive``), reused between runs: (its root, short sha)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", f"{rev}^{{commit}}"],
                         capture_output=True, text=True)
    if sha.returncode != 0:
        raise SystemExit(f"--baseline: {rev!r} is not a commit of this checkout")
    short = sha.stdout.strip()
    root = BASELINE_DIR / short
    if not (root / "mcpkit" / "__init__.py").exists():
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(REPO), "archive", short], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(root)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"--baseline: git archive {short} failed")
    return root, short


def discover_line(req_id: int = 1) -> bytes:
    msg = {"jsonrpc": "2.0", "id": req_id, "method": "server/discover", "params": {"_meta": META}}
    return (json.dumps(msg, separators=(",", ":")) + "\n").encode()


def norm_line(req_id: int, x: float, y: float) -> bytes:
    """A ``tools/call`` of the Pydantic workload's ``norm(p: Point) -> Result``."""
    msg = {"jsonrpc": "2.0", "id": req_id, "method": "tools/call",
           "params": {"name": "norm", "arguments": {"p": {"x": x, "y": y}}, "_meta": META}}
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

    def __init__(self, name: str, python: str, env: dict[str, str], imports: tuple[str, str], build_code: str,
                 script: str | None = None):
        self.name = name
        self.python = python
        self.env = env
        # (package import, server-entry import) for -X importtime
        self.imports = imports
        self.build_code = build_code
        self.script = script or str(SERVERS / f"echo_{name}.py")

    def server_argv(self, *args: str, kind: str = "echo") -> list[str]:
        """The command line of this side's ``kind`` server (``echo``, or ``pydantic``: the script
        ``servers/pydantic_<side>.py`` beside the echo one)."""
        script = self.script if kind == "echo" else self.server_script(kind)
        return [self.python, script, *args]

    def server_script(self, kind: str) -> str:
        here = Path(self.script).parent
        return str(here / Path(self.script).name.replace("echo_", f"{kind}_", 1))


def make_sides(official_python: str, baseline: Path | None = None) -> dict[str, Side]:
    # (PYTHONDONTWRITEBYTECODE too: the warm-up rounds byte-compile, as any installed package is.)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
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
    # The floor: bare Python with mcpkit's interpreter (the stdio server is stdlib only).
    floor = Side("floor", sys.executable, mk_env, ("import asyncio", "import asyncio, msgspec"), "", script=str(FLOOR_STDIO))
    sides = {"mcpkit": mcpkit, "official": official, "floor": floor}
    if baseline is not None:
        # The same workload on mcpkit at another commit: its own package and its own echo server.
        b_env = dict(base)
        b_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(baseline), os.environ.get("PYTHONPATH", "")) if p)
        sides["baseline"] = Side("baseline", sys.executable, b_env, mcpkit.imports, mcpkit.build_code,
                                 script=str(baseline / "bench" / "servers" / "echo_mcpkit.py"))
    return sides


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


def proc_cpu_ns(pid: int) -> int | None:
    """CPU time (ns) of every thread of ``pid`` so far, from /proc/PID/task/*/schedstat: exact,
    unlike the 10 ms ticks of /proc/PID/stat, so it can be taken over a fraction of a second."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


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


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def mib(b: float | None) -> float | None:
    return None if b is None else b / MIB


# --------------------------------------------------------------------------- results


class Results:
    def __init__(self, sides: list[str]):
        self.active = list(sides)
        self.rows: list[dict] = []
        self.errors: list[str] = []
        self.raw: dict[str, dict] = {}
        self.notes: list[str] = []
        #: Per-round values: key -> side -> round -> value. A row made with ``key`` carries them,
        #: and the report's ratios are then medians of per-round ratios (with their spread).
        self.rounds: dict[str, dict[str, dict[int, float]]] = {}

    def sample(self, key: str, side: str, r: int, value: float | None) -> None:
        if value is not None:
            self.rounds.setdefault(key, {}).setdefault(side, {})[r] = value

    def rounds_of(self, prefix: str) -> dict[str, dict[str, dict[int, float]]]:
        return {k[len(prefix):]: v for k, v in self.rounds.items() if k.startswith(prefix)}

    def row_rounds(self, workload: str, metric: str, unit: str, better: str, key: str, scale: float = 1.0) -> None:
        """A row from the per-round samples under ``key``: each side's median, and the rounds
        themselves (times ``scale``, e.g. 1e3 for seconds shown in ms)."""
        by_side = {s: {r: v * scale for r, v in rounds.items()} for s, rounds in self.rounds.get(key, {}).items()}
        self.row(workload, metric, unit, better, {s: med(list(v.values())) for s, v in by_side.items() if v}, by_side)

    def error(self, side: str, workload: str, msg: str) -> None:
        text = f"[{workload}] {side}: {msg}"
        self.errors.append(text)
        print("  ERROR " + text.replace("\n", "\n        "), flush=True)

    def row(self, workload: str, metric: str, unit: str, better: str, values: dict[str, float | None],
            rounds: dict[str, dict[int, float]] | None = None) -> None:
        self.rows.append({"workload": workload, "metric": metric, "unit": unit, "better": better,
                          **{s: values.get(s) for s in SIDES}, "rounds": rounds or {}})

    def get(self, workload: str, metric: str, side: str):
        """The value of the row ``workload`` whose metric is ``metric`` (or starts with it)."""
        for r in self.rows:
            if r["workload"] == workload and r["metric"].startswith(metric):
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
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
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
