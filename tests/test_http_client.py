"""mcpkit.Client over Streamable HTTP, and ``mcpkit discover URL``, against a real uvicorn
server in a subprocess (``python -m mcpkit serve --http``)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

import mcpkit
from mcpkit.client import TransportError
from mcpkit.protocol.errors import MCPError
from tests.helpers.aio import run as aio_run
from tests.helpers.messages import VERSION
from tests.helpers.paths import HTTP_TEST_SERVER, ROOT, subprocess_env
from tests.helpers.servers import free_port, mcpkit_serve_argv, running_server


@pytest.fixture(scope="module")
def url():
    with running_server(mcpkit_serve_argv(HTTP_TEST_SERVER)) as u:
        yield u


def run(coro):
    return aio_run(coro, 20)


class Recorder:
    """An httpx.AsyncClient that records each POST's headers and JSON-RPC method."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, httpx.Headers]] = []
        self.client = httpx.AsyncClient(event_hooks={"request": [self._hook]}, timeout=10.0)

    async def _hook(self, request: httpx.Request) -> None:
        msg = json.loads(request.content)
        self.sent.append((msg.get("method"), request.headers))

    def calls(self, method: str) -> list[httpx.Headers]:
        return [h for m, h in self.sent if m == method]


# ============================================================================ basics


def test_discover_list_call_read_prompt_complete(url):
    async def go():
        async with mcpkit.Client(url) as c:
            d = await c.discover()
            assert VERSION in d.supportedVersions
            assert d.instructions == "For tests only."
            tools = {t.name: t for t in await c.list_tools()}
            assert {"echo", "weather", "progress_steps"} <= set(tools)
            res = await c.call_tool("echo", {"text": "over http"})
            assert res.content[0].text == "over http" and not res.isError
            resources = {r.uri for r in await c.list_resources()}
            assert "test://hello" in resources
            templates = {t.uriTemplate for t in await c.list_resource_templates()}
            assert templates == {"notes://{name}"}
            read = await c.read_resource("test://hello")
            assert read.contents[0].text == "hello world"
            note = await c.read_resource("notes://beta")
            assert note.contents[0].text == "second note"
            prompts = {p.name for p in await c.list_prompts()}
            assert prompts == {"greet"}
            got = await c.get_prompt("greet", {"name": "Ada"})
            assert got.messages[0].content.text == "Hello, Ada!"
            comp = await c.complete({"type": "ref/prompt", "name": "greet"}, "name", "al")
            assert comp.values == ["albert", "alice"]
            comp = await c.complete({"type": "ref/resource", "uri": "notes://{name}"}, "name", "b")
            assert comp.values == ["beta"]

    run(go())


def test_non_ascii_name_travels_base64(url):
    async def go():
        rec = Recorder()
        try:
            async with mcpkit.Client(url, http_client=rec.client) as c:
                read = await c.read_resource("test://caf\u00e9 menu")
                assert read.contents[0].text == "espresso"
        finally:
            await rec.client.aclose()
        (hdrs,) = rec.calls("resources/read")
        assert hdrs["mcp-name"].startswith("=?base64?")

    run(go())


def test_client_sends_required_headers(url):
    async def go():
        rec = Recorder()
        try:
            async with mcpkit.Client(url, http_client=rec.client) as c:
                await c.discover()
                await c.call_tool("echo", {"text": "x"})
                await c.get_prompt("greet", {"name": "x"})
        finally:
            await rec.client.aclose()
        for method, hdrs in rec.sent:
            assert hdrs["mcp-protocol-version"] == VERSION
            assert hdrs["mcp-method"] == method
        assert rec.calls("tools/call")[0]["mcp-name"] == "echo"
        assert rec.calls("prompts/get")[0]["mcp-name"] == "greet"
        assert "mcp-name" not in rec.calls("server/discover")[0]

    run(go())


def test_errors_surface_as_mcperror(url):
    async def go():
        async with mcpkit.Client(url) as c:
            with pytest.raises(MCPError) as info:
                await c.call_tool("no_such_tool", {})
            assert info.value.code == -32602
            with pytest.raises(MCPError) as info:
                await c.request("foo/bar")  # HTTP 404 with a JSON-RPC body
            assert info.value.code == -32601
            with pytest.raises(MCPError) as info:
                await c.call_tool("needs_sampling", {})  # HTTP 400
            assert info.value.code == -32021
            res = await c.call_tool("fail", {})
            assert res.isError is True
            # and the client still works afterwards
            assert (await c.call_tool("echo", {"text": "ok"})).content[0].text == "ok"

    run(go())


def test_unsupported_version_retries_with_supported_one(url):
    async def go():
        async with mcpkit.Client(url, protocol_version="2099-01-01") as c:
            d = await c.discover()
            assert VERSION in d.supportedVersions
            assert c.protocol_version == VERSION

    run(go())


def test_wrong_path_raises_transport_error(url):
    async def go():
        async with mcpkit.Client(url.replace("/mcp", "/nothing-here")) as c:
            with pytest.raises(TransportError) as info:
                await c.discover()
            assert "404" in str(info.value)

    run(go())


def test_nothing_listening_raises_transport_error():
    async def go():
        # Connecting probes the server's era, so the failure surfaces at connect time.
        async with mcpkit.Client(f"http://127.0.0.1:{free_port()}/mcp", timeout=5) as c:
            await c.discover()

    with pytest.raises(TransportError, match="failed"):
        run(go())


# ============================================================================ progress


def test_progress_callback_receives_progress(url):
    seen = []

    async def go():
        async with mcpkit.Client(url) as c:
            res = await c.call_tool("progress_steps", {"steps": 4},
                                    progress=lambda p, total, msg: seen.append((p, total, msg)))
            assert res.content[0].text == "finished 4"

    run(go())
    assert seen == [(i, 4, f"step {i}") for i in range(1, 5)]


def test_other_notifications_without_progress_callback(url):
    async def go():
        async with mcpkit.Client(url) as c:
            res = await c.call_tool("progress_steps", {"steps": 2})
            assert res.content[0].text == "finished 2"

    run(go())


# ============================================================================ Mcp-Param-*


def test_annotated_tool_sends_mcp_param_headers(url):
    async def go():
        rec = Recorder()
        try:
            async with mcpkit.Client(url, http_client=rec.client) as c:
                tools = {t.name: t for t in await c.list_tools()}
                assert tools["weather"].inputSchema["properties"]["region"]["x-mcp-header"] == "Region"
                res = await c.call_tool("weather", {"region": "eu-west", "count": 5})
                assert res.content[0].text == "eu-west:5" and not res.isError
                res = await c.call_tool("weather", {"region": "z\u00fcrich"})
                assert res.content[0].text == "z\u00fcrich:1"
        finally:
            await rec.client.aclose()
        first, second = rec.calls("tools/call")  # no -32020 retry was needed
        assert first["mcp-param-region"] == "eu-west"
        assert first["mcp-param-count"] == "5"
        assert second["mcp-param-region"].startswith("=?base64?")
        assert "mcp-param-count" not in second
        assert len(rec.calls("tools/list")) == 1

    run(go())


def test_annotated_tool_without_prior_list_recovers(url):
    async def go():
        rec = Recorder()
        try:
            async with mcpkit.Client(url, http_client=rec.client) as c:
                res = await c.call_tool("weather", {"region": "ap"})
                assert res.content[0].text == "ap:1"
        finally:
            await rec.client.aclose()
        # The first call lacked Mcp-Param-Region (-32020), so the client re-listed and retried.
        first, second = rec.calls("tools/call")
        assert "mcp-param-region" not in first
        assert second["mcp-param-region"] == "ap"
        assert len(rec.calls("tools/list")) == 1

    run(go())


def test_tool_with_invalid_annotation_excluded_from_list_tools(url):
    async def go():
        async with mcpkit.Client(url) as c:
            raw = await c.request("tools/list")
            assert "bad_header_tool" in {t["name"] for t in raw["tools"]}
            names = {t.name for t in await c.list_tools()}
            assert "bad_header_tool" not in names
            assert {"echo", "weather"} <= names

    run(go())


# ============================================================================ CLI


def _cli(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcpkit", *args], cwd=str(ROOT), env=subprocess_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_cli_discover_url(url):
    proc = _cli("discover", url)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "HTTP test server (http-test-server)" in out
    assert "v1.2.3" in out
    assert VERSION in out
    assert "For tests only." in out
    assert "echo" in out and "weather" in out
    assert "test://hello" in out and "notes://{name}" in out and "greet" in out
    assert "bad_header_tool" not in out


def test_cli_discover_json_url(url):
    proc = _cli("discover", "--json", url)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["discover"]  # --json: {"era", "discover", "tools", ...}
    assert data["supportedVersions"] == [VERSION]
    assert data["resultType"] == "complete"
    assert data["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "http-test-server"
    assert "tools" in data["capabilities"]


def test_cli_discover_nothing_listening():
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    proc = _cli("discover", dead)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"mcpkit discover: {dead}:"), proc.stderr
    assert any(w in proc.stderr.lower() for w in ("failed", "refused", "connect")), proc.stderr
