"""Extensions as objects: ``server.use(extension)`` (mcpkit/extensions/__init__.py).

A toy extension (tests/servers/echo_ext_server.py) adds a capability, a method, a per-tool
option and a context helper through the public hooks only; it is served in process, over
stdio and over HTTP, in both eras, to clients that declare it and clients that do not.
Then every way to misuse the hook, and the deprecated spellings of the tasks extension
(which now installs through the same hook).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from mcpkit import Client, Context, MCPError, Server
from mcpkit.extensions import Extension
from mcpkit.extensions.tasks import InMemoryTaskStore, TaskOptions, Tasks
from tests.helpers.aio import run
from tests.helpers.legacy import LegacyHttp
from tests.helpers.messages import call, req
from tests.helpers.paths import ROOT, load_module, subprocess_env
from tests.helpers.servers import mcpkit_serve_argv, running_server
from tests.helpers.wire import LegacyStdioPeer

ECHO_SERVER = ROOT / "tests" / "servers" / "echo_ext_server.py"
ECHO = load_module(ECHO_SERVER, "_tests_echo_ext_server")
EXT, BADGE = ECHO.EXT, ECHO.BADGE_META
DECLARING = {"extensions": {EXT: {}}}
TASKS = "io.modelcontextprotocol/tasks"


async def exercise(client: Client, *, declared: bool) -> None:
    """What every served combination must show."""
    card = await client.discover()
    assert card.capabilities.extensions == {EXT: {"loud": True}}
    tools = {tool.name: tool for tool in await client.list_tools()}
    assert tools["hello"].meta == {BADGE: "*"}  # set by the extension's tool_options
    assert not tools["plain"].meta
    result = await client.call_tool("hello", {"name": "ada"})
    if declared:
        assert result.content[0].text == "HELLO ADA"
        assert result.meta[BADGE] == "***"  # the option, read back per call (repeat=3)
    else:
        assert result.content[0].text == "hello ada"
        assert not result.meta or BADGE not in result.meta
    plain = await client.call_tool("plain", {"name": "bo"})
    assert plain.content[0].text == "plain bo" and (not plain.meta or BADGE not in plain.meta)
    said = await client.request("echo/say", {"text": "hi"})
    assert said["text"] == ("HI" if declared else "hi") and said["declared"] is declared
    with pytest.raises(MCPError) as info:
        await client.request("echo/say", {"text": 5})
    assert info.value.code == -32602


def exercise_legacy(init: dict[str, Any], ask: Any) -> None:
    """The same over a raw 2025-11-25 session whose ``initialize`` declared the extension
    (``ask(msg)`` -> the response): mcpkit's own client declares no extension on that era."""
    assert init["capabilities"]["extensions"] == {EXT: {"loud": True}}
    tools = {tool["name"]: tool for tool in ask(req("l", "tools/list"))["result"]["tools"]}
    assert tools["hello"]["_meta"] == {BADGE: "*"} and "_meta" not in tools["plain"]
    result = ask(call("c", "hello", name="ada"))["result"]
    assert result["content"][0]["text"] == "HELLO ADA" and result["_meta"][BADGE] == "***"
    said = ask(req("s", "echo/say", {"text": "hi"}))["result"]
    assert said["text"] == "HI" and said["declared"] is True
    assert ask(req("b", "echo/say", {"text": 5}))["error"]["code"] == -32602


@pytest.mark.parametrize("declared", [True, False])
def test_toy_extension_in_process(declared: bool) -> None:
    async def go() -> None:
        async with Client(ECHO.server, capabilities=DECLARING if declared else None) as client:
            await exercise(client, declared=declared)

    run(go())
    ext = ECHO.server.get_extension(ECHO.Echo)
    assert ext is not None and ext.calls >= 2 and ECHO.server.extensions == {EXT: ext}


# mcpkit's client declares extensions on 2026-07-28 only: the legacy-declared case is a raw session.
@pytest.mark.parametrize(("mode", "declared"), [("2026-07-28", True), ("2026-07-28", False), ("legacy", False)])
def test_toy_extension_over_stdio(mode: str, declared: bool) -> None:
    async def go() -> None:
        async with Client([sys.executable, str(ECHO_SERVER)], mode=mode, env={"PYTHONPATH": str(ROOT)},
                          capabilities=DECLARING if declared else None) as client:
            assert client.era == ("legacy" if mode == "legacy" else "modern")
            await exercise(client, declared=declared)

    run(go())


def test_toy_extension_over_stdio_legacy_declared() -> None:
    peer = LegacyStdioPeer([sys.executable, str(ECHO_SERVER)], env=subprocess_env())
    try:
        exercise_legacy(peer.handshake(caps=DECLARING), peer.ask)
    finally:
        peer.close()


@pytest.fixture(scope="module")
def http_url() -> Any:
    with running_server(mcpkit_serve_argv(ECHO_SERVER)) as url:
        yield url


# mcpkit's client declares extensions on 2026-07-28 only: the legacy-declared case is a raw session.
@pytest.mark.parametrize(("mode", "declared"), [("2026-07-28", True), ("2026-07-28", False), ("legacy", False)])
def test_toy_extension_over_http(http_url: str, mode: str, declared: bool) -> None:
    async def go() -> None:
        async with Client(http_url, mode=mode, capabilities=DECLARING if declared else None) as client:
            assert client.era == ("legacy" if mode == "legacy" else "modern")
            await exercise(client, declared=declared)

    run(go())


# ====================================================================== misuse
class Bare(Extension[None]):
    id = "com.example/bare"


def test_use_refuses_what_is_not_an_extension() -> None:
    server = Server("x")
    with pytest.raises(TypeError, match="Extension"):
        server.use("tasks")  # type: ignore[type-var]
    with pytest.raises(TypeError, match="Extension"):
        server.use(Tasks)  # type: ignore[type-var]  (the class, not an instance)

    class NoId(Extension[None]):
        pass

    class BadId(Extension[None]):
        id = "tasks"

    for ext in (NoId(), BadId()):
        with pytest.raises(ValueError, match="not a valid extension identifier"):
            server.use(ext)
    assert not server.extensions and server.capabilities.extensions is None or not server.capabilities.extensions


def test_use_twice_is_refused_and_returns_the_extension() -> None:
    server = Server("x")
    bare = Bare()
    assert server.use(bare) is bare
    with pytest.raises(RuntimeError, match="already installed"):
        server.use(Bare())
    assert server.get_extension(Bare) is bare and server.get_extension(Tasks) is None
    assert server.capabilities.extensions == {"com.example/bare": {}}


def test_a_failing_install_leaves_nothing_behind() -> None:
    class Broken(Extension[None]):
        id = "com.example/broken"

        def install(self, server: Server) -> None:
            server.wrap_method("no/such", lambda ctx, params, call_next: call_next(ctx, params))

    server = Server("x")
    server.add_extension("com.example/broken", {"was": "here"})  # advertised by hand before
    with pytest.raises(ValueError, match="no method"):
        server.use(Broken())
    assert not server.extensions and server.capabilities.extensions == {"com.example/broken": {"was": "here"}}
    fresh = Server("y")
    with pytest.raises(ValueError):
        fresh.use(Broken())
    assert not fresh.capabilities.extensions and "extensions/com.example/broken" not in fresh.capability_names


def test_tool_options_need_the_extension_installed_and_accepting() -> None:
    server = Server("x")
    with pytest.raises(ValueError, match="enable it first"):
        server.tool(extensions={"com.example/bare": {}})(lambda: "x")
    server.use(Bare())
    with pytest.raises(ValueError, match="takes no per-tool options"):
        server.tool(extensions={"com.example/bare": {"a": 1}})(lambda: "x")
    assert not server.tools  # refused tools are not registered
    server.use(ECHO.Echo())
    with pytest.raises(ValueError, match="options are"):
        server.tool(extensions={EXT: {"badge": 1}})(lambda: "x")

    @server.tool(extensions={EXT: {"badge": "!"}})
    def ok() -> str:
        return "ok"

    assert server.tools["ok"].options(EXT) == ECHO.EchoOptions("!", 1)
    assert server.tools["ok"].options("com.example/other") is None
    assert server.tools["ok"].wire.meta == {BADGE: "!"}
    server.tools["ok"].set_meta(BADGE, None)
    assert not server.tools["ok"].wire.meta


def test_ctx_extension_of_what_is_not_installed() -> None:
    server = Server("x")
    server.use(Bare())
    seen: dict[str, Any] = {}

    @server.tool()
    def probe(ctx: Context) -> str:
        for kind in (Tasks, Bare):
            try:
                ctx.extension(kind)
            except (LookupError, TypeError) as exc:
                seen[kind.__name__] = exc
        seen["client_extension"] = ctx.client_extension(EXT)
        return "ok"

    async def go() -> None:
        async with Client(server, capabilities={"extensions": {EXT: {"v": 1}}}) as client:
            await client.call_tool("probe", {})

    run(go())
    assert isinstance(seen["Tasks"], LookupError) and "server.use(Tasks(...))" in str(seen["Tasks"])
    assert isinstance(seen["Bare"], TypeError) and "no context helper" in str(seen["Bare"])
    assert seen["client_extension"] == {"v": 1}


def test_extensions_load_only_when_used() -> None:
    code = ("import sys, mcpkit, mcpkit.extensions; from mcpkit import Server, Context; s = Server('x'); "
            "s.tool()(lambda: 1); "
            "bad = [m for m in sys.modules if m.startswith('mcpkit.extensions.') or m == 'mcpkit.protocol.tasks']; "
            "assert not bad, bad; "
            "from mcpkit.extensions import Tasks; assert 'mcpkit.extensions.tasks' in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), check=False)
    assert proc.returncode == 0, proc.stderr


# ====================================================================== deprecated tasks spellings
def test_the_deprecated_server_spellings_install_the_extension() -> None:
    store = InMemoryTaskStore()
    for server in (Server("a", tasks=True), Server("b", tasks=store), Server("c", task_store=store)):
        tasks = server.get_extension(Tasks)
        assert tasks is not None and server.tasks is tasks and server.extensions == {TASKS: tasks}
        assert server.capabilities.extensions == {TASKS: {}}
    assert Server("c", task_store=store).tasks.store is store  # type: ignore[union-attr]
    server = Server("d")
    assert server.tasks is None
    tasks = server.enable_tasks(ttl_ms=5_000, poll_interval_ms=10)
    assert server.tasks is tasks and tasks.ttl_ms == 5_000 and tasks.poll_interval_ms == 10
    with pytest.raises(RuntimeError, match="already enabled"):
        server.enable_tasks()
    with pytest.raises(TypeError, match="TaskStore"):
        Server("e", tasks="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl_ms"):
        Server("f").enable_tasks(ttl_ms=0)


def test_the_deprecated_tool_spelling_is_the_extensions_option() -> None:
    server = Server("t", tasks=True)

    @server.tool(task="required", task_start="explicit")
    def a() -> str:
        return "a"

    @server.tool(task="optional")
    def b() -> str:
        return "b"

    @server.tool(task="never", task_start="explicit")
    def c() -> str:
        return "c"

    assert server.tools["a"].options(TASKS) == TaskOptions("required", "explicit")
    assert server.tools["b"].options(TASKS) == TaskOptions("optional", "immediate")
    assert server.tools["c"].options(TASKS) is None
    with pytest.raises(ValueError, match="task must be one of"):
        server.tool(task="sometimes")(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task must be one of"):
        server.tool(task="optional", task_start="later")(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="once"):
        server.tool(task="optional", extensions={TASKS: {"support": "optional"}})(lambda: "x")
    with pytest.raises(ValueError, match="enable it first"):
        Server("p").tool(task="optional")(lambda: "x")


def test_the_deprecated_context_spellings() -> None:
    server = Server("t")
    server.use(Tasks(poll_interval_ms=10))
    seen: dict[str, Any] = {}

    @server.tool(extensions={Tasks.id: {"support": "optional", "start": "explicit"}})
    async def job(ctx: Context) -> str:
        seen["before"] = ctx.task_id
        seen["started"] = await ctx.start_task()
        seen["after"] = ctx.task_id
        seen["helper"] = ctx.extension(Tasks).task_id
        await ctx.report_progress(1, 2, "half way")
        await asyncio.sleep(0.05)
        return "done"

    @server.tool()
    async def sync(ctx: Context) -> str:
        seen["sync"] = (ctx.task_id, await ctx.start_task(), ctx.extension(Tasks).declared)
        return "sync"

    plain = Server("p")

    @plain.tool()
    async def bare(ctx: Context) -> str:
        seen["bare"] = (ctx.task_id, await ctx.start_task())
        return "bare"

    async def go() -> None:
        async with Client(server) as client:
            handle = await client.call_tool("job", {}, task=True)
            result = await handle.result()
            assert result.content[0].text == "done"
            assert (await client.call_tool("sync", {})).content[0].text == "sync"
        async with Client(plain) as client:
            await client.call_tool("bare", {})

    run(go())
    assert seen["before"] is None and seen["started"] is True
    assert seen["after"] is not None and seen["after"] == seen["helper"]
    assert seen["sync"] == (None, False, False)
    assert seen["bare"] == (None, False)


def test_toy_extension_over_http_legacy_declared(http_url: str) -> None:
    session = LegacyHttp(http_url)
    try:
        exercise_legacy(session.initialize(caps=DECLARING), lambda msg: session.ask(msg)[0])
    finally:
        session.delete()
        session.client.close()


def test_tasks_methods_stay_unknown_to_legacy_sessions() -> None:
    # Extension methods serve legacy sessions too; the tasks ones answer -32601 there, as before.
    peer = LegacyStdioPeer([sys.executable, "-m", "mcpkit", "serve", str(ROOT / "tests" / "servers" / "tasks_server.py")],
                           env=subprocess_env())
    try:
        peer.handshake(caps={"extensions": {TASKS: {}}})
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            resp = peer.ask(req(method, method, {"taskId": "x", "inputResponses": {}}))
            assert resp["error"]["code"] == -32601, resp
        result = peer.ask(call("slow", "slow", seconds=0))["result"]
        assert result["content"][0]["text"] == "job done after 0s" and "taskId" not in result
    finally:
        peer.close()
