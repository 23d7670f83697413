"""``GET /healthz`` and ``GET /readyz``: probes for orchestrators (Kubernetes, load balancers).

Both live outside the MCP path and are answered before authentication, rate limits and the
``Host`` allow-list: a kubelet probes ``http://POD_IP:PORT/healthz`` with the pod's IP as
``Host``, which no allow-list names, and carries no token.

What still applies, for DNS-rebinding sanity: only ``GET`` and ``HEAD`` (anything else is
405), a request carrying an ``Origin`` that the allow-list refuses is 403 (a browser page
of another origin; probes send no ``Origin``), no body is read, the answers are tiny and
never cached, and ``/readyz`` names the checks that failed with the exception's class
only (the details go to the server's log). A page that rebinds its name to the server can
learn that it is alive or which backend is down, nothing more.

- ``/healthz``: 200 ``{"status":"ok"}`` while the process serves (no check runs).
- ``/readyz``: 200 ``{"status":"ready"}`` when the server's readiness checks pass (its
  Redis backends answer a PING, and every ``server.readiness_check``); else 503
  ``{"status":"unavailable","failed":{"redis":"BackendUnavailable",...}}``.
"""

from __future__ import annotations

import json
from typing import Any

from ._asgi import Send, respond
from ._hosts import HostPolicy
from ._interface import Dispatcher

_JSON = b"application/json"
_NO_STORE = ((b"cache-control", b"no-store"),)
_ALIVE = b'{"status":"ok"}'
_READY = b'{"status":"ready"}'


def health_paths(mcp_path: str, healthz: str | None, readyz: str | None) -> dict[str, str]:
    """path -> ``"alive"`` | ``"ready"``; ValueError for a path that is not absolute or that
    is the MCP endpoint's."""
    out: dict[str, str] = {}
    for kind, path in (("alive", healthz), ("ready", readyz)):
        if not path:
            continue  # None or "": that probe is off
        if not path.startswith("/"):
            raise ValueError(f"the {kind} probe path {path!r} must start with /")
        path = path.rstrip("/") or "/"
        if path == mcp_path:
            raise ValueError(f"the {kind} probe path {path} is the MCP endpoint's path")
        if path in out:
            raise ValueError(f"/healthz and /readyz must differ (both are {path})")
        out[path] = kind
    return out


async def answer(kind: str, scope: dict[str, Any], send: Send, server: Dispatcher, policy: HostPolicy) -> None:
    method = scope["method"]
    if method not in ("GET", "HEAD"):
        await respond(send, 405, b'{"status":"method not allowed"}', _JSON, ((b"allow", b"GET, HEAD"), *_NO_STORE))
        return
    for name, value in scope["headers"]:
        if name == b"origin" and not policy.origin_ok(value.decode("latin-1")):
            await respond(send, 403, b'{"status":"forbidden origin"}', _JSON, _NO_STORE)
            return
    if kind == "alive":
        status, body = 200, _ALIVE
    else:
        failed = await server.readiness()
        status, body = (200, _READY) if not failed else (
            503, json.dumps({"status": "unavailable", "failed": failed}, separators=(",", ":")).encode())
    if method == "HEAD":
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", _JSON), (b"content-length", str(len(body)).encode()), *_NO_STORE]})
        await send({"type": "http.response.body", "body": b""})
        return
    await respond(send, status, body, _JSON, _NO_STORE)
