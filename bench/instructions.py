#!/usr/bin/env python3
"""What one call costs the CPU, counted rather than timed: valgrind's callgrind (with its cache
and branch simulation) counts the instructions, the simulated cache misses and the branch
mispredictions of the measured process. The counts do not depend on what else the machine is
doing, so they hold still where the timed rounds of bench/run.py move 2x between rounds.

    python bench/instructions.py [--paths stdio,client,http,proxy,cold] [--sides floor,mcpkit,official]
                                 [--calls 200,1200] [--baseline REV] [--save NAME] [--json FILE]
    python bench/instructions.py --render bench/results/instructions-NAME.json

Each path is run once per side with each of the two call counts (after the same warm-up), and
the per-call figures are the difference of the two runs divided by the difference of the counts:
start-up, warm-up and exit cancel out. The paths, the measured process of each in brackets:

- ``stdio``: sequential ``tools/call echo`` lines from a synchronous driver (this process) to
  the stdio echo server [the server]: ``floor`` is bench/servers/floor_stdio.py, ``mcpkit``
  bench/servers/echo_mcpkit.py, ``official`` the official SDK's echo server;
- ``client``: bench/client_floor.py against the floor stdio server [the client]: ``floor`` its
  bare synchronous driver, ``asyncio`` its bare asyncio driver, ``mcpkit`` mcpkit's Client
  (``asyncio@uvloop`` and ``mcpkit@uvloop``: the same two on uvloop's loop),
  ``official`` the official SDK's client;
- ``http``: sequential POSTs of a 2026-07-28 ``tools/call echo`` on one keep-alive connection
  (the bytes wrk sends in bench/run.py) [the server]: ``floor`` is bench/servers/floor_asgi.py,
  ``mcpkit`` and ``official`` their echo servers on Streamable HTTP;
- ``proxy``: the same POSTs to an HTTP proxy in front of mcpkit's echo server (started once,
  not counted) [the proxy]: ``floor`` is bench/servers/floor_proxy.py (a bare ASGI relay on the
  same uvicorn stack), ``raw`` its ``--raw`` relay (asyncio protocols, no HTTP server), ``mcpkit``
  ``mcpkit proxy --http URL``;
- ``cold``: spawn, one ``server/discover``, stdin closed, exit [the server, whole process: a
  per-call difference does not apply].

Reported per call (per process for ``cold``): instructions (Ir), first-level cache misses
(instruction and data, I1mr+D1mr+D1mw), last-level misses (ILmr+DLmr+DLmw), branch
mispredictions (Bcm+Bim), and KCachegrind's cycle estimate, CEst = Ir + 10 x (L1 misses +
mispredictions) + 100 x last-level misses; each beside its ratio to the floor of its path.
The simulated caches are those of the machine valgrind runs on, the process alone on them:
the estimate leaves out the system calls' kernel time and what other processes evict.

Measured processes run with PYTHONHASHSEED=0 (the same dict layouts run to run). ``--baseline
REV`` adds ``baseline``: mcpkit at another commit, for a before/after that timing cannot give
on a shared machine. Needs valgrind (Debian ``valgrind``). Stdlib only.

``--bytecodes`` counts instead the bytecodes each measured process executes (bench/_opcount.py,
a tracer; no valgrind). On this bench's paths they predict the timed distance better than the
instructions do: the floors spend theirs in C loops (the standard library's json), which run
many instructions per cycle, mcpkit in the eval loop, which runs few.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BENCH,
    ECHO_TEXT,
    FLOOR_ASGI,
    FLOOR_STDIO,
    REPO,
    Pinning,
    Side,
    add_baseline_side,
    baseline_tree,
    discover_line,
    echo_line,
    ensure_official_venv,
    free_port,
    make_sides,
)
from _http import HttpServer

PATHS = ("stdio", "client", "http", "proxy", "cold")
FLOOR_PROXY = BENCH / "servers" / "floor_proxy.py"
WARMUP = 50
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bcm", "Bim")
#: The figures reported, each a sum of callgrind events.
FIGURES = {
    "instructions": ("Ir",),
    "L1 misses": ("I1mr", "D1mr", "D1mw"),
    "LL misses": ("ILmr", "DLmr", "DLmw"),
    "mispredicts": ("Bcm", "Bim"),
}
VALGRIND = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes"]
CLIENT_FLOOR = BENCH / "client_floor.py"
OPCOUNT = BENCH / "_opcount.py"
#: What a run counts: "callgrind" (instructions, misses, mispredictions) or "bytecodes".
COUNTER = "callgrind"


class Counted:
    """One measured process under callgrind; :meth:`counts` once it has exited."""

    def __init__(self, argv: list[str], env: dict[str, str], **popen: object) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="mcpkit-callgrind-")
        self.log = Path(self.dir.name) / "log"
        if COUNTER == "bytecodes":  # argv[0] is the measured process's interpreter
            cmd = [argv[0], str(OPCOUNT), str(self.log), *argv[1:]]
        else:
            cmd = [*VALGRIND, f"--log-file={self.log}", f"--callgrind-out-file={Path(self.dir.name) / 'out'}", *argv]
        self.proc = subprocess.Popen(cmd, env={**env, "PYTHONHASHSEED": "0"}, cwd=str(REPO), **popen)  # type: ignore[call-overload]

    def counts(self, timeout: float = 600) -> dict[str, float]:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise RuntimeError(f"callgrind run did not exit within {timeout:g} s") from None
        if COUNTER == "bytecodes":
            try:
                counted = json.loads(self.log.read_text())["bytecodes"]
            except (OSError, ValueError, KeyError):
                raise RuntimeError(f"the bytecode count was not written (exit {self.proc.returncode})") from None
            self.dir.cleanup()
            return {"bytecodes": float(counted)}
        text = self.log.read_text(errors="replace")
        self.dir.cleanup()
        events = re.search(r"^==\d+== Events\s*:\s*(.+)$", text, re.M)
        collected = re.search(r"^==\d+== Collected\s*:\s*(.+)$", text, re.M)
        if events is None or collected is None:
            raise RuntimeError(f"no callgrind totals (exit {self.proc.returncode}):\n{text[-1500:]}")
        got = dict(zip(events.group(1).split(), (float(v) for v in collected.group(1).split()), strict=True))
        return {e: got.get(e, 0.0) for e in EVENTS}


# ------------------------------------------------------------------ the paths
def _read_line(f) -> dict:  # type: ignore[no-untyped-def]
    line = f.readline()
    if not line:
        raise RuntimeError("the server closed its output")
    return json.loads(line)


def _stdio_server(side: Side):  # type: ignore[no-untyped-def]
    """The side's stdio server under callgrind: (the run, its stdin, a line reader of its stdout)."""
    run = Counted(side.server_argv("stdio"), side.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.DEVNULL, bufsize=0)
    assert run.proc.stdin is not None and run.proc.stdout is not None
    return run, run.proc.stdin, open(run.proc.stdout.fileno(), "rb", closefd=False)


def run_stdio(side: Side, calls: int) -> dict[str, float]:
    run, stdin, out = _stdio_server(side)
    try:
        stdin.write(discover_line(0))
        if "result" not in _read_line(out):
            raise RuntimeError(f"{side.name}: server/discover failed")
        for i in range(1, WARMUP + 1 + calls):
            stdin.write(echo_line(i))
            msg = _read_line(out)
            if msg.get("id") != i or msg["result"]["content"][0]["text"] != ECHO_TEXT:
                raise RuntimeError(f"{side.name}: bad answer {msg!r}")
    finally:
        stdin.close()
    return run.counts()


def run_client(kind: str, python: str, env: dict[str, str], calls: int, loop: str = "asyncio") -> dict[str, float]:
    argv = [python, str(CLIENT_FLOOR), kind, str(calls), "--loop", loop, "--", sys.executable, str(FLOOR_STDIO)]
    run = Counted(argv, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    counts = run.counts()
    if run.proc.returncode != 0:
        raise RuntimeError(f"client {kind} failed: {run.proc.stderr.read().decode(errors='replace')[-800:]}")  # type: ignore[union-attr]
    return counts


def http_request(port: int) -> bytes:
    body = echo_line(1).rstrip(b"\n")
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def _http_answer(sock: socket.socket, buf: bytearray) -> tuple[int, bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        buf += chunk
    end = buf.index(b"\r\n\r\n") + 4
    head = bytes(buf[:end]).decode("latin-1").lower()
    m = re.search(r"\r\ncontent-length:\s*(\d+)", head)
    if m is None:
        raise RuntimeError(f"an answer without Content-Length: {head[:300]!r}")
    size = end + int(m.group(1))
    while len(buf) < size:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection mid-answer")
        buf += chunk
    status, body = int(head.split(" ", 2)[1]), bytes(buf[end:size])
    del buf[:size]
    return status, body


def run_http(side: Side, calls: int, backend: str | None = None, raw: bool = False) -> dict[str, float]:
    """Sequential POSTs to an HTTP server; with ``backend`` (a URL), to a proxy in front of it."""
    port = free_port()
    if backend is None:
        script = str(FLOOR_ASGI) if side.name == "floor" else side.script
        argv = [side.python, script, "http", str(port)]
    elif side.name == "floor":
        argv = [side.python, str(FLOOR_PROXY), *(["--raw"] if raw else []), str(port), backend]
    else:
        argv = [side.python, "-m", "mcpkit", "proxy", "--http", "--port", str(port), backend]
    run = Counted(argv, side.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                break
            except OSError:
                if run.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{side.name}: the HTTP server did not start") from None
                time.sleep(0.2)
        request, buf = http_request(port), bytearray()
        with sock:
            for _ in range(WARMUP + calls):
                sock.sendall(request)
                status, body = _http_answer(sock, buf)
                if status != 200 or ECHO_TEXT.encode() not in body:
                    raise RuntimeError(f"{side.name}: bad answer {status} {body[:300]!r}")
    finally:
        run.proc.terminate()
    return run.counts()


def run_cold(side: Side) -> dict[str, float]:
    run, stdin, out = _stdio_server(side)
    stdin.write(discover_line(1))
    msg = _read_line(out)
    stdin.close()
    if "result" not in msg:
        raise RuntimeError(f"{side.name}: server/discover failed: {msg!r}")
    return run.counts()


# ------------------------------------------------------------------ the run
def per_call(a: dict[str, float], b: dict[str, float], n: int) -> dict[str, float]:
    return {e: (b[e] - a[e]) / n for e in a}


def figures(c: dict[str, float]) -> dict[str, float]:
    if "bytecodes" in c:
        return {"bytecodes": c["bytecodes"]}
    out = {name: sum(c[e] for e in parts) for name, parts in FIGURES.items()}
    # KCachegrind's cycle estimate.
    out["CEst"] = out["instructions"] + 10 * (out["L1 misses"] + out["mispredicts"]) + 100 * out["LL misses"]
    return out


def measure(path: str, side: str, sides: dict[str, Side], calls: tuple[int, int],
            backend: str | None = None) -> dict[str, float]:
    if path == "cold":
        return run_cold(sides[side])
    runs = []
    for n in calls:
        if path == "stdio":
            runs.append(run_stdio(sides[side], n))
        elif path == "http":
            runs.append(run_http(sides[side], n))
        elif path == "proxy":  # "raw" is the floor's raw relay
            runs.append(run_http(sides["floor" if side == "raw" else side], n, backend, raw=side == "raw"))
        else:  # client: the same driver file for every side; each side's interpreter and mcpkit
            base, _, loop = side.partition("@")  # "NAME@uvloop": the same client on uvloop's loop
            s = sides["mcpkit" if base in ("floor", "asyncio") else base]
            kind = {"floor": "driver", "asyncio": "asyncio", "official": "official"}.get(base, "mcpkit")
            runs.append(run_client(kind, s.python, s.env, n, loop or "asyncio"))
    got = per_call(runs[0], runs[1], calls[1] - calls[0])
    if next(iter(got.values())) <= 0:
        raise RuntimeError(f"{path}/{side}: the run of {calls[1]} calls executed no more than the run of {calls[0]}: "
                           "something other than the calls differs between them (more calls between the counts help)")
    return got


def side_names(path: str, wanted: list[str]) -> list[str]:
    names = list(wanted)
    if path == "proxy":  # no official proxy: FastMCP's is bench/proxy.py's peer
        names = [s for s in names if s != "official"]
    if path in ("client", "proxy") and "floor" in names:
        names.insert(names.index("floor") + 1, "asyncio" if path == "client" else "raw")
    if path == "client":  # the asyncio driver and mcpkit's Client again, on uvloop's loop
        for name in ("asyncio", "mcpkit"):
            if name in names:
                names.insert(names.index(name) + 1, f"{name}@uvloop")
    return names



def report_bytecodes(results: dict[str, dict[str, dict[str, float]]], calls: tuple[int, int], label: str) -> str:
    lines = [f"# Bytecodes per call ({label})", "",
             f"bench/_opcount.py; per call = (run of {calls[1]} calls - run of {calls[0]}) / {calls[1] - calls[0]}, "
             f"after {WARMUP} warm-up calls (cold: the whole process); ÷ floor: the side's count over its path's floor",
             "", "| path | side | bytecodes | ÷ floor |", "|---|---|---:|---:|"]
    for path, by_side in results.items():
        floor = by_side.get("floor", {}).get("bytecodes")
        for side, counts in by_side.items():
            n = counts["bytecodes"]
            lines.append(f"| {path} | {side} | {n:,.0f} | {f'{n / floor:.2f}' if floor else ''} |")
    return "\n".join(lines) + "\n"


def report(results: dict[str, dict[str, dict[str, float]]], calls: tuple[int, int], label: str) -> str:
    if any("bytecodes" in c for by_side in results.values() for c in by_side.values()):
        return report_bytecodes(results, calls, label)
    lines = [f"# Counted cost per call ({label})", "",
             f"valgrind callgrind with cache and branch simulation; per call = (run of {calls[1]} calls - run of "
             f"{calls[0]}) / {calls[1] - calls[0]}, after {WARMUP} warm-up calls (cold: the whole process); "
             "CEst = Ir + 10 x (L1 misses + mispredicts) + 100 x LL misses; ÷ floor: the side's figure over "
             "its path's floor", "",
             "| path | side | instructions | ÷ floor | L1 misses | LL misses | mispredicts | CEst | ÷ floor |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for path, by_side in results.items():
        floor = figures(by_side["floor"]) if "floor" in by_side else None
        for side, counts in by_side.items():
            f = figures(counts)

            def ratio(key: str, f: dict[str, float] = f) -> str:
                return f"{f[key] / floor[key]:.2f}" if floor and floor[key] else ""
            lines.append(f"| {path} | {side} | {f['instructions']:,.0f} | {ratio('instructions')} | "
                         f"{f['L1 misses']:,.0f} | {max(f['LL misses'], 0.0):,.1f} | {f['mispredicts']:,.0f} | "
                         f"{f['CEst']:,.0f} | {ratio('CEst')} |")
    compared = [(path, figures(s["baseline"]), figures(s["mcpkit"])) for path, s in results.items()
                if "baseline" in s and "mcpkit" in s]
    if compared:
        lines.append("")
        lines.extend(f"- {path}: the baseline costs {b['instructions'] / m['instructions']:.2f}x this checkout's "
                     f"instructions and {b['CEst'] / m['CEst']:.2f}x its CEst" for path, b, m in compared)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma list from {','.join(PATHS)}")
    ap.add_argument("--sides", default="floor,mcpkit,official", help="comma list from floor,mcpkit,official "
                    "(the client path adds the asyncio driver beside floor, and it and mcpkit on uvloop; "
                    "--baseline adds baseline)")
    ap.add_argument("--calls", default="200,1200", help="the two call counts whose difference is measured")
    ap.add_argument("--baseline", metavar="REV", help="also measure mcpkit at commit REV")
    ap.add_argument("--no-install", action="store_true", help="fail rather than create bench/.venv-official")
    ap.add_argument("--save", metavar="NAME", help="write bench/results/instructions-NAME.md and .json")
    ap.add_argument("--json", metavar="FILE", help="write the counts as JSON to FILE")
    ap.add_argument("--bytecodes", action="store_true", help="count bytecodes (bench/_opcount.py) instead of "
                    "instructions (callgrind)")
    ap.add_argument("--render", metavar="FILE", help="print the table of a saved run (its .json) and exit")
    args = ap.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(report(saved["counts"], tuple(saved["calls"]), saved["label"]), end="")
        return 0
    paths = [p for p in args.paths.split(",") if p]
    wanted = [s for s in args.sides.split(",") if s]
    bad = [p for p in paths if p not in PATHS] + [s for s in wanted if s not in ("floor", "mcpkit", "official")]
    if bad:
        ap.error(f"unknown path or side: {', '.join(bad)}")
    lo, hi = (int(x) for x in args.calls.split(","))
    if not 0 <= lo < hi:
        ap.error("--calls: two counts, the first smaller")
    global COUNTER
    COUNTER = "bytecodes" if args.bytecodes else "callgrind"
    if not args.bytecodes and subprocess.run(["valgrind", "--version"], capture_output=True).returncode != 0:
        raise SystemExit("valgrind is not installed (Debian: apt-get install -y valgrind)")
    official = ensure_official_venv(args.no_install) if "official" in wanted else sys.executable
    baseline = None
    label = f"mcpkit at {subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}"
    if args.baseline:
        baseline, short = baseline_tree(args.baseline)
        add_baseline_side()
        wanted.insert(wanted.index("mcpkit") + 1 if "mcpkit" in wanted else len(wanted), "baseline")
        label += f", baseline {short}"
    sides = make_sides(official, baseline)
    # Byte-compile every mcpkit tree first (outside valgrind): otherwise the first run of a path
    # compiles (and writes) what it imports and the second does not, and their difference is not
    # the calls' (a clean clone has no byte code yet). The official SDK's pip install compiled it.
    trees = {REPO / "mcpkit"} | ({baseline / "mcpkit"} if baseline is not None else set())
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True, capture_output=True)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for path in paths:
        results[path] = {}
        backend = None
        if path == "proxy":  # mcpkit's echo server on HTTP, not counted
            backend = HttpServer(sides["mcpkit"], Pinning(False))
            backend.wait_ready()
        try:
            for side in side_names(path, wanted):
                if side == "baseline" and path == "proxy" and baseline and not (baseline / "mcpkit" / "proxy").is_dir():
                    print("  proxy  baseline: that commit has no proxy", flush=True)
                    continue
                t0 = time.perf_counter()
                results[path][side] = measure(path, side, sides, (lo, hi), backend.url if backend else None)
                f = figures(results[path][side])
                shown = "  ".join(f"{v:12,.0f} {'Ir' if k == 'instructions' else k}" for k, v in f.items()
                                  if k in ("instructions", "CEst", "bytecodes"))
                print(f"  {path:6} {side:9} {shown}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        finally:
            if backend is not None:
                backend.stop()
    text = report(results, (lo, hi), label)
    print(text)
    data = {"calls": [lo, hi], "warmup": WARMUP, "label": label, "counts": results}
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    if args.save:
        out = BENCH / "results" / f"{'bytecodes' if args.bytecodes else 'instructions'}-{args.save}"
        out.with_suffix(".md").write_text(text)
        out.with_suffix(".json").write_text(json.dumps(data, indent=1))
        print(f"wrote {out.relative_to(REPO)}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
