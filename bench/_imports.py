"""Workload 1, import: interpreter start, package import (``-X importtime``), and import plus
building a one-tool server, per side, in fresh processes."""

from __future__ import annotations

import subprocess
import time

from _common import MARKER, REPO, Pinning, Results, Side, kill
from _rounds import interleaved


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


#: Each side's client import and the bare imports it is measured against (in-process seconds).
CLIENT_IMPORT = {"mcpkit": "from mcpkit import Client", "baseline": "from mcpkit import Client", "official": "from mcp import Client"}
CLIENT_FLOOR = "import asyncio, msgspec"
TIMING = "import time as _t\n_t0 = _t.perf_counter()\n{code}\nprint(_t.perf_counter() - _t0)\n"


def inproc(side: Side, pin: Pinning, code: str) -> float:
    """Seconds ``code`` takes in a fresh interpreter of ``side``, timed inside it."""
    _, cp = run_timed([side.python, "-c", TIMING.format(code=code)], side, pin)
    if cp.returncode != 0:
        raise RuntimeError(f"`{code}` failed:\n{cp.stderr.strip()[-800:]}")
    return float(cp.stdout.strip().splitlines()[-1])


def wl_import(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, warmup: bool = True) -> None:
    print(f"== import: {rounds} rounds", flush=True)
    it_code = f"import sys; sys.stderr.write('{MARKER}\\n'); sys.stderr.flush(); {{stmt}}"
    # Each library's wire-type dependency alone: the floor of its import cost.
    wire_lib = {"mcpkit": "import msgspec", "baseline": "import msgspec", "official": "import pydantic"}
    ok = {}
    for name in res.active:  # warm-up: byte-compile and fill the page cache
        side = sides[name]
        ok[name] = True
        if not warmup:
            continue
        try:
            inproc(side, pin, CLIENT_FLOOR if name == "floor" else side.build_code)
        except RuntimeError as exc:
            ok[name] = False
            res.error(name, "import", str(exc))
    for r, _, name in interleaved(rounds, ok.get):
        side = sides[name]

        def put(key: str, value: float | None, name: str = name, r: int = r) -> None:
            res.sample(f"import.{key}", name, r, value)

        t, _ = run_timed([side.python, "-c", "pass"], side, pin)
        put("bare", t)
        if name == "floor":  # the bare imports a client needs, nothing of any MCP library
            put("client", inproc(side, pin, CLIENT_FLOOR))
            continue
        t, _ = run_timed([side.python, "-c", "import asyncio"], side, pin)
        put("asyncio", t - res.rounds["import.bare"][name][r])
        t, _ = run_timed([side.python, "-c", wire_lib.get(name, "pass")], side, pin)
        put("wiretypes", t - res.rounds["import.bare"][name][r])
        t, cp = run_timed([side.python, "-c", TIMING.format(code=side.build_code)], side, pin)
        if cp.returncode != 0:
            res.error(name, "import", cp.stderr.strip()[-800:])
            ok[name] = False
            continue
        put("wall", t)
        put("above", t - res.rounds["import.bare"][name][r])
        put("inproc", float(cp.stdout.strip().splitlines()[-1]))
        try:
            put("client", inproc(side, pin, CLIENT_IMPORT[name]))
        except RuntimeError as exc:
            res.error(name, "import", str(exc))
        for key, stmt in zip(("importtime_pkg", "importtime_entry"), side.imports):
            _, cp = run_timed([side.python, "-X", "importtime", "-c", it_code.format(stmt=stmt)], side, pin)
            try:
                if cp.returncode != 0:
                    raise ValueError(f"`{stmt}` failed")
                put(key, parse_importtime(cp.stderr) / 1e6)
            except ValueError as exc:
                res.error(name, "import", f"{exc}: {cp.stderr[-400:]}")
    client = res.rounds.get("import.client", {})
    for name in ("mcpkit", "baseline"):  # above the floor's bare imports, round by round
        for r, v in client.get(name, {}).items():
            if r in client.get("floor", {}):
                res.sample("import.client_above", name, r, v - client["floor"][r])
    res.raw["import"] = res.rounds_of("import.")

    row = res.row_rounds
    row("import", "bare `python -c pass` (floor)", "ms", "lower", "import.bare", 1e3)
    row("import", "-X importtime cumulative: `import mcpkit` / `import mcp`", "ms", "lower", "import.importtime_pkg", 1e3)
    row("import", "-X importtime cumulative: `from mcpkit import Server` / `from mcp.server.mcpserver import MCPServer`", "ms", "lower", "import.importtime_entry", 1e3)
    row("import", "import + one-tool server, in-process", "ms", "lower", "import.inproc", 1e3)
    row("import", "import + one-tool server, process wall", "ms", "lower", "import.wall", 1e3)
    row("import", "import + one-tool server, wall above bare python", "ms", "lower", "import.above", 1e3)
    row("import", "`from mcpkit import Client` / `from mcp import Client`, in-process (floor: `import asyncio, msgspec`)", "ms", "lower", "import.client", 1e3)
    row("import", "`from mcpkit import Client`, in-process, above `import asyncio, msgspec` (same round)", "ms", "lower", "import.client_above", 1e3)
    row("import", "reference: `import asyncio` alone, wall above bare python", "ms", "lower", "import.asyncio", 1e3)
    row("import", "reference: wire-type library alone (`msgspec` / `pydantic`), wall above bare python", "ms", "lower", "import.wiretypes", 1e3)
