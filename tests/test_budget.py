"""Budgets for tool calls (``mcpkit.server.budget``): the size of a call's arguments and its
wall time, server-wide and per tool, in memory and from ``mcpkit serve`` over HTTP and
stdio; an over-budget call is a JSON-RPC error (the tool cancelled) and serving goes on."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Client, MCPError, Server
from mcpkit.server.budget import BUDGET_EXCEEDED, Budget, BudgetExceeded, parse_budget
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.servers import running_server
from tests.helpers.wire import HttpWire

OPS = SERVERS / "ops_server.py"


def text(result: Any) -> str:
    assert not result.isError, result
    return str(result.content[0].text)


def build(budget: Budget) -> tuple[Server, list[str]]:
    server = Server("budget")
    seen: list[str] = []

    @server.tool()
    async def slow(seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "done"

    @server.tool()
    def echo(text: str) -> str:
        return text

    budget.install(server)
    return server, seen


def test_a_call_over_its_time_is_cancelled_and_answered_with_an_error() -> None:
    server, seen = build(Budget(max_seconds=0.2, tools={"echo": Budget(max_body_bytes=40)}))

    async def go() -> None:
        async with Client(server) as client:
            started = time.monotonic()
            with pytest.raises(MCPError) as info:
                await client.call_tool("slow", {"seconds": 5})
            assert time.monotonic() - started < 2
            assert info.value.code == BUDGET_EXCEEDED
            assert info.value.data == {"limit": "maxSeconds", "value": 0.2, "tool": "slow"}
            assert "Tool slow: ran longer than its budget of 0.2 s and was cancelled" == info.value.message
            assert seen == ["cancelled"]
            assert text(await client.call_tool("slow", {"seconds": 0})) == "done"
            assert text(await client.call_tool("echo", {"text": "short"})) == "short"
            with pytest.raises(MCPError) as info:
                await client.call_tool("echo", {"text": "x" * 100})
            assert info.value.data == {"limit": "maxBodyBytes", "value": 40, "tool": "echo"}
            await client.list_tools()  # other methods have no budget

    run(go())


def test_a_tool_of_its_own_keeps_the_server_wide_fields_it_does_not_set() -> None:
    budget = Budget(max_seconds=1, max_body_bytes=100, tools={"slow": Budget(max_seconds=5)})
    assert budget.limits("slow") == (5, 100) and budget.limits("other") == (1, 100)
    server, _ = build(Budget(max_seconds=0.1, tools={"slow": Budget(max_seconds=3)}))

    async def go() -> None:
        async with Client(server) as client:
            assert text(await client.call_tool("slow", {"seconds": 0.3})) == "done"

    run(go())


def test_bad_budgets_are_refused() -> None:
    for bad in ({}, {"max_seconds": 0}, {"max_seconds": -1}, {"max_body_bytes": 0}, {"max_body_bytes": True}):
        with pytest.raises(ValueError):
            Budget(**bad)
    with pytest.raises(ValueError):
        Budget(max_seconds=1, tools={"a": Budget(max_seconds=1, tools={"b": Budget(max_seconds=1)})})
    b = parse_budget(["30", "render:120"], ["65536", "upload:1000000"])
    assert b.limits("render") == (120, 65536) and b.limits("upload") == (30, 1_000_000) and b.limits("x") == (30, 65536)
    for seconds, sizes in ((["abc"], []), (["0"], []), ([], ["1.5"]), ([], ["x:-3"])):
        with pytest.raises(ValueError):
            parse_budget(seconds, sizes)
    assert isinstance(BudgetExceeded("maxSeconds", 1, "t"), MCPError)


def test_mcpkit_serve_http_with_budgets_refuses_and_keeps_serving(tmp_path: Path) -> None:
    events = tmp_path / "events"
    argv = lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                         "--max-seconds", "0.5", "--max-seconds", "echo:5", "--max-body-bytes", "200", str(OPS)]
    with running_server(argv, env=subprocess_env(OPS_EVENTS=str(events))) as url, \
            httpx.Client(timeout=10, trust_env=False) as http:
        wire = HttpWire(http, url, client="budget")
        started = time.monotonic()
        status, reply = wire.call("tools/call", {"name": "slow", "arguments": {"seconds": 10}})
        assert time.monotonic() - started < 5
        assert status == 200 and reply["error"]["code"] == BUDGET_EXCEEDED, reply
        assert reply["error"]["data"] == {"limit": "maxSeconds", "value": 0.5, "tool": "slow"}
        deadline = time.monotonic() + 5
        while "slow cancelled" not in (events.read_text() if events.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "slow cancelled" in events.read_text()
        status, reply = wire.call("tools/call", {"name": "echo", "arguments": {"text": "y" * 500}})
        assert reply["error"]["data"] == {"limit": "maxBodyBytes", "value": 200, "tool": "echo"}
        status, reply = wire.call("tools/call", {"name": "echo", "arguments": {"text": "fine"}})
        assert reply["result"]["content"][0]["text"] == "fine"


def test_mcpkit_serve_stdio_with_a_budget_and_bad_values() -> None:
    async def go() -> Any:
        argv = [sys.executable, "-m", "mcpkit", "serve", "--max-seconds", "0.3", str(OPS)]
        async with Client(argv, env=subprocess_env()) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("slow", {"seconds": 10})
            assert info.value.code == BUDGET_EXCEEDED
            assert text(await client.call_tool("echo", {"text": "ok"})) == "ok"

    run(go())
    for flag, value in (("--max-seconds", "soon"), ("--max-body-bytes", "big"), ("--max-seconds", "slow:0")):
        out = mcpkit("serve", flag, value, OPS)
        assert out.returncode == 2, out
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"mcpkit serve: {flag} "), out.stderr
