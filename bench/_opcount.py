"""Count the bytecodes a Python process executes: ``bench/instructions.py --bytecodes`` runs
each measured process under this instead of callgrind.

    python bench/_opcount.py OUT.json SCRIPT [ARGS...]
    python bench/_opcount.py OUT.json -m MODULE [ARGS...]

Every frame of every thread is traced with ``f_trace_opcodes``; at exit (a normal exit, stdin's
EOF, or SIGTERM, which the program never sees) OUT.json gets ``{"bytecodes": N,
"functions": {"file:function": n, ...}}`` (the 200 functions that ran the most). Tracing makes
the process 20-50x slower and counts what would run without it: the count is the program's.
Processes the measured one starts inherit the blocked SIGTERM (end them by their stdin, or SIGKILL).
Stdlib only (it runs under every side's interpreter).
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import runpy
import signal
import sys
import threading
from types import FrameType
from typing import Any


def main() -> None:
    out, rest = sys.argv[1], sys.argv[2:]
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = f"{code.co_filename}:{code.co_name}"

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return local
        return local

    written = threading.Lock()

    def dump() -> None:
        if not written.acquire(blocking=False):
            return
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        now = dict(counts)
        top = dict(collections.Counter(now).most_common(200))
        with open(out, "w") as f:
            json.dump({"bytecodes": sum(now.values()), "functions": top}, f)

    def on_term() -> None:
        # SIGTERM is blocked in every thread but this one's wait: a Python-level handler would
        # run only when the main thread next runs bytecode, which a loop idle in C (uvloop's)
        # never does. The counts are written as the signal arrives, and the process ends.
        signal.sigwait({signal.SIGTERM})
        dump()
        os._exit(0)

    atexit.register(dump)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    threading.Thread(target=on_term, name="opcount-sigterm", daemon=True).start()  # started untraced
    if rest[:1] == ["-m"]:
        sys.argv = [rest[1], *rest[2:]]
        threading.settrace(tracer)
        sys.settrace(tracer)
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = rest
        sys.path[0] = os.path.dirname(os.path.abspath(rest[0]))
        threading.settrace(tracer)
        sys.settrace(tracer)
        runpy.run_path(rest[0], run_name="__main__")


if __name__ == "__main__":
    main()
