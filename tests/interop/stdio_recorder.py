"""Run an MCP stdio server as a child and record every line of its stdio traffic.

Usage: ``python stdio_recorder.py LOG COMMAND [ARGS...]`` (a ``--`` before COMMAND is
optional: some clients' option parsers swallow it).

The MCP client talks to this process exactly as it would to COMMAND: each line the client
writes is appended to LOG, then passed to the child's stdin; each line the child writes
is appended to LOG, then passed to our stdout. The child's stderr is inherited. LOG gets
one JSON object per line: ``{"dir": "c2s" | "s2c", "line": "<the raw line>"}``, flushed
at once so a test can read it while (or after) the session runs. Used by
``tests/test_inspector.py`` to prove what a third-party client sent to our server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO


def main(argv: list[str]) -> int:
    log_path, command = (argv[0], argv[1:]) if argv else ("", [])
    if command[:1] == ["--"]:
        command = command[1:]
    if not log_path or not command:
        print("usage: stdio_recorder.py LOG [--] COMMAND [ARGS...]", file=sys.stderr)
        return 2
    log = open(log_path, "a", encoding="utf-8")
    lock = threading.Lock()

    def record(direction: str, raw: bytes) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not text:
            return
        with lock:
            log.write(json.dumps({"dir": direction, "line": text}) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def pump(src: IO[bytes], dst: IO[bytes], direction: str) -> None:
        try:
            for raw in iter(src.readline, b""):
                record(direction, raw)
                try:
                    dst.write(raw)
                    dst.flush()
                except (BrokenPipeError, ValueError, OSError):
                    return
        finally:
            try:
                dst.close()
            except OSError:
                pass

    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    to_child = threading.Thread(target=pump, args=(stdin, child.stdin, "c2s"), daemon=True)
    from_child = threading.Thread(target=pump, args=(child.stdout, stdout, "s2c"), daemon=True)
    to_child.start()
    from_child.start()

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)

    code = child.wait()
    from_child.join(5)
    log.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))
