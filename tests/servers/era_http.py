"""A fake Streamable HTTP MCP server for the client's era-detection tests (tests/test_client_era.py).

    python era_http.py STATE_DIR

Serves http://127.0.0.1:PORT/mcp on a free port and prints PORT on stdout once listening.
The behaviour is read from ``STATE_DIR/mode`` on every request (so a test can change what
the same origin speaks); every HTTP request is appended to ``STATE_DIR/log`` as one JSON
line: ``{"http", "method", "id", "session", "version", "mcp_method", "status"}``.

Modes:
  legacy-empty400 | legacy-html404 | legacy-json400 | legacy-json400-noid
      a 2025-11-25 server. A POST that is neither ``initialize`` nor inside a session gets:
      400 with an empty body / a 404 HTML page / 400 with a JSON-RPC -32000 body ("Bad
      Request: No valid session ID provided" with ``"id": null``, what the TypeScript SDK
      v1 sends) / the same body without ``id`` (as the 2026-07-28 schema wants it).
      ``initialize`` mints an ``Mcp-Session-Id``; GET opens an SSE stream (kept open with
      comments); DELETE ends the session.
  modern
      a strict 2026-07-28-only server: ``Mcp-Method`` and ``MCP-Protocol-Version`` must match
      the body (else 400 -32020), the version must be 2026-07-28 (else 400 -32022 with
      ``data.supported``); GET and DELETE are 405.
  modern-404discover
      ``modern``, but ``server/discover`` is a 404 with a JSON-RPC -32601 body.
  401 | 403
      every request is refused with that status.
  hang
      a POST is answered only after 5 s (with a 504).

Both eras serve the tool ``echo``, the resource ``mem://greeting`` and the prompt ``greet``.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PV = "io.modelcontextprotocol/protocolVersion"

STATE = sys.argv[1]
_lock = threading.Lock()
_sessions: set[str] = set()
_ids = itertools.count(1)

TOOLS = [{
    "name": "echo",
    "description": "Echo a message back",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}]
CAPS = {"tools": {}, "resources": {}, "prompts": {}}


def mode() -> str:
    with open(os.path.join(STATE, "mode"), encoding="utf-8") as f:
        return f.read().strip()


def log(entry: dict) -> None:
    with _lock, open(os.path.join(STATE, "log"), "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def serve(method: str, params: dict, legacy: bool) -> tuple[dict | None, dict | None]:
    """(result, error) of one request, in either era."""

    def cacheable(res: dict) -> dict:
        return res if legacy else {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", **res}

    def complete(res: dict) -> dict:
        return res if legacy else {"resultType": "complete", **res}

    if method == "tools/list":
        return cacheable({"tools": TOOLS}), None
    if method == "tools/call":
        if params.get("name") != "echo":
            return None, {"code": -32602, "message": f"unknown tool {params.get('name')!r}"}
        text = "Echo: " + str((params.get("arguments") or {}).get("message"))
        return complete({"content": [{"type": "text", "text": text}], "isError": False}), None
    if method == "resources/read":
        if params.get("uri") != "mem://greeting":
            return None, {"code": -32002 if legacy else -32602, "message": "no such resource"}
        return cacheable({"contents": [{"uri": "mem://greeting", "text": "hello over http"}]}), None
    if method == "prompts/get":
        who = (params.get("arguments") or {}).get("who", "you")
        return complete({"messages": [{"role": "user", "content": {"type": "text", "text": f"Hello, {who}"}}]}), None
    if method == "ping":
        return {}, None
    return None, {"code": -32601, "message": f"Method not found: {method}"}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _entry(self, **kw) -> dict:
        return {"http": self.command, "session": self.headers.get("Mcp-Session-Id"),
                "version": self.headers.get("MCP-Protocol-Version"), "mcp_method": self.headers.get("Mcp-Method"),
                "last_event_id": self.headers.get("Last-Event-ID"), **kw}

    def _send(self, status: int, body: bytes = b"", ctype: str | None = None, headers: dict | None = None) -> None:
        # Logged before answering, so the log's order is the order the client saw answers in.
        log(self._entry(status=status, **getattr(self, "_msg", {})))
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _rpc(self, status: int, id, result=None, error=None, headers: dict | None = None, null_id: bool = False) -> None:
        msg: dict = {"jsonrpc": "2.0"}
        if id is not None or null_id:
            msg["id"] = id
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        self._send(status, json.dumps(msg).encode(), "application/json", headers)

    # ---------------------------------------------------------------- POST
    def do_POST(self) -> None:
        m = mode()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            msg = json.loads(body)
        except ValueError:
            msg = {}
        method, id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        self._msg = {"method": method, "id": id, "response": "method" not in msg}
        self._post(m, msg, method, id, params)

    def _post(self, m: str, msg: dict, method, id, params) -> int:
        if m == "hang":
            time.sleep(5)
            self._send(504)
            return 504
        if m in ("401", "403"):
            extra = {"WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth"'} if m == "401" else {}
            self._send(int(m), b'{"error": "unauthorized"}', "application/json", extra)
            return int(m)
        if m.startswith("legacy"):
            return self._legacy_post(m, msg, method, id, params)
        return self._modern_post(m, method, id, params)

    def _legacy_post(self, m: str, msg: dict, method, id, params) -> int:
        if method == "initialize":
            sid = f"sess-{next(_ids)}"
            with _lock:
                _sessions.add(sid)
            version = params.get("protocolVersion")
            self._rpc(200, id, {"protocolVersion": version if version in (LEGACY, "2025-06-18", "2025-03-26") else LEGACY,
                                "capabilities": CAPS, "serverInfo": {"name": f"era-http-{m}", "version": "1.0"}},
                      headers={"Mcp-Session-Id": sid})
            return 200
        sid = self.headers.get("Mcp-Session-Id")
        if sid not in _sessions:
            if m == "legacy-empty400":
                self._send(400)
                return 400
            if m == "legacy-html404":
                self._send(404, b"<!DOCTYPE html><html><body><h1>Not Found</h1></body></html>", "text/html; charset=utf-8")
                return 404
            self._rpc(400, None, error={"code": -32000, "message": "Bad Request: No valid session ID provided"},
                      null_id=m == "legacy-json400")
            return 400
        if method is None or id is None:  # a notification, or our answer to a server request
            self._send(202)
            return 202
        result, error = serve(method, params, legacy=True)
        self._rpc(200, id, result, error)
        return 200

    def _modern_post(self, m: str, method, id, params) -> int:
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(PV) if isinstance(meta, dict) else None
        if self.headers.get("Mcp-Method") != method or self.headers.get("MCP-Protocol-Version") != version:
            self._rpc(400, id, error={"code": -32020, "message": "Mcp-Method / MCP-Protocol-Version headers missing "
                                      f"or not matching the body; this server speaks {MODERN} only"})
            return 400
        if version != MODERN:
            self._rpc(400, id, error={"code": -32022, "message": f"Unsupported protocol version {version!r}",
                                      "data": {"supported": [MODERN], "requested": version}})
            return 400
        if id is None:
            self._send(202)
            return 202
        if method == "server/discover":
            if m == "modern-404discover":
                self._rpc(404, id, error={"code": -32601, "message": "Method not found: server/discover"})
                return 404
            self._rpc(200, id, {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": CAPS,
                                "ttlMs": 0, "cacheScope": "private",
                                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": f"era-http-{m}", "version": "1.0"}}})
            return 200
        result, error = serve(method, params, legacy=False)
        if error is not None and error["code"] == -32601:
            self._rpc(404, id, error=error)
            return 404
        self._rpc(200, id, result, error)
        return 200

    # ---------------------------------------------------------------- GET / DELETE
    def do_GET(self) -> None:
        self._msg = {"method": None, "id": None, "response": False}
        m = mode()
        sid = self.headers.get("Mcp-Session-Id")
        if not m.startswith("legacy") or m in ("401", "403"):
            self._send(405)
            return
        if sid not in _sessions:
            self._send(400 if sid is None else 404)
            return
        log(self._entry(status=200, **self._msg))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline and sid in _sessions:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    def do_DELETE(self) -> None:
        self._msg = {"method": None, "id": None, "response": False}
        m = mode()
        sid = self.headers.get("Mcp-Session-Id")
        if not m.startswith("legacy"):
            self._send(405)
            return
        with _lock:
            known = sid in _sessions
            _sessions.discard(sid)
        self._send(200 if known else 404)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
