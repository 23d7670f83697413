"""The Python-side MCP Apps host bridge: mcpkit/client/apps.py (``AppBridge``), driven with the
JSON-RPC messages an app posts, against examples/apps_server.py and a server with a model-only
tool (in process, and the example over stdio in the 2025-11-25 era). The inspector relays
app tool calls through it (tests/test_inspect_apps.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from mcpkit import Client, MCPError, Server
from mcpkit.client.apps import PROTOCOL_VERSION, AppBridge, tool_ui
from mcpkit.extensions.apps import APP_MIME_TYPE, Apps
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, load_module, subprocess_env

EXAMPLE = ROOT / "examples" / "apps_server.py"
APPS = load_module(EXAMPLE, "_tests_bridge_apps_server")
BOARD = "ui://dice/board.html"
RENDERS = {"extensions": {Apps.id: {"mimeTypes": [APP_MIME_TYPE]}}}
ROLL = {"name": "roll_dice", "_meta": {"ui": {"resourceUri": BOARD}}}


def rq(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def note(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


def with_bridge(body: Any, server: Server | None = None, **kw: Any) -> None:
    async def go() -> None:
        async with Client(server or APPS.server, capabilities=RENDERS) as client:
            await body(AppBridge(client, ROLL, {"count": 2}, **kw))

    run(go())


def test_handshake_then_tool_input_and_result() -> None:
    async def body(bridge: AppBridge) -> None:
        [init] = await bridge.handle(rq(1, "ui/initialize", {"appInfo": {"name": "dice", "version": "1"},
                                                             "appCapabilities": {}, "protocolVersion": PROTOCOL_VERSION}))
        assert init["id"] == 1
        result = init["result"]
        assert result["protocolVersion"] == PROTOCOL_VERSION and result["hostInfo"] == {"name": "mcpkit", "version": "1"}
        assert result["hostCapabilities"] == {"serverTools": {}, "serverResources": {}, "logging": {}}
        assert result["hostContext"]["toolInfo"] == {"tool": ROLL} and result["hostContext"]["displayMode"] == "inline"
        assert bridge.app is not None and bridge.app["appInfo"]["name"] == "dice"
        # Before initialized the host sends nothing; the result is held until then.
        assert bridge.tool_result({"content": [{"type": "text", "text": "rolled"}]}) == []
        sent = await bridge.handle(note("ui/notifications/initialized"))
        assert sent == [note("ui/notifications/tool-input", {"arguments": {"count": 2}}),
                        note("ui/notifications/tool-result", {"content": [{"type": "text", "text": "rolled"}]})]
        assert await bridge.handle(note("ui/notifications/initialized")) == []  # once
        assert bridge.tool_result({"content": []}) == []  # sent already
        assert await bridge.handle(rq("p", "ping")) == [{"jsonrpc": "2.0", "id": "p", "result": {}}]

    with_bridge(body)


def test_result_known_later_is_sent_then() -> None:
    async def body(bridge: AppBridge) -> None:
        assert [m["method"] for m in await bridge.handle(note("ui/notifications/initialized"))] == \
            ["ui/notifications/tool-input"]
        assert bridge.tool_result({"content": [], "isError": False}) == [
            note("ui/notifications/tool-result", {"content": [], "isError": False})]
        assert bridge.teardown(9, "done") == rq(9, "ui/resource-teardown", {"reason": "done"})
        assert await bridge.handle({"jsonrpc": "2.0", "id": 9, "result": {}}) == []  # the app's answer

    with_bridge(body)


def test_tools_call_honours_visibility() -> None:
    server = Server("vis")
    apps = server.use(Apps())
    apps.app("ui://v/app.html", html="<!DOCTYPE html><p>v</p>", name="v")

    @server.tool(extensions={Apps.id: {"resource_uri": "ui://v/app.html", "visibility": ["model"]}})
    def model_only() -> str:
        return "model"

    @server.tool(extensions={Apps.id: {"resource_uri": "ui://v/app.html", "visibility": ["app"]}})
    def app_only(x: int) -> str:
        return f"app {x}"

    @server.tool()
    def plain() -> str:
        return "plain"

    @server.tool()
    def fails() -> str:
        raise MCPError(-32042, "no luck", {"why": "test"})

    refusals: list[tuple[str, dict[str, Any], str]] = []

    class Audited(AppBridge):
        def refused(self, method: str, params: dict[str, Any], reason: str) -> None:
            refusals.append((method, params, reason))

    async def go() -> None:
        async with Client(server, capabilities=RENDERS) as client:
            bridge = Audited(client, {"name": "model_only"})
            [ok] = await bridge.handle(rq(1, "tools/call", {"name": "app_only", "arguments": {"x": 3}}))
            assert ok["result"]["content"] == [{"type": "text", "text": "app 3"}]
            [ok] = await bridge.handle(rq(2, "tools/call", {"name": "plain"}))  # no _meta.ui: model and app
            assert ok["result"]["content"][0]["text"] == "plain"
            for rid, name in ((3, "model_only"), (4, "nope")):
                [refused] = await bridge.handle(rq(rid, "tools/call", {"name": name, "arguments": {}}))
                assert refused["error"]["code"] == -32602 and "not callable by apps" in refused["error"]["message"]
            assert [(m, p["name"]) for m, p, _ in refusals] == [("tools/call", "model_only"), ("tools/call", "nope")]
            [listed] = await bridge.handle(rq(5, "tools/list"))
            assert {t["name"] for t in listed["result"]["tools"]} == {"app_only", "plain", "fails"}
            [bad] = await bridge.handle(rq(6, "tools/call", {"name": "app_only", "arguments": {"x": "three"}}))
            assert bad["result"]["isError"] is True  # the server's answer, as it gave it
            [failed] = await bridge.handle(rq(8, "tools/call", {"name": "fails"}))
            assert failed == {"jsonrpc": "2.0", "id": 8, "error": {"code": -32042, "message": "no luck",
                                                                   "data": {"why": "test"}}}
            [bad] = await bridge.handle(rq(7, "tools/call", {"name": "", "arguments": []}))
            assert bad["error"]["code"] == -32602 and "needs a name" in bad["error"]["message"]

    run(go())


def test_resources_read_and_the_example_app_tool() -> None:
    async def body(bridge: AppBridge) -> None:
        [read] = await bridge.handle(json.dumps(rq(1, "resources/read", {"uri": BOARD})))  # JSON text works too
        item = read["result"]["contents"][0]
        assert item["mimeType"] == APP_MIME_TYPE and item["text"].startswith("<!DOCTYPE html>")
        [missing] = await bridge.handle(rq(2, "resources/read", {"uri": "ui://dice/none.html"}))
        assert missing["error"]["code"] in (-32602, -32002)
        [bad] = await bridge.handle(rq(3, "resources/read", {}))
        assert bad["error"]["code"] == -32602
        [stats] = await bridge.handle(rq(4, "tools/call", {"name": "dice_stats", "arguments": {"rolls": [1, 5]}}))
        assert stats["result"]["content"][0]["text"] == "total 6, mean 3.00, highest 5"

    with_bridge(body)


def test_host_callbacks() -> None:
    got: list[Any] = []

    async def on_message(params: dict[str, Any]) -> None:  # async callbacks are awaited
        got.append(("message", params["content"]["text"]))

    def on_open_link(url: str) -> None:
        if "blocked" in url:
            raise PermissionError("the user said no")
        got.append(("link", url))

    async def body(bridge: AppBridge) -> None:
        [init] = await bridge.handle(rq(0, "ui/initialize", {"appCapabilities": {"availableDisplayModes": ["inline",
                                                                                                            "fullscreen"]}}))
        caps = init["result"]["hostCapabilities"]
        assert set(caps) == {"serverTools", "serverResources", "logging", "message", "openLinks", "updateModelContext"}
        assert init["result"]["hostContext"]["availableDisplayModes"] == ["inline", "fullscreen"]
        assert init["result"]["hostContext"]["theme"] == "dark"
        msg = {"role": "user", "content": {"type": "text", "text": "hi"}}
        assert await bridge.handle(rq(1, "ui/message", msg)) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
        [bad] = await bridge.handle(rq(2, "ui/message", {"role": "assistant", "content": {}}))
        assert bad["error"]["code"] == -32602
        assert (await bridge.handle(rq(3, "ui/open-link", {"url": "https://example.com/x"})))[0]["result"] == {}
        [no] = await bridge.handle(rq(4, "ui/open-link", {"url": "javascript:alert(1)"}))
        assert no["error"] == {"code": -32000, "message": "Invalid URL: only http(s) links are opened"}
        [no] = await bridge.handle(rq(5, "ui/open-link", {"url": "https://blocked.example"}))
        assert no["error"] == {"code": -32000, "message": "the host does not open links: the user said no"}
        await bridge.handle(rq(6, "ui/update-model-context", {"structuredContent": {"n": 1}}))
        assert bridge.model_context == {"structuredContent": {"n": 1}}
        [mode] = await bridge.handle(rq(7, "ui/request-display-mode", {"mode": "fullscreen"}))
        assert mode["result"] == {"mode": "fullscreen"} and bridge.display_mode == "fullscreen"
        [mode] = await bridge.handle(rq(8, "ui/request-display-mode", {"mode": "pip"}))  # not offered
        assert mode["result"] == {"mode": "fullscreen"}
        assert await bridge.handle(note("ui/notifications/size-changed", {"width": 320, "height": 200})) == []
        assert await bridge.handle(note("notifications/message", {"level": "info", "data": "log"})) == []
        assert await bridge.handle(note("ui/notifications/request-teardown")) == []
        [none] = await bridge.handle(rq(9, "ui/download-file", {"contents": []}))  # no on_download: refused
        assert none["error"] == {"code": -32000, "message": "Download denied"}
        assert bridge.size == (320, 200)

    with_bridge(body, on_message=on_message, on_open_link=on_open_link,
                on_update_model_context=lambda p: got.append(("context", p)),
                on_size_changed=lambda w, h: got.append(("size", w, h)),
                on_log=lambda p: got.append(("log", p["data"])),
                on_request_teardown=lambda: got.append(("teardown",)),
                display_modes=("inline", "fullscreen"), host_context={"theme": "dark"})
    assert got == [("message", "hi"), ("link", "https://example.com/x"), ("context", {"structuredContent": {"n": 1}}),
                   ("size", 320, 200), ("log", "log"), ("teardown",)]


def test_without_callbacks_requests_are_refused() -> None:
    async def body(bridge: AppBridge) -> None:
        for rid, method, params, message in (
                (1, "ui/message", {"role": "user", "content": {"type": "text", "text": "x"}}, "Message sending denied"),
                (2, "ui/open-link", {"url": "https://example.com"}, "the host does not open links"),
                (3, "ui/update-model-context", {}, "Context update denied")):
            [reply] = await bridge.handle(rq(rid, method, params))
            assert reply["error"] == {"code": -32000, "message": message}
        assert bridge.model_context is None

    with_bridge(body)


@pytest.mark.parametrize("message, reply", [
    ("{not json", [{"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: the message is not JSON"}}]),
    ([1], [{"jsonrpc": "2.0", "id": None, "error": {"code": -32600,
                                                    "message": "Invalid Request: a JSON-RPC message is an object"}}]),
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, [{"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32600, "message": "Invalid Request: not JSON-RPC 2.0"}}]),
    ({"jsonrpc": "1.0", "method": "ping"}, []),
    ({"jsonrpc": "2.0", "id": 1}, [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32600,
                                                                          "message": "Invalid Request: not JSON-RPC 2.0"}}]),
    ({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1]}, [{"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32602, "message": "Invalid params: params must be an object"}}]),
    ({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {}}, [{"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32601, "message": "Method not found: sampling/createMessage"}}]),
    ({"jsonrpc": "2.0", "method": "ui/notifications/unknown"}, []),
])
def test_bad_messages(message: Any, reply: list[dict[str, Any]]) -> None:
    async def body(bridge: AppBridge) -> None:
        assert await bridge.handle(message) == reply

    with_bridge(body)


def test_bad_bridge_arguments_and_tool_ui() -> None:
    with pytest.raises(ValueError, match="display_modes"):
        AppBridge(None, {}, display_modes=("sideways",))  # type: ignore[arg-type]
    assert tool_ui({"name": "x"}) == {"resourceUri": None, "visibility": ["model", "app"]}
    assert tool_ui({"name": "x", "_meta": {"ui/resourceUri": "ui://a"}})["resourceUri"] == "ui://a"
    assert tool_ui({"name": "x", "_meta": {"ui": {"resourceUri": "ui://b", "visibility": ["app"]}}}) == \
        {"resourceUri": "ui://b", "visibility": ["app"]}


def test_over_a_legacy_stdio_session() -> None:
    argv = [sys.executable, "-m", "mcpkit", "serve", str(EXAMPLE)]

    async def go() -> None:
        async with Client(argv, mode="legacy", capabilities=RENDERS, env=subprocess_env()) as client:
            bridge = AppBridge(client, ROLL)
            [stats] = await bridge.handle(rq(1, "tools/call", {"name": "dice_stats", "arguments": {"rolls": [4]}}))
            assert stats["result"]["content"][0]["text"] == "total 4, mean 4.00, highest 4"

    run(go())
