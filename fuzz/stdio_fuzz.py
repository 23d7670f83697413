"""Fuzz an MCP server over stdio: hostile and valid frames, every answer accounted for.

    PYTHONPATH=. python fuzz/stdio_fuzz.py [--cases 3000] [--seed 1] [--server "python examples/demo.py"]

Frames (see ``fuzz/_frames.py``): valid requests, broken ``_meta``, wrong types, unknown
methods and versions, notifications, responses, malformed and mutated JSON, deep nesting
(around the limit and far past it), huge strings, bad UTF-8, byte-order marks, lone
surrogates, odd ids, batches, cancellations, legacy handshakes.

Checked: every frame owed an answer gets exactly one (with its id); no id is answered more
often than frames carried it, and no answer carries an id never sent; every output line is
a well-formed JSON-RPC message; the server stays up, exits 0 at end of input, and logs no
traceback. Exit status 0 when all hold; the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _frames import META, FrameGen, Ledger, expect  # noqa: E402

MAX_LINE = 16 * 1024 * 1024  # the stdio transport's line limit


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


LEGACY_OPENING = [
    b'{"jsonrpc":"2.0","id":"legacy-init","method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"mcpkit-fuzz","version":"0"}}}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
]


def run(cases: int = 3000, seed: int = 1, server: list[str] | None = None, *, big: bool = True,
        oversize: bool = False, settle: float = 60.0, verbose: bool = False, legacy: bool = False) -> dict[str, Any]:
    """Run one fuzzing session; returns the summary (``ok`` says whether every check held).

    ``legacy``: open a 2025-11-25 session first (initialize), so the frames meet the legacy
    path; otherwise the first request makes the process a 2026-07-28 one.
    """
    argv = server or [sys.executable, str(ROOT / "examples" / "demo.py")]
    gen = FrameGen(seed, big=big)
    ledger = Ledger()
    lock = threading.Lock()
    frames_by_id: dict[Any, tuple[str, bytes]] = {}
    stderr = tempfile.TemporaryFile()
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=str(ROOT), env=server_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr, bufsize=1 << 20)
    assert proc.stdin is not None and proc.stdout is not None
    out_lines = 0

    def read() -> None:
        nonlocal out_lines
        assert proc.stdout is not None
        for line in proc.stdout:
            with lock:
                out_lines += 1
                ledger.take(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def send(kind: str, data: bytes) -> bool:
        data = data.replace(b"\n", b" ")  # one frame per line
        e = expect(data)
        with lock:
            ledger.expect(e)
        for rid in e.may:
            frames_by_id.setdefault(json.dumps(rid), (kind, data[:400]))  # (a prefix: enough to show)
        try:
            proc.stdin.write(data + b"\n")  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            return False
        return True

    died_at: int | None = None
    sent_bytes = 0
    kinds: dict[str, int] = {}
    if legacy:
        alive = all([send("legacy", frame) for frame in LEGACY_OPENING])
    else:
        alive = send("valid", json.dumps({"jsonrpc": "2.0", "id": "first", "method": "tools/list",
                                          "params": {"_meta": META}}).encode())
    for i in range(cases):
        if not alive:
            died_at = i
            break
        case = gen.case()
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
        sent_bytes += len(case.data)
        alive = send(case.kind, case.data)
        if i % 100 == 99:
            try:
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                alive = False
            if proc.poll() is not None:
                alive = False
        if verbose and i % 1000 == 999:
            print(f"  {i + 1} cases, {time.monotonic() - started:.1f}s", file=sys.stderr)
    if alive and oversize:
        # Past the line limit the transport skips the line unread: its error cannot carry the id.
        with lock:
            ledger.excused.add(("str", "oversize"))
        alive = send("oversize", b'{"jsonrpc":"2.0","id":"oversize","method":"tools/list","params":{"x":"'
                     + b"x" * MAX_LINE + b'"}}')
    if alive:
        alive = send("valid", json.dumps({"jsonrpc": "2.0", "id": "sentinel", "method": "tools/list",
                                          "params": {"_meta": META}}).encode())
        try:
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            alive = False
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        with lock:
            missing = ledger.missing()
        if not missing or proc.poll() is not None:
            break
        time.sleep(0.05)
    up_at_end = proc.poll() is None
    try:
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    try:
        code = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    reader.join(10)
    stderr.seek(0)
    err = stderr.read().decode("utf-8", "replace")
    stderr.close()
    with lock:
        summary = ledger.summary()
        missing = ledger.missing()
    tracebacks = err.count("Traceback (most recent call last)")
    summary.update({
        "cases": cases, "seed": seed, "legacy": legacy, "sent_bytes": sent_bytes, "output_lines": out_lines,
        "server_up_until_eof": up_at_end and died_at is None, "exit_code": code, "tracebacks": tracebacks,
        "seconds": round(time.monotonic() - started, 1), "kinds": kinds,
    })
    summary["ok"] = (summary["unanswered"] == 0 and summary["duplicates"] == 0 and summary["unexpected"] == 0
                     and summary["invalid_lines"] == 0 and summary["server_up_until_eof"] and code == 0 and tracebacks == 0)
    if not summary["ok"]:
        summary["examples"] = {
            "unanswered": [_example(frames_by_id, rid) for rid in missing[:5]],
            "duplicates": [_example(frames_by_id, rid) for rid in ledger.duplicates[:5]],
            "unexpected": [repr(rid)[:100] for rid in ledger.unexpected[:5]],
            "invalid_lines": ledger.invalid[:5],
            "stderr_tail": err[-3000:],
        }
    return summary


def _example(frames_by_id: dict[Any, tuple[str, bytes]], rid: Any) -> dict[str, Any]:
    kind, data = frames_by_id.get(json.dumps(rid), ("?", b""))
    return {"id": repr(rid)[:100], "kind": kind, "frame": data[:400].decode("utf-8", "backslashreplace")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=3000, help="frames to send (default 3000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--server", help='server command line (default: "python examples/demo.py")')
    ap.add_argument("--small", action="store_true", help="no multi-megabyte frames")
    ap.add_argument("--oversize", action="store_true", help="also send one line past the 16 MiB line limit")
    ap.add_argument("--settle", type=float, default=60.0, help="seconds to wait for owed answers at the end")
    ap.add_argument("--legacy", action="store_true", help="open a 2025-11-25 session (initialize) before fuzzing")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    server = shlex.split(args.server) if args.server else None
    summary = run(args.cases, args.seed, server, big=not args.small, oversize=args.oversize, settle=args.settle,
                  verbose=args.verbose, legacy=args.legacy)
    print(json.dumps(summary, indent=None if not args.verbose else 2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
