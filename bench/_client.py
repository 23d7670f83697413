"""Workload 6, client: sequential ``tools/call echo`` over stdio against the bare floor server
(servers/floor_stdio.py), one client per side, each in its own process (client_floor.py):
mcpkit's ``Client`` (this checkout, and the baseline's), the official SDK's ``Client``, and the
floor, a bare synchronous JSON-lines driver. The server is the same for all, so the figures
differ by the client alone; the client process's CPU per call is beside its calls/s."""

from __future__ import annotations

import json
import subprocess
import sys

from _common import BENCH, FLOOR_STDIO, REPO, Pinning, Results, Side
from _rounds import attempt, interleaved

KIND = {"mcpkit": "mcpkit", "baseline": "mcpkit", "official": "official", "floor": "driver"}


def run_client(side: Side, pin: Pinning, calls: int, timeout: float = 120) -> dict:
    # The server on the server core (taskset execs it), the client where the bench runs.
    server = pin.taskset("server") + [sys.executable, str(FLOOR_STDIO), "stdio"]
    cmd = [side.python, str(BENCH / "client_floor.py"), KIND[side.name], str(calls), "--", *server]
    cp = subprocess.run(cmd, env=side.env, cwd=str(REPO), capture_output=True, text=True, timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError(f"exit {cp.returncode}: {cp.stderr.strip()[-800:]}")
    out: dict = json.loads(cp.stdout.strip().splitlines()[-1])
    return out


def wl_client(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, calls: int) -> None:
    print(f"== client: {rounds} rounds x {calls} sequential tools/call against the floor server", flush=True)
    ok = {n: True for n in res.active}
    for r, _, name in interleaved(rounds, ok.get):
        with attempt(res, "client", name, ok):
            out = run_client(sides[name], pin, calls)
            res.sample("client.cps", name, r, out["calls_per_s"])
            res.sample("client.cpu", name, r, out["cpu_us_per_call"])
            print(f"  r{r + 1} {name:8} {out['calls_per_s']:9.0f} calls/s  {out['cpu_us_per_call']:6.1f} µs CPU/call", flush=True)
    res.raw["client"] = res.rounds_of("client.")
    res.row_rounds("client", f"tools/call against the floor server, {calls} sequential (floor: bare JSON-lines driver)",
                   "calls/s", "higher", "client.cps")
    res.row_rounds("client", "client process CPU per call", "µs", "lower", "client.cpu")
