"""The host side of MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865) for any Python host.

An app is an HTML document a host renders in a sandboxed iframe; it talks to the host in
JSON-RPC over ``postMessage``. :class:`AppBridge` is the part of a host that answers those
messages for one rendered app, relaying to an mcpkit :class:`~mcpkit.client.Client`; the host
keeps the iframe and the ``postMessage`` plumbing, and hands each message over::

    from mcpkit.client.apps import AppBridge

    bridge = AppBridge(client, tool, arguments, result, on_message=show_in_chat)
    for reply in await bridge.handle(message_from_the_app):   # a dict, or JSON text
        post_to_the_app(reply)

:meth:`AppBridge.handle` returns the messages to post back: the response to a request, and
the notifications that follow (after ``ui/notifications/initialized``: ``tool-input``, then
``tool-result`` once the result is known; :meth:`AppBridge.tool_result` sends it later).

What it answers, as the specification says:

- ``ui/initialize``: ``hostInfo``, ``hostCapabilities`` (``serverTools``,
  ``serverResources``, ``logging``, and ``message``/``openLinks``/``updateModelContext``/
  ``downloadFile`` only when the host gave the callback that serves it) and ``hostContext``
  (``toolInfo``, display mode, and what ``host_context`` adds); ``ping``.
- ``tools/call``: relayed only for a tool of this server whose ``_meta.ui.visibility``
  includes ``app`` (the default); any other is refused (``-32602``, nothing sent).
  ``tools/list``: the server's tools the app may call. ``resources/read``: relayed.
- ``ui/message``, ``ui/update-model-context``, ``ui/open-link`` (http(s) URLs only),
  ``ui/download-file``, ``ui/request-display-mode`` (only to a mode both sides declared),
  ``ui/notifications/size-changed``, ``ui/notifications/request-teardown``,
  ``notifications/message``: handed to the host's callbacks (sync or async); a request whose
  callback is missing is refused with ``-32000``.
- Anything else: ``-32601`` for a request, ignored for a notification; a message that is not
  JSON-RPC 2.0 gets ``-32600`` (or is dropped when it has no id).

Relaying goes through :meth:`AppBridge.call_server_tool` and
:meth:`AppBridge.read_server_resource`: a host overrides them to record or approve each call.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import MCPError, MCPKitError

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["APP_MIME_TYPE", "AppBridge", "PROTOCOL_VERSION", "tool_ui"]

APP_MIME_TYPE = "text/html;profile=mcp-app"
#: The MCP Apps revision the bridge speaks in ``ui/initialize``.
PROTOCOL_VERSION = "2026-01-26"
_DISPLAY_MODES = ("inline", "fullscreen", "pip")
Callback = Callable[..., Any]


def tool_ui(tool: Any) -> dict[str, Any]:
    """A tool's app link: ``{"resourceUri": str | None, "visibility": [...]}`` (``_meta.ui``,
    or the deprecated flat ``ui/resourceUri``; visibility defaults to model and app). ``tool``
    is a :class:`~mcpkit.types.Tool` or its JSON."""
    if not isinstance(tool, Mapping):
        import msgspec

        tool = msgspec.to_builtins(tool)
    meta = tool.get("_meta") or {}
    ui: Mapping[str, Any] = meta["ui"] if isinstance(meta.get("ui"), Mapping) else {}
    uri = ui.get("resourceUri") or meta.get("ui/resourceUri")
    visibility = ui.get("visibility")
    visibility = list(visibility) if isinstance(visibility, list) else ["model", "app"]
    return {"resourceUri": uri if isinstance(uri, str) else None, "visibility": visibility}


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _note(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def _call(fn: Callback, *args: Any) -> Any:
    out = fn(*args)
    return await out if inspect.isawaitable(out) else out


class AppBridge:
    """Answers one rendered app's JSON-RPC messages, relaying to ``client``.

    ``tool`` is the tool whose result the app shows (a Tool or its JSON), ``arguments`` the
    arguments it was called with, ``result`` its result when known (a CallToolResult or its
    JSON; else :meth:`tool_result` later). Callbacks: ``on_message(params)``,
    ``on_update_model_context(params)``, ``on_open_link(url)``, ``on_download(params)``,
    ``on_size_changed(width, height)``, ``on_request_teardown()``, ``on_log(params)``; each
    may be async, and one that raises refuses the request (``-32000`` with its text).
    ``display_modes`` are the modes the host offers; ``host_context`` adds to ``hostContext``.
    """

    def __init__(self, client: Client, tool: Any, arguments: Mapping[str, Any] | None = None, result: Any = None, *,
                 host_info: Mapping[str, Any] | None = None, host_context: Mapping[str, Any] | None = None,
                 display_modes: tuple[str, ...] = ("inline",), on_message: Callback | None = None,
                 on_update_model_context: Callback | None = None, on_open_link: Callback | None = None,
                 on_download: Callback | None = None, on_size_changed: Callback | None = None,
                 on_request_teardown: Callback | None = None, on_log: Callback | None = None) -> None:
        import msgspec

        if not display_modes or not set(display_modes) <= set(_DISPLAY_MODES):
            raise ValueError(f"display_modes must be some of {list(_DISPLAY_MODES)}")
        self.client = client
        self.tool: dict[str, Any] = dict(tool) if isinstance(tool, Mapping) else msgspec.to_builtins(tool)
        self.arguments = dict(arguments or {})
        self.result: dict[str, Any] | None = None if result is None else (
            dict(result) if isinstance(result, Mapping) else msgspec.to_builtins(result))
        self.host_info = dict(host_info or {"name": "mcpkit", "version": "1"})
        self.host_context = dict(host_context or {})
        self.display_modes = tuple(display_modes)
        self.callbacks: dict[str, Callback | None] = {
            "message": on_message, "update": on_update_model_context, "link": on_open_link,
            "download": on_download, "size": on_size_changed, "teardown": on_request_teardown, "log": on_log}
        #: Set by the app: ``ui/initialize`` params, then ``ui/notifications/initialized``.
        self.app: dict[str, Any] | None = None
        self.initialized = False
        self.display_mode = self.display_modes[0]
        #: The latest ``ui/notifications/size-changed`` (width, height), and model context.
        self.size: tuple[Any, Any] | None = None
        self.model_context: dict[str, Any] | None = None
        self._result_sent = False

    # ------------------------------------------------------------------ relaying (override to audit)
    async def call_server_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``name`` on the server for the app (already checked: the app may call it)."""
        import msgspec

        return msgspec.to_builtins(await self.client.call_tool(name, arguments, cache="bypass"))  # type: ignore[no-any-return]

    async def read_server_resource(self, uri: str) -> dict[str, Any]:
        """Read ``uri`` from the server for the app."""
        import msgspec

        return msgspec.to_builtins(await self.client.read_resource(uri))  # type: ignore[no-any-return]

    def refused(self, method: str, params: dict[str, Any], reason: str) -> None:
        """Called when the bridge refuses an app's call (``tools/call`` to a tool it may not
        call) before answering the error; override to record it. Nothing was sent."""

    async def app_tools(self) -> dict[str, dict[str, Any]]:
        """The server's tools the app may call (visibility includes ``app``), by name."""
        import msgspec

        tools = [msgspec.to_builtins(t) for t in await self.client.list_tools()]
        return {t["name"]: t for t in tools if "app" in tool_ui(t)["visibility"]}

    # ------------------------------------------------------------------ host -> app
    def tool_result(self, result: Any) -> list[dict[str, Any]]:
        """The tool's result is known: the ``ui/notifications/tool-result`` to post (none
        before the app said it is initialized; it is sent then)."""
        import msgspec

        self.result = dict(result) if isinstance(result, Mapping) else msgspec.to_builtins(result)
        if not self.initialized or self._result_sent:
            return []
        self._result_sent = True
        return [_note("ui/notifications/tool-result", self.result)]

    def teardown(self, rid: Any, reason: str = "closed by the host") -> dict[str, Any]:
        """The ``ui/resource-teardown`` request to post before removing the app."""
        return {"jsonrpc": "2.0", "id": rid, "method": "ui/resource-teardown", "params": {"reason": reason}}

    def capabilities(self) -> dict[str, Any]:
        """The ``hostCapabilities`` this bridge offers (by the callbacks it was given)."""
        caps: dict[str, Any] = {"serverTools": {}, "serverResources": {}, "logging": {}}
        modalities: dict[str, Any] = {"text": {}, "image": {}, "resource": {}, "resourceLink": {}, "structuredContent": {}}
        for key, cap in (("message", "message"), ("update", "updateModelContext")):
            if self.callbacks[key] is not None:
                caps[cap] = modalities
        if self.callbacks["link"] is not None:
            caps["openLinks"] = {}
        if self.callbacks["download"] is not None:
            caps["downloadFile"] = {}
        return caps

    # ------------------------------------------------------------------ app -> host
    async def handle(self, message: Mapping[str, Any] | str | bytes) -> list[dict[str, Any]]:
        """Answer one message from the app: the messages to post back (maybe none)."""
        if isinstance(message, (str, bytes)):
            try:
                message = json.loads(message)
            except ValueError:
                return [_error(None, -32700, "Parse error: the message is not JSON")]
        if not isinstance(message, Mapping):
            return [_error(None, -32600, "Invalid Request: a JSON-RPC message is an object")]
        rid = message.get("id")
        is_request = "id" in message and rid is not None
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or (not isinstance(method, str) and "result" not in message
                                              and "error" not in message):
            return [_error(rid, -32600, "Invalid Request: not JSON-RPC 2.0")] if is_request else []
        if not isinstance(method, str):
            return []  # the app's answer to a host request (ui/resource-teardown): nothing to send
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            return [_error(rid, -32602, "Invalid params: params must be an object")] if is_request else []
        params = dict(params)
        if not is_request:
            return await self._notification(method, params)
        try:
            result = await self._request(method, params)
        except MCPError as exc:  # the server's own refusal, passed on
            return [{"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}]
        except _Refused as exc:
            return [_error(rid, exc.code, str(exc))]
        except MCPKitError as exc:  # the connection to the server failed
            return [_error(rid, -32603, f"Internal error: {type(exc).__name__}: {exc}")]
        return [{"jsonrpc": "2.0", "id": rid, "result": result}]

    async def _notification(self, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        cb = self.callbacks
        if method == "ui/notifications/initialized":
            if self.initialized:
                return []
            self.initialized = True
            out = [_note("ui/notifications/tool-input", {"arguments": self.arguments})]
            if self.result is not None:
                self._result_sent = True
                out.append(_note("ui/notifications/tool-result", self.result))
            return out
        target: tuple[Callback | None, tuple[Any, ...]] = (None, ())
        if method == "ui/notifications/size-changed":
            self.size = (params.get("width"), params.get("height"))
            target = (cb["size"], self.size)
        elif method == "ui/notifications/request-teardown":
            target = (cb["teardown"], ())
        elif method == "notifications/message":
            target = (cb["log"], (params,))
        fn, args = target
        if fn is not None:
            await _call(fn, *args)
        return []

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "ui/initialize":
            self.app = params
            return {"protocolVersion": PROTOCOL_VERSION, "hostInfo": self.host_info,
                    "hostCapabilities": self.capabilities(), "hostContext": self._context()}
        if method == "ping":
            return {}
        if method == "tools/call":
            return await self._tools_call(params)
        if method == "tools/list":
            return {"tools": list((await self.app_tools()).values())}
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str) or not uri:
                raise _Refused(-32602, "Invalid params: resources/read needs a uri")
            return await self.read_server_resource(uri)
        if method == "ui/request-display-mode":
            asked = params.get("mode")
            declared = ((self.app or {}).get("appCapabilities") or {}).get("availableDisplayModes") or []
            if asked in self.display_modes and asked in declared:
                self.display_mode = asked
            return {"mode": self.display_mode}
        if method == "ui/open-link":
            url = params.get("url")
            if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
                raise _Refused(-32000, "Invalid URL: only http(s) links are opened")
            return await self._by("link", "the host does not open links", url)
        if method == "ui/message":
            if params.get("role", "user") != "user" or not isinstance(params.get("content"), (Mapping, list)):
                raise _Refused(-32602, "Invalid message format: role 'user' and a content block")
            return await self._by("message", "Message sending denied", params)
        if method == "ui/update-model-context":
            result = await self._by("update", "Context update denied", params)
            self.model_context = params
            return result
        if method == "ui/download-file":
            if not isinstance(params.get("contents"), list):
                raise _Refused(-32602, "Invalid content: contents must be a list")
            return await self._by("download", "Download denied", params)
        raise _Refused(-32601, f"Method not found: {method}")

    async def _tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not name or not isinstance(arguments, Mapping):
            raise _Refused(-32602, "Invalid params: tools/call needs a name and arguments (an object)")
        if name not in await self.app_tools():
            reason = f"the tool {name!r} is not callable by apps (unknown, or its visibility lacks 'app')"
            await _call(self.refused, "tools/call", {"name": name, "arguments": dict(arguments)}, reason)
            raise _Refused(-32602, reason)
        return await self.call_server_tool(name, dict(arguments))

    async def _by(self, key: str, refusal: str, *args: Any) -> dict[str, Any]:
        fn = self.callbacks[key]
        if fn is None:
            raise _Refused(-32000, refusal)
        try:
            await _call(fn, *args)
        except Exception as exc:  # the host said no
            raise _Refused(-32000, f"{refusal}: {exc}") from None
        return {}

    def _context(self) -> dict[str, Any]:
        return {"toolInfo": {"tool": self.tool}, "displayMode": self.display_mode,
                "availableDisplayModes": list(self.display_modes), "platform": "desktop", **self.host_context}


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
