"""Processes that are not good MCP servers, for client and CLI failure paths.

Usage: misbehaving.py MODE
  crash     exit 3 at once, writing nothing to stdout
  silent    read stdin until EOF, never answer, then exit 0
  stubborn  say "ready", then ignore stdin EOF and SIGTERM (needs SIGKILL)
  termable  say "ready", ignore stdin EOF, exit 0 on SIGTERM
  polite    say "ready", exit 0 as soon as stdin reaches EOF
  erroring  answer every request with a JSON-RPC -32603 error
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

mode = sys.argv[1]


def note(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def ready() -> None:
    os.write(1, b"ready\n")


if mode == "crash":
    note("crashing on purpose")
    sys.exit(3)
elif mode == "silent":
    sys.stdin.buffer.read()
    sys.exit(0)
elif mode == "stubborn":
    signal.signal(signal.SIGTERM, lambda *a: note("SIGTERM ignored"))
    ready()
    sys.stdin.buffer.read()
    note("EOF ignored")
    while True:
        time.sleep(0.05)
elif mode == "termable":
    signal.signal(signal.SIGTERM, lambda *a: (note("SIGTERM"), os._exit(0)))
    ready()
    sys.stdin.buffer.read()
    note("EOF ignored")
    while True:
        time.sleep(0.05)
elif mode == "polite":
    ready()
    sys.stdin.buffer.read()
    note("EOF")
    sys.exit(0)
elif mode == "erroring":
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" in msg:
            err = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": "always failing"}}
            os.write(1, json.dumps(err).encode() + b"\n")
else:
    sys.exit(f"unknown mode {mode!r}")
