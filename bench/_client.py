"""Workload 6, client: sequential ``tools/call echo`` over stdio against the bare floor server
(servers/floor_stdio.py), one client per side, each in its own process (client_floor.py):
mcpkit's ``Client`` (this checkout, and the baseline's), the official SDK's ``Client``, and the
floor, a bare synchronous JSON-lines driver. The server is the same for all, so the figures
differ by the client alone; the client process's CPU per call is beside its calls/s.

The floor side also runs the asyncio floor (client_floor.py ``asyncio``: the same requests
from a coroutine on asyncio's default loop, a reader callback and a future per request) in
the same round, right after the synchronous driver: the second pair of rows sets each client
against what any client on that loop pays. The third pair runs mcpkit's Client (and the
baseline's) and the asyncio floor again on uvloop's loop, an application's choice (the official
SDK's client is not run there)."""

from __future__ import annotations

import json
import subprocess
import sys

from _common import BENCH, FLOOR_STDIO, REPO, Pinning, Results, Side
from _rounds import attempt, interleaved

KIND = {"mcpkit": "mcpkit", "baseline": "mcpkit", "official": "official", "floor": "driver"}


def run_client(side: Side, pin: Pinning, calls: int, timeout: float = 120, kind: str | None = None,
               loop: str = "asyncio") -> dict:
    # The server on the server core (taskset execs it), the client where the bench runs.
    server = pin.taskset("server") + [sys.executable, str(FLOOR_STDIO), "stdio"]
    cmd = [side.python, str(BENCH / "client_floor.py"), kind or KIND[side.name], str(calls), "--loop", loop, "--", *server]
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
            if name == "floor":
                out = run_client(sides[name], pin, calls, kind="asyncio")
                print(f"  r{r + 1} {'asyncio':8} {out['calls_per_s']:9.0f} calls/s  {out['cpu_us_per_call']:6.1f} µs CPU/call"
                      " (the asyncio floor)", flush=True)
            res.sample("aclient.cps", name, r, out["calls_per_s"])
            res.sample("aclient.cpu", name, r, out["cpu_us_per_call"])
            if name != "official":  # mcpkit's Client, and the asyncio floor, on uvloop's loop
                out = run_client(sides[name], pin, calls, kind="asyncio" if name == "floor" else None, loop="uvloop")
                print(f"  r{r + 1} {name + '@uv':8} {out['calls_per_s']:9.0f} calls/s  {out['cpu_us_per_call']:6.1f} µs CPU/call"
                      + (" (the asyncio floor on uvloop)" if name == "floor" else " (on uvloop)"), flush=True)
                res.sample("uclient.cps", name, r, out["calls_per_s"])
                res.sample("uclient.cpu", name, r, out["cpu_us_per_call"])
    res.raw["client"] = res.rounds_of("client.")
    res.raw["client_asyncio_floor"] = res.rounds_of("aclient.")
    res.row_rounds("client", f"tools/call against the floor server, {calls} sequential (floor: bare JSON-lines driver)",
                   "calls/s", "higher", "client.cps")
    res.row_rounds("client", "client process CPU per call", "µs", "lower", "client.cpu")
    res.row_rounds("client", "the same, floor: a bare asyncio driver (default loop, reader callback, a future per call)",
                   "calls/s", "higher", "aclient.cps")
    res.row_rounds("client", "client process CPU per call, floor: the bare asyncio driver", "µs", "lower", "aclient.cpu")
    res.raw["client_uvloop"] = res.rounds_of("uclient.")
    res.row_rounds("client", "on uvloop's loop (mcpkit's Client and the floor's asyncio driver; floor: that driver)",
                   "calls/s", "higher", "uclient.cps")
    res.row_rounds("client", "client process CPU per call on uvloop, floor: the asyncio driver on uvloop", "µs", "lower",
                   "uclient.cpu")
