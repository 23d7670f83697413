"""The MCP Apps extension (``io.modelcontextprotocol/ui``, SEP-1865): mcpkit/extensions/apps.py.

examples/apps_server.py served in process, over stdio in the 2025-11-25 era and over HTTP to
the official Python SDK client; clients that render apps and clients that do not; every bad
registration.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, Context, MCPError, Server
from mcpkit.extensions.apps import APP_MIME_TYPE, AppOptions, Apps, client_renders_apps
from tests.helpers.aio import run
from tests.helpers.messages import call, req
from tests.helpers.paths import INTEROP, ROOT, load_module, subprocess_env
from tests.helpers.peers import install_peers, no_peer_error, run_peer_json
from tests.helpers.servers import mcpkit_serve_argv, running_server
from tests.helpers.wire import LegacyStdioPeer

EXAMPLE = ROOT / "examples" / "apps_server.py"
APPS = load_module(EXAMPLE, "_tests_apps_server")
BOARD = "ui://dice/board.html"
RENDERS = {"extensions": {Apps.id: {"mimeTypes": [APP_MIME_TYPE]}}}
FALLBACK = "(An MCP Apps host shows these dice on a board.)"


def test_example_to_a_client_that_renders_apps() -> None:
    async def go() -> None:
        async with Client(APPS.server, capabilities=RENDERS) as client:
            card = await client.discover()
            assert card.capabilities.extensions == {Apps.id: {}}
            tools = {t.name: t for t in await client.list_tools()}
            assert set(tools) == {"roll_dice", "dice_stats"}
            assert tools["roll_dice"].meta == {"ui": {"resourceUri": BOARD}, "ui/resourceUri": BOARD}
            assert tools["dice_stats"].meta["ui"] == {"resourceUri": BOARD, "visibility": ["app"]}
            rolled = await client.call_tool("roll_dice", {"count": 4})
            assert len(rolled.structuredContent["rolls"]) == 4
            assert all(c.text != FALLBACK for c in rolled.content)  # the app shows it: no fallback
            stats = await client.call_tool("dice_stats", {"rolls": [1, 2, 6]})
            assert stats.content[0].text == "total 9, mean 3.00, highest 6"
            read = await client.read_resource(BOARD)
            item = read.contents[0]
            assert item.mimeType == APP_MIME_TYPE and item.text.startswith("<!DOCTYPE html>")
            assert item.meta == {"ui": {"prefersBorder": True}}
            listed = {r.uri: r for r in await client.list_resources()}
            assert listed[BOARD].mimeType == APP_MIME_TYPE and listed[BOARD].meta == {"ui": {"prefersBorder": True}}

    run(go())


@pytest.mark.parametrize("caps", [None, {"extensions": {Apps.id: {}}},
                                  {"extensions": {Apps.id: {"mimeTypes": ["text/uri-list"]}}}])
def test_example_to_a_client_that_does_not(caps: dict[str, Any] | None) -> None:
    async def go() -> None:
        async with Client(APPS.server, capabilities=caps) as client:
            assert [t.name for t in await client.list_tools()] == ["roll_dice"]  # the app-only tool is hidden
            rolled = await client.call_tool("roll_dice", {"count": 2})
            assert rolled.content[-1].text == FALLBACK  # meaningful text for a client without apps
            with pytest.raises(MCPError) as info:
                await client.call_tool("dice_stats", {"rolls": [1]})
            assert info.value.code == -32602 and "Unknown tool" in info.value.message

    run(go())


def test_legacy_session_negotiates_from_initialize() -> None:
    for caps, names in ((RENDERS, {"roll_dice", "dice_stats"}), ({}, {"roll_dice"})):
        peer = LegacyStdioPeer([sys.executable, "-m", "mcpkit", "serve", str(EXAMPLE)], env=subprocess_env())
        try:
            init = peer.handshake(caps=caps)
            assert init["capabilities"]["extensions"] == {Apps.id: {}}
            tools = peer.ask(req("l", "tools/list"))["result"]["tools"]
            assert {t["name"] for t in tools} == names
            result = peer.ask(call("r", "roll_dice", count=1))["result"]
            assert (result["content"][-1]["text"] == FALLBACK) is (caps == {})
            stats = peer.ask(call("s", "dice_stats", rolls=[3]))
            if caps:
                assert stats["result"]["content"][0]["text"] == "total 3, mean 3.00, highest 3"
            else:
                assert stats["error"]["code"] == -32602
        finally:
            peer.close()


def test_app_sources_and_metadata(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<!DOCTYPE html><p>v1</p>")
    server = Server("apps")
    apps = server.use(Apps())
    calls = []

    async def generated() -> str:
        calls.append(1)
        return f"<!DOCTYPE html><p>{len(calls)}</p>"

    apps.app("ui://t/string.html", "<!DOCTYPE html><p>s</p>", name="S",
             csp={"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example.com"],
                  "frameDomains": ["https://www.youtube.com"], "baseUriDomains": ["https://cdn.example.com"],
                  "wasmUnsafeEval": True},
             permissions=["camera", "clipboardWrite"], domain="abc.apps.example.com", prefers_border=False)
    apps.app("ui://t/file.html", page)
    apps.app("ui://t/fn.html", generated, list_resource=False)
    apps.app("ui://t/sync.html", lambda: "<!DOCTYPE html><p>sync</p>")

    @server.tool(extensions={Apps.id: "ui://t/fn.html"})  # a URI alone is the resource_uri
    def show(ctx: Context) -> str:
        return "rendered" if ctx.extension(Apps).rendering else "plain"

    async def go() -> None:
        async with Client(server, capabilities=RENDERS) as client:
            s = (await client.read_resource("ui://t/string.html")).contents[0]
            assert s.meta == {"ui": {
                "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example.com"],
                        "frameDomains": ["https://www.youtube.com"], "baseUriDomains": ["https://cdn.example.com"],
                        "wasmUnsafeEval": True},
                "permissions": {"camera": {}, "clipboardWrite": {}}, "domain": "abc.apps.example.com",
                "prefersBorder": False}}
            assert (await client.read_resource("ui://t/file.html")).contents[0].text.endswith("v1</p>")
            page.write_text("<!DOCTYPE html><p>v2</p>")  # a file is read on each read
            assert (await client.read_resource("ui://t/file.html", cache="refresh")).contents[0].text.endswith("v2</p>")
            assert (await client.read_resource("ui://t/fn.html")).contents[0].text.endswith("1</p>")
            assert (await client.read_resource("ui://t/sync.html")).contents[0].text.endswith("sync</p>")
            listed = {r.uri for r in await client.list_resources()}
            assert "ui://t/fn.html" not in listed and "ui://t/string.html" in listed
            assert (await client.call_tool("show")).content[0].text == "rendered"
        async with Client(server) as plain:
            assert (await plain.call_tool("show")).content[0].text == "plain"

    run(go())
    tool = server.tools["show"]
    assert tool.options(Apps.id) == AppOptions("ui://t/fn.html")


# ---------------------------------------------------------------- bad registrations
def _apps() -> tuple[Server, Apps]:
    server = Server("apps")
    apps = server.use(Apps())
    apps.app("ui://ok/app.html", "<!DOCTYPE html>")
    return server, apps


@pytest.mark.parametrize("uri", ["https://x/app.html", "ui://", "app.html", "", "UI://x"])
def test_app_uri_must_be_ui(uri: str) -> None:
    _, apps = _apps()
    with pytest.raises(ValueError, match="ui:// scheme"):
        apps.app(uri, "<html>")


@pytest.mark.parametrize(("kw", "error"), [
    ({"csp": {"connectDomains": ["https://ok.com; script-src *"]}}, "not an origin"),
    ({"csp": {"connectDomains": ["*"]}}, "not an origin"),
    ({"csp": {"connectDomains": ["'unsafe-eval'"]}}, "not an origin"),
    ({"csp": {"connectDomains": "https://a.com"}}, "list of origins"),
    ({"csp": {"scriptDomains": []}}, "unknown csp key"),
    ({"csp": {"wasmUnsafeEval": "yes"}}, "boolean"),
    ({"csp": ["https://a.com"]}, "must be a dict"),
    ({"permissions": ["camera", "usb"]}, "unknown permission"),
    ({"domain": "a.com; x"}, "host name"),
    ({"prefers_border": "yes"}, "boolean"),
])
def test_bad_app_metadata(kw: dict[str, Any], error: str) -> None:
    _, apps = _apps()
    with pytest.raises(ValueError, match=error):
        apps.app("ui://bad/app.html", "<html>", **kw)
    assert "ui://bad/app.html" not in apps.apps


def test_bad_html_and_duplicates() -> None:
    server, apps = _apps()
    with pytest.raises(TypeError):
        apps.app("ui://x/a.html", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        apps.app("ui://ok/app.html", "<html>")

    @server.resource("ui://taken/app.html")
    def taken() -> str:
        return "x"

    with pytest.raises(ValueError, match="already a resource"):
        apps.app("ui://taken/app.html", "<html>")
    apps.app("ui://x/int.html", lambda: 5)

    async def go() -> None:
        async with Client(server) as client:
            with pytest.raises(MCPError):
                await client.read_resource("ui://x/int.html")

    run(go())


@pytest.mark.parametrize(("options", "error"), [
    ({"resource_uri": "ui://missing/app.html"}, "no app is registered"),
    ({"resource_uri": "https://x"}, "must be a ui:// URI"),
    ({}, "must be a ui:// URI"),
    ({"resource_uri": "ui://ok/app.html", "visibility": []}, "visibility"),
    ({"resource_uri": "ui://ok/app.html", "visibility": ["agent"]}, "visibility"),
    ({"resource_uri": "ui://ok/app.html", "visibility": ["app", "app"]}, "visibility"),
    ({"resource_uri": "ui://ok/app.html", "fallback": 3}, "fallback"),
    ({"resource_uri": "ui://ok/app.html", "colour": "red"}, "unknown"),
    (["ui://ok/app.html"], "must be a dict"),
])
def test_bad_tool_options(options: Any, error: str) -> None:
    server, _ = _apps()
    with pytest.raises(ValueError, match=error):
        @server.tool(extensions={Apps.id: options})
        def t() -> str:
            return ""
    assert "t" not in server.tools


def test_options_need_the_extension_installed() -> None:
    server = Server("no-apps")
    with pytest.raises(ValueError, match="need it installed"):
        @server.tool(extensions={Apps.id: {"resource_uri": "ui://x/a.html"}})
        def t() -> str:
            return ""


def test_fallback_function_and_client_renders_apps() -> None:
    server, _ = _apps()

    @server.tool(extensions={Apps.id: {"resource_uri": "ui://ok/app.html",
                                       "fallback": lambda r: f"{len(r.content)} block(s); open it in an apps host"}})
    def t() -> str:
        return "x"

    seen: list[bool] = []

    @server.tool()
    def probe(ctx: Context) -> str:
        seen.append(client_renders_apps(ctx))
        return "ok"

    async def go() -> None:
        async with Client(server) as client:
            result = await client.call_tool("t")
            assert [c.text for c in result.content] == ["x", "1 block(s); open it in an apps host"]
            await client.call_tool("probe")
        async with Client(server, capabilities=RENDERS) as client:
            await client.call_tool("probe")

    run(go())
    assert seen == [False, True]


# ---------------------------------------------------------------- the official Python SDK client
@pytest.fixture(scope="module")
def apps_url() -> Any:
    with running_server(mcpkit_serve_argv(EXAMPLE), timeout=30) as url:
        yield url


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_official_python_sdk_client_finds_the_app(apps_url: str, mode: str) -> None:
    peers = install_peers([], ("PEER_PYTHON", "PEER_NODE", "PEER_NODE_PREFIX"),
                          "the interop peer clients (PyPI mcp / npm @modelcontextprotocol/client)")
    out = run_peer_json([peers["PEER_PYTHON"], str(INTEROP / "apps_py_peer.py"), apps_url, mode],
                        cwd=INTEROP, timeout=90)
    no_peer_error(out, f"mode {mode}")
    # The SDK declares no MCP Apps support: it sees the model-visible tool, with its app.
    assert out["tools"] == {"roll_dice": {"ui": {"resourceUri": BOARD}, "ui/resourceUri": BOARD}}
    assert out["resources"] == {BOARD: {"mimeType": "text/html;profile=mcp-app", "meta": {"ui": {"prefersBorder": True}},
                                        "htmlStart": "<!DOCTYPE html>"}}
