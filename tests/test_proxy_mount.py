"""Composition: ``server.mount(prefix, other)`` and ``mcpkit proxy --config``.

Real parts: in-process servers (modern), a stdio server spoken to as 2025-11-25, and a command
that cannot start; a real client in front.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPError, Server
from tests.helpers.aio import run
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.servers import running_server
from tests.servers import proxy_asker

ASKER = SERVERS / "proxy_asker.py"
ALL_CAPS = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


def _docs() -> Server:
    docs = Server("docs", ttl_ms=5000, cache_scope="public", legacy=False)

    @docs.tool()
    def search(q: str) -> str:
        return f"found {q}"

    @docs.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name}"

    @docs.resource("notes://index", mime_type="text/plain")
    def index() -> str:
        return "index"

    @docs.prompt()
    def summarize(topic: str) -> str:
        return f"Summarize {topic}"

    return docs


def _host() -> Server:
    host = Server("host", ttl_ms=60000, cache_scope="public")

    @host.tool()
    def ping() -> str:
        return "pong"

    return host


def test_mounted_names_calls_reads_and_cache_hints() -> None:
    host = _host()
    docs = _docs()
    mount = host.mount("docs", docs)
    try:
        async def main() -> dict[str, Any]:
            async with Client(host) as c:
                tools = await c.request("tools/list")
                resources = await c.request("resources/list")
                templates = await c.request("resources/templates/list")
                prompts = await c.request("prompts/list")
                called = await c.call_tool("docs_search", {"q": "tea"})
                own = await c.call_tool("ping", {})
                read = await c.read_resource("docs+notes://a")
                prompt = await c.get_prompt("docs_summarize", {"topic": "MCP"})
                with pytest.raises(MCPError) as missing:
                    await c.call_tool("docs_nothing", {})
                return {"tools": tools, "resources": resources, "templates": templates, "prompts": prompts,
                        "called": called, "own": own, "read": read, "prompt": prompt, "missing": missing.value}

        out = run(main(), 30)
    finally:
        mount.close()
    assert [tool["name"] for tool in out["tools"]["tools"]] == ["ping", "docs_search"]
    assert out["tools"]["ttlMs"] == 5000 and out["tools"]["cacheScope"] == "public"   # the smallest ttl
    assert [r["uri"] for r in out["resources"]["resources"]] == ["docs+notes://index"]
    assert [r["uriTemplate"] for r in out["templates"]["resourceTemplates"]] == ["docs+notes://{name}"]
    assert [p["name"] for p in out["prompts"]["prompts"]] == ["docs_summarize"]
    assert out["called"].content[0].text == "found tea"
    assert out["own"].content[0].text == "pong"
    assert out["read"].contents[0].uri == "docs+notes://a" and out["read"].contents[0].text == "note a"
    assert out["prompt"].messages[0].content.text == "Summarize MCP"
    assert out["missing"].code == -32602 and "nothing" in out["missing"].message  # the part's own answer


def test_private_part_makes_the_list_private_and_questions_pass_through() -> None:
    host = _host()
    mount = host.mount("ask", proxy_asker.build(legacy=False))   # cacheScope private (the default)
    try:
        async def main() -> tuple[dict[str, Any], dict[str, Any]]:
            async with Client(host, capabilities=ALL_CAPS) as c:
                tools = await c.request("tools/list")
                first = await c.request("tools/call", {"name": "ask_two_rounds"}, answer_input=False)
                return tools, first

        tools, first = run(main(), 30)
    finally:
        mount.close()
    assert tools["cacheScope"] == "private" and tools["ttlMs"] == 0
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["first"]


def test_a_failing_mount_degrades_alone_with_one_clear_error() -> None:
    host = _host()
    good = host.mount("docs", _docs())
    bad = host.mount("gone", [sys.executable, "-c", "import sys; sys.exit(3)"], connect_timeout=3,
                     stderr=subprocess.DEVNULL)
    try:
        assert bad.error is not None and good.error is None

        async def main() -> tuple[list[str], MCPError, str]:
            async with Client(host) as c:
                names = [tool.name for tool in await c.list_tools()]
                with pytest.raises(MCPError) as info:
                    await c.call_tool("gone_anything", {})
                still = (await c.call_tool("docs_search", {"q": "x"})).content[0].text
                return names, info.value, still

        names, err, still = run(main(), 30)
    finally:
        good.close()
        bad.close()
    assert names == ["ping", "docs_search"]
    assert err.code == -32603 and "mounted server 'gone' is unavailable" in err.message
    assert still == "found x"


def test_a_legacy_stdio_part_and_list_changes_propagate() -> None:
    host = _host()
    growing = Server("growing", legacy=False)

    @growing.tool()
    def grow() -> str:
        growing.tool(name="grown")(lambda: "new")
        return "grown"

    legacy = host.mount("old", [sys.executable, "-m", "mcpkit", "serve", str(ASKER)], mode="legacy",
                        env=subprocess_env(), stderr=subprocess.DEVNULL)
    grow_mount = host.mount("g", growing)
    try:
        assert legacy.backend.era == "legacy"
        assert host.tool_header_map("old_where") == {"Region": ("region",)}

        async def main() -> tuple[str, str, list[str]]:
            async with Client(host) as c:
                where = (await c.call_tool("old_where", {"region": "eu"})).content[0].text
                got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

                async def listen() -> None:
                    async for note in c.listen(tools=True):
                        if not got.done():
                            got.set_result(note.method)

                task = asyncio.ensure_future(listen())
                await asyncio.sleep(0.3)
                await c.call_tool("g_grow", {})
                method = await asyncio.wait_for(got, 10)
                task.cancel()
                return where, method, [tool.name for tool in await c.list_tools(cache="refresh")]

        where, method, names = run(main(), 60)
    finally:
        legacy.close()
        grow_mount.close()
    assert where == "eu"
    assert method == "notifications/tools/list_changed"
    assert "g_grown" in names and "old_three" in names


@pytest.mark.parametrize("bad", ["", "1abc", "a_b", "a+b", "a b"])
def test_bad_prefixes_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="mount prefix"):
        _host().mount(bad, _docs())


def test_same_prefix_twice_is_refused() -> None:
    host = _host()
    mount = host.mount("docs", _docs())
    try:
        with pytest.raises(ValueError, match="already used"):
            host.mount("docs", _docs())
    finally:
        mount.close()


def test_cli_proxy_config_mounts_every_server_of_a_host_config(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    py = sys.executable
    config.write_text(json.dumps({"servers": {  # the VS Code shape
        "asker": {"type": "stdio", "command": py, "args": ["-m", "mcpkit", "serve", str(ASKER)],
                  "env": {"PYTHONPATH": subprocess_env()["PYTHONPATH"]}},
        "other": {"type": "stdio", "command": py, "args": ["-m", "mcpkit", "serve", str(ASKER)],
                  "env": {"PYTHONPATH": subprocess_env()["PYTHONPATH"]}},
        "broken_one": {"command": py, "args": ["-c", "import sys; sys.exit(3)"]},
    }}))
    argv = [py, "-m", "mcpkit", "proxy", "--http", "--port", "{port}", "--config", str(config),
            "--connect-timeout", "5"]
    with running_server(lambda port: [a.replace("{port}", str(port)) for a in argv], timeout=60) as url:
        async def main() -> tuple[list[str], str, str, MCPError]:
            async with Client(url) as c:  # both served (one loop: the mounts'), the broken one alone fails
                names = [tool.name for tool in await c.list_tools()]
                where = (await c.call_tool("asker_where", {"region": "eu"})).content[0].text
                other = (await c.call_tool("other_where", {"region": "us"})).content[0].text
                with pytest.raises(MCPError) as info:
                    await c.call_tool("broken-one_x", {})
                return names, where, other, info.value

        names, where, other, err = run(main(), 60)
    assert {"asker_three", "asker_where", "other_three", "other_where"} <= set(names)
    assert (where, other) == ("eu", "us")
    assert err.code == -32603 and "mounted server 'broken-one' is unavailable" in err.message
