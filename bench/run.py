#!/usr/bin/env python3
"""Benchmark mcpkit side by side with the official MCP Python SDK (mcp==2.3.0).

Run with the project's interpreter (the one that can import mcpkit):

    python bench/run.py            # full run, writes bench/results/latest.{md,json}
    python bench/run.py --smoke    # <= 30 s: checks every workload still runs

The official SDK is installed on first use into bench/.venv-official (from
PyPI, ``mcp==2.3.0``). Both libraries serve the same echo tool through
bench/servers/echo_{mcpkit,official}.py; every workload alternates
mcpkit/official/floor round by round (the floor: the bare-Python peer of each workload). Only 127.0.0.1 is used and every load phase
has a fixed duration or request count.

Stdlib only. Linux only (/proc, sched_setaffinity, pidfd). This file is the entry point;
the workloads live beside it: _imports.py (import), _stdio.py (cold, warm, RSS), _pydantic.py
(the Pydantic tool), _http.py (HTTP), _client.py (the client against the floor server), with
_rounds.py (the interleaved round runner), _report.py and _common.py.
"""

from __future__ import annotations

import argparse
import sys
import time

from _client import wl_client
from _common import SIDES, Pinning, Results, add_baseline_side, baseline_tree, ensure_official_venv, machine_info, make_sides
from _http import ensure_wrk, wl_http
from _imports import wl_import
from _pydantic import wl_pydantic
from _report import budgets, render, update_readme, write_results
from _stdio import wl_cold, wl_rss, wl_warm

ALL_WORKLOADS = ("import", "cold", "warm", "client", "pydantic", "http", "rss")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny run (<= 30 s once the venv exists): checks everything still runs")
    ap.add_argument("--workloads", default=",".join(ALL_WORKLOADS), help=f"comma list from {','.join(ALL_WORKLOADS)}")
    ap.add_argument("--sides", default="mcpkit,official,floor", help="comma list: mcpkit,official,floor")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run (default 10)")
    ap.add_argument("--http-rounds", type=int, default=3, help="interleaved rounds per HTTP cell (default 3: the median then survives one disturbed round)")
    ap.add_argument("--concurrency", default="1,16,64", help="HTTP connection counts (default 1,16,64)")
    ap.add_argument("--import-rounds", type=int, default=10)
    ap.add_argument("--cold-rounds", type=int, default=20)
    ap.add_argument("--warm-rounds", type=int, default=5)
    ap.add_argument("--warm-calls", type=int, default=2000)
    ap.add_argument("--client-rounds", type=int, default=5)
    ap.add_argument("--client-calls", type=int, default=2000)
    ap.add_argument("--pydantic-rounds", type=int, default=5, help="rounds of the Pydantic workload (default 5)")
    ap.add_argument("--pydantic-calls", type=int, default=2000, help="sequential norm calls per round (default 2000)")
    ap.add_argument("--rss-requests", type=int, default=10_000)
    ap.add_argument("--no-pin", action="store_true", help="do not pin client and server to different cores")
    ap.add_argument("--no-install", action="store_true", help="fail instead of creating bench/.venv-official")
    ap.add_argument("--official-python", help="use this interpreter (with mcp==2.3.0) instead of bench/.venv-official")
    ap.add_argument("--out", help="output basename under bench/results (default latest, or smoke with --smoke)")
    ap.add_argument("--baseline", metavar="REV", help="also measure mcpkit at commit REV in the same interleaved rounds "
                    "(a before/after comparison that one noisy machine cannot skew); adds a 'vs baseline' column")
    ap.add_argument("--update-readme", action="store_true", help="also put the table into bench/README.md")
    args = ap.parse_args(argv)

    t_begin = time.monotonic()
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = set(workloads) - set(ALL_WORKLOADS)
    if bad:
        ap.error(f"unknown workloads: {sorted(bad)}")
    chosen = [s.strip() for s in args.sides.split(",") if s.strip()]
    if set(chosen) - set(SIDES) or not chosen:
        ap.error("--sides takes mcpkit, official and/or floor")
    baseline_root = None
    if args.baseline:
        baseline_root, baseline_sha = baseline_tree(args.baseline)
        add_baseline_side()
        chosen.insert(1, "baseline")

    conc = [int(c) for c in args.concurrency.split(",")]
    modes = ["echo", "discover"]
    warmup = 2.0
    if args.smoke:
        args.import_rounds, args.cold_rounds, args.warm_rounds = 1, 1, 1
        args.warm_calls, args.rss_requests = 200, 500
        args.client_rounds, args.client_calls = 1, 200
        args.pydantic_rounds, args.pydantic_calls = 1, 200
        args.duration, args.http_rounds, warmup = 1.0, 1, 0.0
        conc = [16, 64]
    out_name = args.out or ("smoke" if args.smoke else "latest")

    official_python = args.official_python or (ensure_official_venv(args.no_install) if "official" in chosen else sys.executable)
    sides = make_sides(official_python, baseline_root)
    if "http" in workloads:
        ensure_wrk()
    info = machine_info(sides)
    if baseline_root is not None:
        info["baseline_commit"] = baseline_sha
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
    if "client" in workloads:
        wl_client(res, sides, pin, args.client_rounds, args.client_calls)
    if "pydantic" in workloads:
        wl_pydantic(res, sides, pin, args.pydantic_rounds, args.pydantic_calls)
    if "http" in workloads:
        wl_http(res, sides, pin, args.http_rounds, args.duration, conc, modes, warmup)
    if "rss" in workloads:
        wl_rss(res, sides, pin, 1, args.rss_requests)

    params = {
        "import_rounds": args.import_rounds,
        "cold_rounds": args.cold_rounds,
        "warm": f"{args.warm_rounds}x{args.warm_calls}",
        "client": f"{args.client_rounds}x{args.client_calls}",
        "pydantic": f"{args.pydantic_rounds}x{args.pydantic_calls}",
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

    write_results(out_name, table, info, params, elapsed, res, budget_rows)
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
