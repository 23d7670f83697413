"""The tasks extension on the client: ``call_tool(..., task=True)`` returns a :class:`TaskHandle`
that polls at the server's interval, answers ``input_required`` through the client's own
handlers, cancels, and returns the final result; a plain call from a client that declared the
extension waits for a task instead of failing with ``unknown resultType 'task'``.

Against ``tests/servers/tasks_server.py`` over stdio (``mcpkit serve``), HTTP and in memory.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcpkit import Client, MCPError
from mcpkit.client import TaskCancelled, TaskHandle
from mcpkit.client._tasks import EXTENSION_ID
from mcpkit.protocol import types as t
from tests.helpers.aio import run
from tests.helpers.paths import TASKS_SERVER, load_module, serve_argv
from tests.helpers.servers import mcpkit_serve_argv, running_server

TASKS = load_module(TASKS_SERVER, "_tests_client_tasks_server")


def answer_name(params: t.ElicitRequestParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "ok": True}}


def texts(result: t.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, t.TextContent)]


@pytest.fixture(params=["memory", "stdio"])
def target(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return lambda: TASKS.build()
    return lambda: serve_argv(TASKS_SERVER)


def test_task_handle_polls_to_the_result(target):
    async def go() -> None:
        async with Client(target(), elicitation=answer_name) as client:
            handle = await client.call_tool("slow", {"seconds": 0.3, "label": "render"}, task=True)
            assert isinstance(handle, TaskHandle)
            assert handle.task_id and handle.status == "working" and not handle.done
            assert handle.poll_interval == pytest.approx(0.05)  # the server's pollIntervalMs
            seen: list[str] = []
            result = await handle.result(on_status=lambda status, message: seen.append(status))
            assert texts(result) == ["render done after 0.3s"]
            assert seen[0] == "working" and seen[-1] == "completed"
            assert handle.done and handle.status == "completed"

    run(go(), 30)


def test_input_required_is_answered_by_the_elicitation_handler(target):
    async def go() -> None:
        async with Client(target(), elicitation=answer_name) as client:
            handle = await client.call_tool("ask_name", task=True)
            assert texts(await handle.result()) == ["Hello, Ada!"]
            twice = await client.call_tool("ask_twice", task=True)
            assert texts(await twice.result()) == ["Ada/True/Ada"]

    run(go(), 30)


def test_cancel(target):
    async def go() -> None:
        async with Client(target()) as client:
            handle = await client.call_tool("slow", {"seconds": 30}, task=True)
            await handle.cancel()
            assert handle.status == "cancelled"
            with pytest.raises(TaskCancelled):
                await handle.result()

    run(go(), 30)


def test_failed_task_raises_its_error_and_tool_errors_are_results(target):
    async def go() -> None:
        async with Client(target()) as client:
            handle = await client.call_tool("protocol_error", task=True)
            with pytest.raises(MCPError) as info:
                await handle.result()
            assert info.value.code == -32603 and "the job broke" in info.value.message
            tool_error = await (await client.call_tool("tool_error", task=True)).result()
            assert tool_error.isError is True

    run(go(), 30)


def test_a_call_answered_at_once_is_a_completed_handle(target):
    async def go() -> None:
        async with Client(target()) as client:
            handle = await client.call_tool("greet", {"name": "Bo"}, task=True)
            assert handle.task_id is None and handle.done
            assert texts(await handle.result()) == ["Hello, Bo!"]
            fast = await client.call_tool("maybe_task", task=True)
            assert texts(await fast.result()) == ["fast answer"]

    run(go(), 30)


def test_required_task_tool_needs_task_true(target):
    async def go() -> None:
        async with Client(target()) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("required_job")
            assert info.value.code == -32021
            assert texts(await (await client.call_tool("required_job", task=True)).result()) == ["required job done"]

    run(go(), 30)


def test_declared_extension_plain_call_waits_for_the_task(target):
    # Before: "unknown resultType 'task'".
    async def go() -> None:
        caps = {"extensions": {EXTENSION_ID: {}}}
        async with Client(target(), capabilities=caps, elicitation=answer_name) as client:
            result = await client.call_tool("slow", {"seconds": 0.1})
            assert isinstance(result, t.CallToolResult)
            assert texts(result) == ["job done after 0.1s"]
            assert texts(await client.call_tool("ask_name")) == ["Hello, Ada!"]
            handle = await client.call_tool("slow", {"seconds": 0.1}, task=True)
            assert handle.task_id is not None

    run(go(), 30)


def test_task_true_declares_the_extension_on_that_request_only(target):
    async def go() -> None:
        async with Client(target()) as client:
            assert "extensions" not in client.capabilities
            handle = await client.call_tool("slow", {"seconds": 0.05}, task=True)
            assert handle.task_id is not None
            await handle.result()
            # Without task=True the same tool runs synchronously: nothing was declared for good.
            assert texts(await client.call_tool("slow", {"seconds": 0.05})) == ["job done after 0.05s"]

    run(go(), 30)


def test_result_timeout_leaves_the_task_running():
    async def go() -> None:
        async with Client(TASKS.build()) as client:
            handle = await client.call_tool("slow", {"seconds": 1.0}, task=True)
            t0 = time.monotonic()
            with pytest.raises(TimeoutError):
                await handle.result(timeout=0.2)
            assert time.monotonic() - t0 < 1.0
            assert texts(await handle.result()) == ["job done after 1s"]

    run(go(), 30)


def test_status_message_from_progress():
    async def go() -> None:
        async with Client(TASKS.build()) as client:
            handle = await client.call_tool("progress_job", task=True)
            messages: list[str | None] = []
            await handle.result(on_status=lambda status, message: messages.append(message))
            assert "half way" in messages

    run(go(), 30)


def test_over_http():
    with running_server(mcpkit_serve_argv(TASKS_SERVER)) as url:
        async def go() -> None:
            async with Client(url, elicitation=answer_name) as client:
                handle = await client.call_tool("ask_name", task=True)
                assert handle.task_id is not None
                assert texts(await handle.result()) == ["Hello, Ada!"]
                cancelled = await client.call_tool("slow", {"seconds": 30}, task=True)
                await cancelled.cancel()
                assert cancelled.status == "cancelled"

        run(go(), 30)


def test_a_legacy_session_gets_a_completed_handle():
    async def go() -> None:
        async with Client(serve_argv(TASKS_SERVER), mode="legacy") as client:
            assert client.era == "legacy"
            handle = await client.call_tool("slow", {"seconds": 0.05}, task=True)
            assert handle.task_id is None and texts(await handle.result()) == ["job done after 0.05s"]

    run(go(), 30)
