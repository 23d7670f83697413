"""The stdio floor: a bare Python server with the standard library's json, reading one line,
answering it with one line. It answers ``server/discover`` and ``tools/call echo`` (and
``tools/list``, for clients that list before calling) with the shapes an MCP server answers,
and nothing else: no validation, no dispatch table, no event loop. Its throughput is what no
MCP library on CPython can beat by much.

argv: ``stdio`` (the same as the echo servers).
"""

import json
import sys

META = {"io.modelcontextprotocol/serverInfo": {"name": "echo", "version": "1.0.0"}}
DISCOVER = {
    "resultType": "complete", "_meta": META, "ttlMs": 0, "cacheScope": "private",
    "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": False}},
}
TOOLS = {
    "resultType": "complete", "_meta": META, "ttlMs": 0, "cacheScope": "private",
    "tools": [{"name": "echo", "description": "Echo the text back.",
               "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}],
}


def answer(msg: dict) -> dict | None:
    if "id" not in msg:
        return None  # a notification
    method = msg.get("method")
    if method == "tools/call":
        params = msg["params"]
        text = params["arguments"]["text"]
        result = {"resultType": "complete", "_meta": META, "content": [{"type": "text", "text": text}]}
    elif method == "server/discover":
        result = DISCOVER
    elif method == "tools/list":
        result = TOOLS
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def main() -> None:
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    loads, dumps = json.loads, json.dumps
    for line in stdin:
        reply = answer(loads(line))
        if reply is not None:
            out.write(dumps(reply, separators=(",", ":")).encode() + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
