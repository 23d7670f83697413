"""Workload 1, import: interpreter start, package import (``-X importtime``), and import plus
building a one-tool server, per side, in fresh processes."""

from __future__ import annotations

import subprocess
import time

from _common import MARKER, REPO, SIDES, Pinning, Results, Side, kill, med, ms
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


def wl_import(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, warmup: bool = True) -> None:
    print(f"== import: {rounds} rounds", flush=True)
    timing_code = "import time as _t\n_t0 = _t.perf_counter()\n{code}print(_t.perf_counter() - _t0)\n"
    it_code = f"import sys; sys.stderr.write('{MARKER}\\n'); sys.stderr.flush(); {{stmt}}"
    samples = {s: {"bare": [], "asyncio": [], "wiretypes": [], "wall": [], "inproc": [], "importtime_pkg": [], "importtime_entry": []} for s in res.active}
    # Each library's wire-type dependency alone: the floor of its import cost.
    wire_lib = {"mcpkit": "import msgspec", "baseline": "import msgspec", "official": "import pydantic"}
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
    for _, _, name in interleaved(rounds, ok.get):
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
