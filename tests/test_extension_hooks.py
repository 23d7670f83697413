"""The public extension hooks, used the way a third-party extension would use them.

``add_extension`` advertises, ``add_method`` serves a new method, ``wrap_method`` and
``add_middleware`` wrap existing ones, and ``Context`` gives a handler its emitter, input
channel and an extension-data slot. Exercised in process and over a real stdio server in
both eras.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import msgspec
import pytest

from mcpkit import Client, Context, MCPError, Server
from mcpkit import types as t
from tests.helpers.aio import run
from tests.helpers.paths import ROOT

EXT = "com.example/echo"


class EchoParams(t.RequestParams, kw_only=True):
    text: str


class EchoResult(t.Result, kw_only=True):
    text: str
    calls: int


def build() -> tuple[Server, list[str]]:
    server = Server("hooks", "1.0.0")
    seen: list[str] = []

    @server.tool()
    async def add(ctx: Context, a: int, b: int) -> int:
        await ctx.emit("notifications/message", {"level": "info", "data": f"wrapped={ctx.extensions.get(EXT)}"})
        return a + b

    server.add_extension(EXT, {"loud": True})

    async def echo(ctx: Context, params: EchoParams) -> EchoResult:
        ctx.extensions[EXT] = "echo"
        return EchoResult(text=params.text.upper(), calls=seen.count("echo/say"))

    server.add_method("echo/say", echo, EchoParams, capability=f"extensions/{EXT}")

    async def tag_calls(ctx: Context, params: Any, call_next: Any) -> Any:
        ctx.extensions[EXT] = "tagged"
        result = await call_next(ctx, params)
        result.meta = {**(result.meta if isinstance(result.meta, dict) else {}), "com.example/wrapped": True}
        return result

    server.wrap_method("tools/call", tag_calls)

    async def audit(ctx: Context, params: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx, params)

    server.add_middleware(audit)
    return server, seen


def test_hooks_in_process() -> None:
    server, seen = build()

    async def go() -> None:
        async with Client(server) as client:
            card = await client.discover()
            assert card.capabilities.extensions == {EXT: {"loud": True}}
            logs: list[dict[str, Any]] = []
            result = await client.call_tool("add", {"a": 2, "b": 3}, log_level="debug", on_log=logs.append)
            assert result.structuredContent == {"result": 5}
            assert result.meta["com.example/wrapped"] is True
            assert logs and logs[0]["data"] == "wrapped=tagged"
            raw = await client.request("echo/say", {"text": "hi"})
            assert raw["text"] == "HI"
            assert raw["calls"] == 1  # the middleware ran before the handler
            with pytest.raises(MCPError) as info:
                await client.request("echo/say", {"text": 5})
            assert info.value.code == -32602

    run(go())
    # Middleware saw every method, core and extension alike.
    assert {"server/discover", "tools/call", "echo/say"} <= set(seen)


def test_wrap_unknown_method_is_refused() -> None:
    server = Server("x")

    async def w(ctx: Context, params: Any, call_next: Any) -> Any:
        return await call_next(ctx, params)

    with pytest.raises(ValueError):
        server.wrap_method("no/such", w)


def test_extension_method_needs_its_capability() -> None:
    server = Server("x")

    async def h(ctx: Context, params: EchoParams) -> EchoResult:
        return EchoResult(text=params.text, calls=0)

    server.add_method("echo/say", h, EchoParams, capability=f"extensions/{EXT}")  # not advertised

    async def go() -> None:
        async with Client(server) as client:
            with pytest.raises(MCPError) as info:
                await client.request("echo/say", {"text": "a"})
            assert info.value.code == -32601

    run(go())


SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_extension_hooks import build
    server, _ = build()
    server.run()
""")


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_wrappers_and_middleware_serve_both_eras_over_stdio(tmp_path: Any, mode: str) -> None:
    script = tmp_path / "hooks_server.py"
    script.write_text(SCRIPT.format(tests=str(ROOT / "tests")))

    async def go() -> None:
        async with Client([sys.executable, str(script)], mode=mode, env={"PYTHONPATH": str(ROOT)}) as client:
            assert client.era == ("legacy" if mode == "legacy" else "modern")
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result.structuredContent == {"result": 42}
            assert result.meta["com.example/wrapped"] is True

    run(go())


def test_result_types_are_plain() -> None:
    # Extension results encode like core ones.
    assert msgspec.json.decode(msgspec.json.encode(EchoResult(text="a", calls=1))) == {
        "resultType": "complete", "text": "a", "calls": 1}
