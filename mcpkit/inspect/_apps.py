"""The inspector as an MCP Apps host (``io.modelcontextprotocol/ui``, SEP-1865).

When a tool with ``_meta.ui.resourceUri`` has been called, the page asks ``POST
/api/app/open {"uri", "tool"}``: the inspector reads the ``ui://`` resource (recorded in the
history), checks it is ``text/html;profile=mcp-app``, builds the Content-Security-Policy the
resource asks for (the spec's restrictive default when it asks nothing; sources that are not
plain origins are dropped and reported) and keeps the document under a one-time frame id.

The page then loads ``/frame/<id>`` in ``<iframe sandbox="allow-scripts"
referrerpolicy="no-referrer">``. That response carries the policy plus ``sandbox
allow-scripts``, so the app runs in an opaque origin: it cannot read the inspector's page,
cookies or storage, its requests to the inspector carry ``Origin: null`` (refused) and no
token, and it never sees the token (no referrer; the frame id is not the token and is
spent on first load, or after 60 s).

The page relays the app's JSON-RPC over ``postMessage`` (``static/apps.js``): ``tools/call``
goes to ``POST /api/app/call {"frameId", "name", "arguments"}`` (refused unless the tool's
visibility includes ``app``), ``resources/read`` to ``/api/read``; each is in the history with
``"from": "app"``.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from ..client.apps import AppBridge, tool_ui

if TYPE_CHECKING:
    from ._app import Inspector

__all__ = ["AppFrames", "allow_attribute", "content_security_policy", "tool_ui"]

APP_MIME_TYPE = "text/html;profile=mcp-app"
FRAME_TTL = 60.0
#: A CSP source the inspector accepts from a resource: scheme://host[:port][/path], host may start with *.
_SOURCE_RE = re.compile(r"^(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9.-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~/%-]*)?$")
PERMISSION_FEATURES = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation",
                       "clipboardWrite": "clipboard-write"}


def _sources(csp: dict[str, Any], key: str, dropped: list[str]) -> list[str]:
    value = csp.get(key)
    if not isinstance(value, list):
        return []
    out = []
    for src in value:
        if isinstance(src, str) and _SOURCE_RE.match(src):
            out.append(src)
        else:
            dropped.append(f"{key}: {src!r}")
    return out


def content_security_policy(csp: Any) -> tuple[str, list[str]]:
    """The policy for an app's ``_meta.ui.csp`` (or None), and the sources refused."""
    csp = csp if isinstance(csp, dict) else {}
    dropped: list[str] = []
    res = _sources(csp, "resourceDomains", dropped)
    connect = _sources(csp, "connectDomains", dropped)
    frames = _sources(csp, "frameDomains", dropped)
    base = _sources(csp, "baseUriDomains", dropped)
    wasm = ["'wasm-unsafe-eval'"] if csp.get("wasmUnsafeEval") is True else []
    directives = [
        "default-src 'none'",
        " ".join(["script-src 'self' 'unsafe-inline'", *wasm, *res]),
        " ".join(["style-src 'self' 'unsafe-inline'", *res]),
        " ".join(["img-src 'self' data:", *res]),
        " ".join(["font-src 'self'", *res]),
        " ".join(["media-src 'self' data:", *res]),
        "connect-src " + (" ".join(connect) if connect else "'none'"),
        "frame-src " + (" ".join(frames) if frames else "'none'"),
        "base-uri " + (" ".join(base) if base else "'self'"),
        "object-src 'none'",
        "form-action 'none'",
        "sandbox allow-scripts",
    ]
    return "; ".join(directives), dropped


def allow_attribute(permissions: Any) -> str:
    """The iframe ``allow`` attribute for an app's ``_meta.ui.permissions``."""
    if not isinstance(permissions, dict):
        return ""
    return "; ".join(PERMISSION_FEATURES[k] for k in PERMISSION_FEATURES if k in permissions)


class AppFrames:
    """The apps the page opened: documents waiting for their frame, and the tools they may call."""

    def __init__(self, inspector: Inspector) -> None:
        self.inspector = inspector
        self._frames: dict[str, tuple[float, bytes, str]] = {}  # id -> (deadline, html, policy)
        self._open: dict[str, str] = {}  # frame id -> ui:// URI (for the history)
        self._bridges: dict[str, AppBridge] = {}  # frame id -> the bridge relaying its calls

    def take(self, frame_id: str) -> tuple[bytes, str] | None:
        """The document and policy of a frame, once."""
        now = time.monotonic()
        for fid in [f for f, (deadline, _, _) in self._frames.items() if deadline < now]:
            del self._frames[fid]
        got = self._frames.pop(frame_id, None)
        return None if got is None else (got[1], got[2])

    async def open(self, body: dict[str, Any]) -> dict[str, Any]:
        from ._app import ApiError

        uri = body.get("uri")
        if not isinstance(uri, str) or not uri.startswith("ui://"):
            raise ApiError(400, "uri must be a ui:// URI")
        client = self.inspector.client_or_fail()
        result = await self.inspector.timed("resources/read", {"uri": uri},
                                            lambda: client.read_resource(uri, cache="bypass"))
        contents = [c for c in result.get("contents") or [] if c.get("uri") == uri] or result.get("contents") or []
        if not contents:
            raise ApiError(502, f"{uri}: the server returned no contents")
        item = contents[0]
        if str(item.get("mimeType", "")).replace(" ", "").lower() != APP_MIME_TYPE:
            raise ApiError(502, f"{uri} is {item.get('mimeType')!r}, not {APP_MIME_TYPE}: not rendered")
        if isinstance(item.get("text"), str):
            html = item["text"].encode("utf-8")
        elif isinstance(item.get("blob"), str):
            import base64

            try:
                html = base64.b64decode(item["blob"], validate=True)
            except ValueError:
                raise ApiError(502, f"{uri}: the blob is not base64") from None
        else:
            raise ApiError(502, f"{uri}: no text or blob")
        ui = ((item.get("_meta") or {}).get("ui")) or {}
        policy, dropped = content_security_policy(ui.get("csp"))
        frame_id = secrets.token_urlsafe(24)
        self._frames[frame_id] = (time.monotonic() + FRAME_TTL, html, policy)
        self._open[frame_id] = uri
        return {"frameId": frame_id, "src": f"/frame/{frame_id}", "csp": policy, "refused": dropped,
                "allow": allow_attribute(ui.get("permissions")), "prefersBorder": ui.get("prefersBorder")}

    async def call(self, body: dict[str, Any]) -> dict[str, Any]:
        """``tools/call`` from an app, relayed by the frame's :class:`~mcpkit.client.apps.AppBridge`:
        only to a tool whose visibility includes ``app`` (403 otherwise, in the history)."""
        from ._app import ApiError

        frame_id, name, arguments = body.get("frameId"), body.get("name"), body.get("arguments") or {}
        if not isinstance(frame_id, str) or frame_id not in self._open:
            raise ApiError(404, "no such app frame")
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            raise ApiError(400, "give the tool's name and its arguments (an object)")
        bridge = self._bridges.get(frame_id)
        if bridge is None:
            bridge = self._bridges[frame_id] = _InspectorBridge(self.inspector, self._open[frame_id])
        bridge.client = self.inspector.client_or_fail()  # the current connection (the page may reconnect)
        replies = await bridge.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": name, "arguments": arguments}})
        reply = replies[0]
        if "error" in reply:
            err = reply["error"]
            raise ApiError(403 if err["code"] == -32602 else 502, err["message"])
        return {"result": reply["result"]}


class _InspectorBridge(AppBridge):
    """An app frame's bridge: each relayed call is timed and in the history, ``"from": "app"``."""

    def __init__(self, inspector: Inspector, uri: str) -> None:
        super().__init__(inspector.client_or_fail(), {"name": "(app)"}, host_info={"name": "mcpkit inspect",
                                                                                   "version": "1"})
        self.inspector = inspector
        self.uri = uri

    async def call_server_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        client = self.client
        out: dict[str, Any] = await self.inspector.timed(
            "tools/call", {"name": name, "arguments": arguments},
            lambda: client.call_tool(name, arguments, cache="bypass"), source="app", app=self.uri)
        return out

    def refused(self, method: str, params: dict[str, Any], reason: str) -> None:
        self.inspector.record_refusal(method, params, "app", reason)
