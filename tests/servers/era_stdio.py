"""A fake stdio MCP server for the client's era-detection tests (tests/test_client_era.py).

    python era_stdio.py MODE LOGFILE

MODE is the behaviour, or ``@PATH`` to read it from a file at startup (so a test can
change what "the same command line" speaks between runs). Every message received is
appended to LOGFILE as one JSON line (``{"method": ..., "id": ..., "params": ...}``) so a
test can count probes and handshakes.

Modes:
  legacy-32601 | legacy-32600 | legacy-32602 | legacy-32603 | legacy-32000
      a 2025-11-25 server: any request before ``initialize`` (``server/discover`` included)
      is answered with that error code (-32000 says "Server not initialized").
  legacy-silent
      a 2025-11-25 server that never answers anything before ``initialize``.
  legacy-requests
      legacy-32601, plus a ``tools/call`` of ``ask`` sends ping, roots/list,
      sampling/createMessage and elicitation/create to the client first, and returns
      their answers as JSON text.
  modern
      a 2026-07-28-only server: ``server/discover`` answers a DiscoverResult; ``initialize``
      is an unknown method (-32601, naming the supported versions).
  modern-32022
      ``modern``, but any request whose ``_meta`` names another version than 2026-07-28
      gets -32022 with ``data.supported``.
  modern-future
      answers every modern request with -32022, ``data.supported`` = ["2099-01-01"].
  modern-legacyonly
      answers every modern request with -32022, ``data.supported`` = ["2025-11-25"], and
      answers ``initialize`` (a dual-era implementation configured for 2025-11-25 only).
  dual
      ``modern``, and ``initialize`` is answered too (2025-11-25).
  modern-discover-fails
      ``modern``, but ``server/discover`` fails inside the server (-32603).

A modern mode refuses ``initialize`` with -32600 once it has answered a modern request (as
mcpkit's own stdio server does: the session already speaks 2026-07-28).

``MODE+slow=SECONDS`` sleeps that long before reading anything (a server busy starting);
``MODE+slowonce=SECONDS`` only on the first start for this LOGFILE (a first ``uvx`` run).
Each log line carries the ``pid`` of the process that received it.

In either era it serves one tool ``echo`` (``{"message"}`` -> "Echo: <message>"), one
resource ``mem://greeting`` and one prompt ``greet``.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PV = "io.modelcontextprotocol/protocolVersion"

arg_mode, log_path = sys.argv[1], sys.argv[2]
if arg_mode.startswith("@"):
    with open(arg_mode[1:], encoding="utf-8") as f:
        MODE = f.read().strip()
else:
    MODE = arg_mode
SLOW = 0.0
if "+" in MODE:
    MODE, _, option = MODE.partition("+")
    name, _, seconds = option.partition("=")
    first_start = not os.path.exists(log_path + ".started")
    with open(log_path + ".started", "a", encoding="utf-8"):
        pass
    if name == "slow" or (name == "slowonce" and first_start):
        SLOW = float(seconds)
IS_LEGACY = MODE.startswith("legacy")

TOOLS = [{
    "name": "echo",
    "description": "Echo a message back",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}]
if MODE == "legacy-requests":
    TOOLS.append({"name": "ask", "description": "Asks the client things", "inputSchema": {"type": "object"}})

stdin = sys.stdin.buffer
stdout = sys.stdout.buffer


def log(msg: dict) -> None:
    with open(log_path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"method": msg.get("method"), "id": msg.get("id"), "params": msg.get("params"),
                            "response": "method" not in msg, "pid": os.getpid()}) + "\n")


def send(obj: dict) -> None:
    stdout.write(json.dumps({"jsonrpc": "2.0", **obj}).encode() + b"\n")
    stdout.flush()


def result(id, res: dict) -> None:
    send({"id": id, "result": res})


def error(id, code: int, message: str, data=None) -> None:
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"id": id, "error": err})


def cacheable(res: dict) -> dict:
    """Modern complete results of cacheable methods carry the cache hints."""
    return res if IS_LEGACY else {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", **res}


def complete(res: dict) -> dict:
    return res if IS_LEGACY else {"resultType": "complete", **res}


def read_message() -> dict | None:
    while True:
        line = stdin.readline()
        if not line:
            return None
        if not line.strip():
            continue
        msg = json.loads(line)
        log(msg)
        return msg


def ask_client(id) -> None:
    """legacy-requests: ask the client for things mid-call, then answer the tools/call."""
    asks = {
        "s-ping": ("ping", None),
        "s-roots": ("roots/list", None),
        "s-sampling": ("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 5}),
        "s-elicit": ("elicitation/create", {
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
    }
    for rid, (method, params) in asks.items():
        req = {"id": rid, "method": method}
        if params is not None:
            req["params"] = params
        send(req)
    answers: dict = {}
    while len(answers) < len(asks):
        msg = read_message()
        if msg is None:
            sys.exit(0)
        if "method" in msg:
            continue  # (a notification, or a request we are not going to serve mid-call)
        answers[msg["id"]] = msg.get("result") if "result" in msg else {"error": msg.get("error")}
    result(id, {"content": [{"type": "text", "text": json.dumps(answers, sort_keys=True)}], "isError": False})


def serve(msg: dict) -> None:
    method, id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "tools/list":
        result(id, cacheable({"tools": TOOLS}))
    elif method == "tools/call":
        name = params.get("name")
        if name == "echo":
            text = "Echo: " + str((params.get("arguments") or {}).get("message"))
            result(id, complete({"content": [{"type": "text", "text": text}], "isError": False}))
        elif name == "ask" and MODE == "legacy-requests":
            ask_client(id)
        else:
            error(id, -32602, f"unknown tool {name!r}")
    elif method == "resources/list":
        result(id, cacheable({"resources": [{"uri": "mem://greeting", "name": "greeting"}]}))
    elif method == "resources/read":
        if params.get("uri") != "mem://greeting":
            error(id, -32002 if IS_LEGACY else -32602, "no such resource")
        else:
            result(id, cacheable({"contents": [{"uri": "mem://greeting", "text": f"hello from {MODE}"}]}))
    elif method == "prompts/list":
        result(id, cacheable({"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]}))
    elif method == "prompts/get":
        who = (params.get("arguments") or {}).get("who", "you")
        result(id, complete({"messages": [{"role": "user", "content": {"type": "text", "text": f"Hello, {who}"}}]}))
    elif method == "ping":
        result(id, {})
    else:
        error(id, -32601, f"Method not found: {method}")


CAPS = {"tools": {}, "resources": {}, "prompts": {}}
#: Modes that answer -32022 to any other version than these.
SUPPORTED = {"modern-32022": [MODERN], "modern-future": ["2099-01-01"], "modern-legacyonly": [LEGACY]}


def initialize_result() -> dict:
    return {"protocolVersion": LEGACY, "capabilities": CAPS,
            "serverInfo": {"name": f"era-fake-{MODE}", "version": "1.0"}, "instructions": f"I am {MODE}."}


def main() -> None:
    initialized = False
    spoke_modern = False
    time.sleep(SLOW)
    while True:
        msg = read_message()
        if msg is None:
            return
        method, id = msg.get("method"), msg.get("id")
        if method is None or id is None:
            if method == "notifications/initialized":
                initialized = True
            continue  # responses and notifications
        params = msg.get("params") or {}
        if IS_LEGACY:
            if method == "initialize":
                initialized = True  # (not waiting for notifications/initialized: lenient, like many servers)
                result(id, initialize_result())
            elif not initialized:
                if MODE == "legacy-silent":
                    continue
                code = {"legacy-32600": -32600, "legacy-32602": -32602, "legacy-32603": -32603,
                        "legacy-32000": -32000}.get(MODE, -32601)
                message = {-32600: "Invalid Request", -32602: "Invalid params", -32603: "Internal error",
                           -32000: "Server not initialized", -32601: f"Method not found: {method}"}[code]
                error(id, code, message)
            else:
                serve(msg)
            continue
        # modern
        if method == "initialize":
            if spoke_modern:
                error(id, -32600, f"this stdio session already speaks {MODERN} (per-request _meta); "
                      "initialize is not accepted now")
            elif MODE in ("dual", "modern-legacyonly"):
                initialized = True
                result(id, initialize_result())
            else:
                error(id, -32601, f"initialize is not supported; this server speaks {MODERN} only",
                      {"supported": [MODERN]})
            continue
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(PV) if isinstance(meta, dict) else None
        if version is None and MODE in ("dual", "modern-legacyonly") and initialized:
            serve(msg)  # a legacy session on the dual server
            continue
        if MODE in SUPPORTED and version not in SUPPORTED[MODE]:
            error(id, -32022, f"Unsupported protocol version {version!r}", {"supported": SUPPORTED[MODE], "requested": version})
            continue
        if version is None:
            error(id, -32602, "missing _meta protocol version")
            continue
        spoke_modern = MODE != "dual"  # (the dual fake stays lenient)
        if method == "server/discover" and MODE == "modern-discover-fails":
            error(id, -32603, "Internal error: discover exploded (the instructions callable raised)")
        elif method == "server/discover":
            result(id, {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": CAPS,
                        "ttlMs": 0, "cacheScope": "private", "instructions": f"I am {MODE}.",
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": f"era-fake-{MODE}", "version": "1.0"}}})
        else:
            serve(msg)


if __name__ == "__main__":
    main()
