"""Helpers for the Streamable HTTP tests: run a real uvicorn server in a subprocess and
build raw, spec-shaped POSTs against it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
TEST_SERVER = SERVERS / "http_test_server.py"
SMALL_BODY_SERVER = SERVERS / "http_small_body.py"
VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@contextlib.contextmanager
def running_server(argv_for_port, *, timeout: float = 15.0) -> Iterator[str]:
    """Start ``argv_for_port(port)`` and yield ``http://127.0.0.1:PORT/mcp`` once it answers."""
    last_err = ""
    for _attempt in range(3):  # a free port can be taken between probing and binding
        port = free_port()
        proc = subprocess.Popen(argv_for_port(port), cwd=str(ROOT), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + timeout
        up = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                httpx.get(url, timeout=1.0)  # any HTTP answer (405) means it is serving
                up = True
                break
            except httpx.TransportError:
                time.sleep(0.05)
        if up:
            try:
                yield url
            finally:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                if proc.stderr is not None:
                    proc.stderr.close()
            return
        proc.kill()
        _, err = proc.communicate()
        last_err = err.decode(errors="replace")
    raise RuntimeError(f"HTTP test server did not start: {last_err}")


def mcpkit_serve_argv(path: Path = TEST_SERVER):
    return lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), str(path)]


def small_body_argv(port: int) -> list[str]:
    return [sys.executable, str(SMALL_BODY_SERVER), str(port)]


# ----------------------------------------------------------------------------- raw requests


def meta(version: str = VERSION, **extra: Any) -> dict[str, Any]:
    return {META_VERSION: version, META_CAPS: {}, **extra}


def body(method: str, params: dict[str, Any] | None = None, *, id: Any = 1, version: str = VERSION,
         with_meta: bool = True) -> dict[str, Any]:
    p = dict(params or {})
    if with_meta:
        p["_meta"] = {**meta(version), **p.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": p}


def headers_for(msg: dict[str, Any], *, version: str | None = None, **extra: str) -> dict[str, str]:
    """The headers a correct client sends for ``msg`` (plus ``extra``; a None value drops one)."""
    params = msg.get("params") or {}
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version or (params.get("_meta") or {}).get(META_VERSION, VERSION),
        "Mcp-Method": msg["method"],
    }
    if msg["method"] in ("tools/call", "prompts/get") and "name" in params:
        h["Mcp-Name"] = params["name"]
    elif msg["method"] == "resources/read" and "uri" in params:
        h["Mcp-Name"] = params["uri"]
    for k, v in extra.items():
        k = k.replace("_", "-")
        # drop case-insensitively
        for existing in [e for e in h if e.lower() == k.lower()]:
            del h[existing]
        if v is not None:
            h[k] = v
    return h


def post(client: httpx.Client, url: str, msg: Any, headers: dict[str, str] | None = None,
         content: bytes | None = None) -> httpx.Response:
    if content is None:
        content = json.dumps(msg).encode()
    if headers is None:
        headers = headers_for(msg)
    return client.post(url, content=content, headers=headers)


def raw_http(url: str, request: bytes, *, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """Send bytes on a fresh socket and read one (Content-Length-framed) response."""
    u = httpx.URL(url)
    with socket.create_connection((u.host, u.port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        length = int(hdrs.get("content-length", "0"))
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, hdrs, rest


def raw_post_bytes(url: str, payload: bytes, header_lines: Sequence[str]) -> bytes:
    u = httpx.URL(url)
    lines = [f"POST {u.raw_path.decode()} HTTP/1.1", f"Host: {u.host}:{u.port}",
             f"Content-Length: {len(payload)}", "Connection: close", *header_lines]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
