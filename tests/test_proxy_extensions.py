"""Extensions through the proxy: skills (SEP-2640) and the 2026-07-28 tasks extension
(SEP-2663), carried when the backend offers them, and not advertised when it does not; a
2025-11-25 backend's tool tasks (npm server-everything) served as the tasks extension.

Backends: tests/servers/tasks_server.py (an mcpkit server with the tasks extension) over
stdio (``mcpkit serve``) and in process, and an mcpkit server serving skills. The strict
skills conformance leg through ``mcpkit proxy`` is in tests/test_proxy_conformance.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from msgspec import UNSET

from mcpkit import Client, MCPError, Server
from mcpkit.client import TaskCancelled, TaskHandle
from mcpkit.extensions.skills import Skills
from mcpkit.protocol import types as t
from mcpkit.proxy import ProxyServer, proxy
from tests.helpers.aio import run
from tests.helpers.paths import TASKS_SERVER, load_module, serve_argv

TASKS = load_module(TASKS_SERVER, "_tests_proxy_tasks_server")
TASKS_ID = "io.modelcontextprotocol/tasks"
SKILLS_ID = "io.modelcontextprotocol/skills"
SKILL_MD = "---\nname: pdf-processing\ndescription: Extract PDF text\n---\n\n# PDF\n\nSee references/FORMS.md.\n"
PDF = {"SKILL.md": SKILL_MD, "references/FORMS.md": "forms\n"}
URI = "skill://pdf-processing/SKILL.md"


def answer_name(params: t.ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "ok": True}}


def texts(result: t.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, t.TextContent)]


@pytest.fixture(params=["memory", "stdio"])
def tasks_proxy(request: pytest.FixtureRequest) -> Any:
    made: list[ProxyServer] = []

    def make() -> ProxyServer:
        server = proxy(TASKS.build() if request.param == "memory" else serve_argv(TASKS_SERVER))
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def test_tasks_extension_is_advertised_and_tasks_complete_through_the_proxy(
        tasks_proxy: Callable[[], ProxyServer]) -> None:
    front = tasks_proxy()

    async def go() -> None:
        async with Client(front, elicitation=answer_name) as client:
            card = await client.discover()
            assert card.capabilities.extensions is not None and TASKS_ID in card.capabilities.extensions
            handle = await client.call_tool("slow", {"seconds": 0.3, "label": "render"}, task=True)
            assert isinstance(handle, TaskHandle)
            assert handle.task_id and handle.status == "working"  # the backend's task handle
            assert texts(await handle.result()) == ["render done after 0.3s"]
            # A task that asks: tasks/get's inputRequests and tasks/update go through the proxy.
            asking = await client.call_tool("ask_twice", task=True)
            assert texts(await asking.result()) == ["Ada/True/Ada"]
            # Without the declaration the backend runs the optional tool synchronously...
            plain = await client.call_tool("slow", {"seconds": 0.01, "label": "now"})
            assert texts(plain) == ["now done after 0.01s"]
            # ...and refuses a task-only one with -32021 (its own answer, passed on).
            with pytest.raises(MCPError) as info:
                await client.call_tool("required_job")
            assert info.value.code == -32021

    run(go(), 60)


def test_task_cancel_and_failure_through_the_proxy(tasks_proxy: Callable[[], ProxyServer]) -> None:
    front = tasks_proxy()

    async def go() -> None:
        async with Client(front) as client:
            handle = await client.call_tool("slow", {"seconds": 30}, task=True)
            await handle.cancel()
            assert handle.status == "cancelled"
            with pytest.raises(TaskCancelled):
                await handle.result()
            failing = await client.call_tool("protocol_error", task=True)
            with pytest.raises(MCPError) as info:
                await failing.result()
            assert "the job broke" in info.value.message
            with pytest.raises(MCPError) as unknown:
                await client.request("tasks/get", {"taskId": "no-such-task"})
            assert unknown.value.code == -32021  # undeclared extension: the backend's own refusal, passed on

    run(go(), 60)


def test_skills_through_the_proxy() -> None:
    backend = Server("skills-backend")
    backend.use(Skills(PDF, directory_read=True))
    front = proxy(backend)
    try:
        async def go() -> None:
            async with Client(front) as client:
                card = await client.discover()
                assert card.capabilities.extensions == {SKILLS_ID: {"directoryRead": True}}
                listed = await client.request("skills/list", {})
                assert [s["uri"] for s in listed["skills"]] == [URI]
                got = await client.request("skills/get", {"uri": URI})
                assert got["skill"]["frontmatter"]["name"] == "pdf-processing"
                read = await client.read_resource(URI)
                assert "See references/FORMS.md." in read.contents[0].text
                directory = await client.request("resources/directory/read",
                                                 {"uri": "skill://pdf-processing/references"})
                assert [r["uri"] for r in directory["resources"]] == ["skill://pdf-processing/references/FORMS.md"]
                with pytest.raises(MCPError) as info:
                    await client.request("skills/get", {"uri": "skill://nope/SKILL.md"})
                assert info.value.code == -32602  # the backend's refusal, passed on

        run(go(), 60)
    finally:
        front.close()


def test_extensions_the_backend_lacks_are_not_advertised() -> None:
    backend = Server("plain")

    @backend.tool()
    def hello() -> str:
        return "hi"

    front = proxy(backend)
    try:
        async def go() -> None:
            async with Client(front) as client:
                card = await client.discover()
                assert card.capabilities.extensions is UNSET
                for method in ("skills/list", "tasks/get"):
                    with pytest.raises(MCPError) as info:
                        await client.request(method, {"taskId": "x"} if method == "tasks/get" else {})
                    assert info.value.code == -32601

        run(go(), 30)
    finally:
        front.close()


def test_a_legacy_backends_tool_tasks_reach_a_modern_client_as_the_tasks_extension() -> None:
    # npm server-everything (2025-11-25, stdio): simulate-research-query needs a task
    # (execution.taskSupport "required"), four stages of about a second each.
    import subprocess

    from tests.helpers.cli import everything_argv

    front = proxy(everything_argv(), stderr=subprocess.DEVNULL)
    try:
        assert front.backend.era == "legacy"

        async def go() -> None:
            async with Client(front) as client:
                card = await client.discover()
                assert card.capabilities.extensions is not UNSET and TASKS_ID in card.capabilities.extensions
                handle = await client.call_tool("simulate-research-query", {"topic": "tides"}, task=True)
                assert isinstance(handle, TaskHandle) and handle.task_id and handle.status == "working"
                assert handle.poll_interval == pytest.approx(1.0)  # the backend's pollInterval, as pollIntervalMs
                result = await handle.result()
                assert "Research Report: tides" in texts(result)[0]
                assert result.meta is UNSET or "io.modelcontextprotocol/related-task" not in result.meta
                doomed = await client.call_tool("simulate-research-query", {"topic": "waves"}, task=True)
                await doomed.cancel()
                assert doomed.status == "cancelled"
                with pytest.raises(MCPError) as info:  # no question of it waits (tests/test_proxy_tasks.py asks)
                    await client.request("tasks/update", {"taskId": doomed.task_id, "inputResponses": {}})
                assert info.value.code == -32602 and "is waiting here" in info.value.message
                plain = await client.call_tool("simulate-research-query", {"topic": "now"})
                assert plain.isError is True  # a task-only tool called plainly: the backend's own refusal
                assert "requires task augmentation" in texts(plain)[0]

        run(go(), 90)
    finally:
        front.close()
