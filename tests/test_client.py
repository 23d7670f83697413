"""The Client: in-memory and over stdio, ``_meta`` stamping, version retry, typed errors,
pagination, and the stdio shutdown sequence (close stdin, wait, SIGTERM, SIGKILL)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcpkit import Client, MCPError, Server
from mcpkit.client import ProtocolError, TransportClosed, TransportError
from mcpkit.client._transports import ClientTransport
from mcpkit.protocol import codec, errors
from mcpkit.protocol import types as t
from mcpkit.transports.stdio import StdioProcess
from tests.helpers.aio import run
from tests.helpers.messages import VERSION
from tests.helpers.paths import DEMO, MISBEHAVING, ROOT, TEST_SERVER, load_module

ENV = {"PYTHONPATH": str(ROOT)}


def demo_server() -> Server:
    return load_module(DEMO, "mcpkit_demo_example").server


def stdio_client(path=DEMO, **kw: Any) -> Client:
    return Client([sys.executable, str(path)], env=ENV, cwd=str(ROOT), stderr=subprocess.DEVNULL, **kw)


class Scripted(ClientTransport):
    """A transport answering from a function of (method, params); it records every request."""

    def __init__(self, answer: Callable[[str, dict], Any]) -> None:
        self.answer = answer
        self.sent: list[tuple[Any, str, dict]] = []

    async def request(self, id, method, params, on_note):
        self.sent.append((id, method, params))
        got = self.answer(method, params)
        if isinstance(got, errors.MCPError):
            return codec.Response(id, None, got.to_error())
        return codec.Response(id, got, None)


def scripted(answer: Callable[[str, dict], Any], **kw: Any) -> tuple[Client, Scripted]:
    client = Client(Server("unused"), cache=False, mode="modern", **kw)
    client.transport = fake = Scripted(answer)
    return client, fake


DISCOVER = {"resultType": "complete", "supportedVersions": [VERSION], "capabilities": {}, "ttlMs": 0,
            "cacheScope": "private", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}


# ====================================================================== the whole API, both transports
async def tour(client: Client) -> dict[str, Any]:
    async with client:
        d = await client.discover()
        tools = await client.list_tools()
        called = await client.call_tool("add", {"a": 2, "b": 40})
        temp = await client.call_tool("convert_temperature", {"value": 212})
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        note = await client.read_resource("notes://groceries")
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("summarize", {"name": "ideas", "style": "haiku"})
        completion = await client.complete({"type": "ref/resource", "uri": "notes://{name}"}, "name", "i")
        progress: list = []
        counted = await client.call_tool("count_down", {"start": 2}, progress=lambda *a: progress.append(a))
    return locals()


def check_tour(r: dict[str, Any]) -> None:
    assert isinstance(r["d"], t.DiscoverResult)
    assert r["d"].supportedVersions == [VERSION]
    assert r["d"].meta["io.modelcontextprotocol/serverInfo"]["name"] == "mcpkit-demo"
    assert [x.name for x in r["tools"]] == ["convert_temperature", "add", "count_down", "save_note"]
    assert r["called"].structuredContent == {"result": 42}
    assert r["temp"].structuredContent == {"value": 100.0, "unit": "celsius"}
    assert [x.uri for x in r["resources"]] == ["demo://clock"]
    assert [x.uriTemplate for x in r["templates"]] == ["notes://{name}"]
    assert r["note"].contents[0].text == "eggs, milk, coffee"
    assert [p.name for p in r["prompts"]] == ["summarize"]
    assert "haiku" in r["prompt"].messages[0].content.text
    assert r["completion"].values == ["ideas"]
    assert r["counted"].content[0].text == "liftoff"
    assert [p[0] for p in r["progress"]] == [0, 1, 2]


def test_in_memory_client_tour():
    check_tour(run(tour(Client(demo_server()))))


def test_stdio_client_tour():
    check_tour(run(tour(stdio_client())))


def test_client_accepts_a_command_string():
    async def go():
        async with Client(f'"{sys.executable}" "{DEMO}"', env=ENV, stderr=subprocess.DEVNULL) as c:
            return await c.discover()

    assert run(go()).supportedVersions == [VERSION]


# ====================================================================== _meta stamping
def test_every_request_is_stamped_with_meta():
    def answer(method, params):
        return {"server/discover": DISCOVER,
                "tools/list": {**DISCOVER, "tools": []},
                "tools/call": {"resultType": "complete", "content": []},
                "completion/complete": {"resultType": "complete", "completion": {"values": []}}}[method]

    client, fake = scripted(answer, client_info={"name": "me", "version": "9"}, capabilities={"roots": {}})

    async def go():
        await client.discover()
        await client.list_tools()
        await client.call_tool("x", {"a": 1})
        await client.complete({"type": "ref/prompt", "name": "p"}, "a", "b")

    run(go())
    assert [m for _, m, _ in fake.sent] == ["server/discover", "tools/list", "tools/call", "completion/complete"]
    for _, _, params in fake.sent:
        meta = params["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == VERSION
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}}
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "me", "version": "9"}
    ids = [i for i, _, _ in fake.sent]
    assert len(set(ids)) == len(ids)


def test_handler_sees_what_the_client_stamped_over_stdio():
    async def go():
        async with stdio_client(TEST_SERVER, client_info={"name": "probe", "version": "1.2"},
                                capabilities={"experimental": {"x": {}}}) as c:
            return await c.call_tool("whoami", progress=lambda *a: None)

    got = run(go()).structuredContent
    assert got["protocolVersion"] == VERSION
    assert got["clientInfo"] == {"name": "probe", "version": "1.2"}
    assert got["capabilities"] == {"experimental": {"x": {}}}
    assert got["progressToken"] is not None


# ====================================================================== version retry
def test_retry_once_with_a_mutually_supported_version_in_memory():
    async def go():
        async with Client(demo_server(), protocol_version="1900-01-01") as c:
            d = await c.discover()
            return c, d

    client, d = run(go())
    assert d.supportedVersions == [VERSION]
    assert client.protocol_version == VERSION


def test_retry_once_with_a_mutually_supported_version_over_stdio():
    async def go():
        async with stdio_client(protocol_version="1900-01-01") as c:
            return await c.call_tool("add", {"a": 1, "b": 1})

    assert run(go()).structuredContent == {"result": 2}


def test_retry_happens_only_once():
    client, fake = scripted(lambda m, p: errors.unsupported_version(
        p["_meta"]["io.modelcontextprotocol/protocolVersion"], [VERSION]), protocol_version="1900-01-01")
    with pytest.raises(MCPError) as info:
        run(client.discover())
    assert info.value.code == -32022
    versions_sent = [p["_meta"]["io.modelcontextprotocol/protocolVersion"] for _, _, p in fake.sent]
    assert versions_sent == ["1900-01-01", VERSION]


def test_no_retry_without_a_mutual_version():
    client, fake = scripted(lambda m, p: errors.unsupported_version("x", ["2099-01-01", "2025-11-25"]))
    with pytest.raises(MCPError) as info:
        run(client.discover())
    assert info.value.code == -32022
    assert info.value.data == {"supported": ["2099-01-01", "2025-11-25"], "requested": "x"}
    assert len(fake.sent) == 1


# ====================================================================== typed errors
def test_mcp_errors_carry_code_message_and_data():
    async def go():
        async with Client(demo_server()) as c:
            out = {}
            for name, call in [("tool", c.call_tool("nope")), ("resource", c.read_resource("notes://ghost")),
                               ("prompt", c.get_prompt("ghost")),
                               ("cursor", c.request("tools/list", {"cursor": "bogus"}))]:
                try:
                    await call
                except MCPError as exc:
                    out[name] = exc
            return out

    got = run(go())
    assert set(got) == {"tool", "resource", "prompt", "cursor"}
    assert (got["tool"].code, got["tool"].data) == (-32602, {"name": "nope"})
    assert "nope" in got["tool"].message
    assert (got["resource"].code, got["resource"].data) == (-32602, {"uri": "notes://ghost"})
    assert got["prompt"].code == -32602
    assert (got["cursor"].code, got["cursor"].data) == (-32602, {"cursor": "bogus"})
    assert all(not isinstance(e, TransportError) for e in got.values())


def test_unknown_method_over_stdio_is_an_mcp_error():
    async def go():
        async with stdio_client() as c:
            with pytest.raises(MCPError) as info:
                await c.request("tools/frobnicate")
            assert info.value.code == -32601
            return await c.call_tool("add", {"a": 1, "b": 2})  # still usable

    assert run(go()).structuredContent == {"result": 3}


def test_tool_failure_is_a_result_not_an_exception():
    async def go():
        async with Client(demo_server()) as c:
            return await c.call_tool("add", {"a": "x", "b": 1})

    r = run(go())
    assert r.isError is True


def test_malformed_result_is_a_protocol_error():
    client, _ = scripted(lambda m, p: {"resultType": "complete", "tools": "not a list", "ttlMs": 0, "cacheScope": "private"})
    with pytest.raises(ProtocolError):
        run(client.list_tools())
    assert issubclass(ProtocolError, TransportError)


# ====================================================================== local failures
def test_command_that_cannot_start_is_a_transport_error():
    async def go():
        async with Client(["/nonexistent/mcp-server-binary"]) as c:
            await c.discover()

    with pytest.raises(TransportError) as info:
        run(go())
    assert not isinstance(info.value, MCPError)
    assert "nonexistent" in str(info.value)


def test_server_that_exits_early_is_transport_closed():
    c = Client([sys.executable, str(MISBEHAVING), "crash"], env=ENV, stderr=subprocess.DEVNULL, timeout=10)

    async def go2():
        async with c:
            await c.discover()

    t0 = time.monotonic()
    with pytest.raises(TransportClosed):
        run(go2())
    assert time.monotonic() - t0 < 5


def test_server_that_never_answers_times_out():
    c = Client([sys.executable, str(MISBEHAVING), "silent"], env=ENV, stderr=subprocess.DEVNULL, timeout=0.3)

    async def go():
        async with c:
            await c.discover()

    t0 = time.monotonic()
    with pytest.raises(TransportError) as info:
        run(go())
    assert "no answer" in str(info.value)
    assert time.monotonic() - t0 < 3


def test_timed_out_request_is_cancelled_and_the_client_stays_usable():
    async def go():
        async with stdio_client(TEST_SERVER) as c:
            with pytest.raises(TransportError):
                await c.call_tool("sleep", {"seconds": 5}, timeout=0.2)
            return await c.call_tool("echo", {"text": "after"})

    t0 = time.monotonic()
    assert run(go()).content[0].text == "after"
    assert time.monotonic() - t0 < 3  # close() did not wait out the cancelled 5 s sleep


def test_concurrent_requests_on_one_client():
    async def go():
        async with stdio_client() as c:
            return await asyncio.gather(*(c.call_tool("add", {"a": i, "b": i}) for i in range(30)))

    results = run(go())
    assert [r.structuredContent["result"] for r in results] == [2 * i for i in range(30)]


# ====================================================================== pagination
def test_list_walks_every_page():
    s = Server("paged", page_size=2)
    for i in range(5):
        s.tool(name=f"t{i}")(lambda: "")

    async def go():
        async with Client(s) as c:
            return await c.list_tools()

    assert [x.name for x in run(go())] == [f"t{i}" for i in range(5)]


def test_empty_string_cursor_is_not_the_end():
    pages = {None: (["a"], ""), "": (["b"], "next"), "next": (["c"], None)}

    def answer(method, params):
        tools, nxt = pages[params.get("cursor")]
        r = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
             "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in tools]}
        if nxt is not None:
            r["nextCursor"] = nxt
        return r

    client, fake = scripted(answer)
    assert [x.name for x in run(client.list_tools())] == ["a", "b", "c"]
    assert [p.get("cursor") for _, _, p in fake.sent] == [None, "", "next"]


# ====================================================================== stdio shutdown
async def _close(mode: str, grace: float, stderr_path) -> tuple[int | None, float]:
    with open(stderr_path, "wb") as err:
        proc = StdioProcess(sys.executable, [str(MISBEHAVING), mode], env=ENV, stderr=err)
        await proc.start()
        assert await proc.receive() == b"ready\n"
        t0 = time.monotonic()
        code = await proc.close(grace=grace)
        return code, time.monotonic() - t0


def test_shutdown_closing_stdin_is_enough_for_a_polite_server(tmp_path):
    code, took = run(_close("polite", 1.0, tmp_path / "err"))
    assert code == 0 and took < 1.0
    assert (tmp_path / "err").read_text().splitlines() == ["EOF"]


def test_shutdown_sends_sigterm_after_the_grace_period(tmp_path):
    code, took = run(_close("termable", 0.3, tmp_path / "err"))
    assert code == 0
    assert 0.25 < took < 2
    assert (tmp_path / "err").read_text().splitlines() == ["EOF ignored", "SIGTERM"]


def test_shutdown_sends_sigkill_last(tmp_path):
    code, took = run(_close("stubborn", 0.3, tmp_path / "err"))
    assert code == -signal.SIGKILL
    assert 0.55 < took < 3
    assert (tmp_path / "err").read_text().splitlines() == ["EOF ignored", "SIGTERM ignored"]


def test_client_close_ends_the_demo_server_promptly():
    async def go():
        c = stdio_client()
        await c.discover()
        proc = c.transport.proc.proc
        t0 = time.monotonic()
        await c.close()
        return proc.returncode, time.monotonic() - t0

    code, took = run(go())
    assert code == 0 and took < 2
