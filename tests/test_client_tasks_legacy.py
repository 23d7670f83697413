"""2025-11-25 tasks on the client, against the real peer: npm server-everything's
``simulate-research-query`` (``execution.taskSupport: "required"``; stages of a second each,
``pollInterval`` 1000 ms), over stdio and Streamable HTTP, through the Client and ``mcpkit call
--task``. The same :class:`TaskHandle` as the 2026-07-28 tasks extension.

A peer that cannot be installed FAILS these tests.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpkit import EraCache, MCPError
from mcpkit.client import Client, ProtocolError, TaskCancelled, TaskHandle
from mcpkit.client._tasks_legacy import LegacyTaskHandle, augment, is_created, offers_tool_tasks
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit
from tests.helpers.paths import DEMO
from tests.test_legacy_everything import everything_http, stdio_argv


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_cli_call_task_completes_on_server_everything() -> None:
    """The acceptance: ``mcpkit call simulate-research-query topic=mcp --task -- node server-everything``."""
    proc = mcpkit("call", "simulate-research-query", "topic=mcp", "--task", "--", *stdio_argv(), timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "Research Report" in proc.stdout and "mcp" in proc.stdout
    assert "requires task augmentation" not in proc.stderr


def _research(target: Any, **options: Any) -> tuple[Any, ...]:
    async def main() -> tuple[Any, ...]:
        async with Client(target, era_cache=EraCache(), **options) as client:
            statuses: list[str] = []
            handle = await client.call_tool("simulate-research-query", {"topic": "tides"}, task=True)
            first = (type(handle), handle.task_id, handle.status, handle.poll_interval)
            listed = [t["taskId"] for t in await client.list_tasks()]
            result = await handle.result(on_status=lambda status, message: statuses.append(status))
            again = await handle.result()  # the outcome is kept: no second tasks/result
            return first, listed, statuses, text_of(result), result is again, handle.status, handle.done

    return run(main(), 60)


def test_task_over_stdio() -> None:
    first, listed, statuses, text, same, status, done = _research(stdio_argv(), stderr=subprocess.DEVNULL)
    kind, task_id, created_status, interval = first
    assert issubclass(kind, TaskHandle) and kind is LegacyTaskHandle
    assert isinstance(task_id, str) and task_id in listed
    assert created_status == "working" and interval == 1.0
    assert statuses[0] == "working" and statuses[-1] == "completed"
    assert "tides" in text and same
    assert (status, done) == ("completed", True)


def test_task_over_streamable_http() -> None:
    with everything_http() as url:
        first, listed, statuses, text, same, status, done = _research(url)
    assert first[0] is LegacyTaskHandle and first[1] in listed
    assert statuses[-1] == "completed" and "tides" in text


def test_task_cancel_and_timeout() -> None:
    async def main() -> tuple[Any, ...]:
        async with Client(stdio_argv(), era_cache=EraCache(), stderr=subprocess.DEVNULL) as client:
            handle = await client.call_tool("simulate-research-query", {"topic": "waves"}, task=True)
            with pytest.raises(TimeoutError, match="not finished within 0.2 s"):
                await handle.result(timeout=0.2)
            await handle.cancel()
            status = handle.status
            with pytest.raises(TaskCancelled):
                await handle.result()
            await handle.cancel()  # a finished task is left as it is
            polled = await handle.poll()
            by_id = {t["taskId"]: t["status"] for t in await client.list_tasks()}
            return status, polled, by_id.get(handle.task_id)

    status, polled, listed = run(main(), 60)
    assert status == polled == "cancelled"
    assert listed in ("cancelled", None)  # a receiver may delete a cancelled task at once


def test_a_required_task_tool_without_task_is_the_servers_error() -> None:
    async def main() -> str:
        async with Client(stdio_argv(), era_cache=EraCache(), stderr=subprocess.DEVNULL) as client:
            try:
                result = await client.call_tool("simulate-research-query", {"topic": "x"})
            except MCPError as exc:
                return str(exc)
            assert result.isError
            return text_of(result)

    assert "task augmentation" in run(main(), 60)


def test_a_server_without_tool_tasks_answers_at_once() -> None:
    """No ``tasks.requests.tools.call`` in the server's capabilities: the call is not augmented
    (the spec forbids it) and the handle is complete at once."""
    async def main() -> tuple[Any, ...]:
        async with Client([sys.executable, str(DEMO)], mode="legacy", era_cache=EraCache()) as client:
            handle = await client.call_tool("add", {"a": 1, "b": 2}, task=True)
            return handle.task_id, handle.status, text_of(await handle.result())

    task_id, status, text = run(main(), 60)
    assert (task_id, status) == (None, "completed") and "3" in text


def test_the_wire_shapes() -> None:
    offered = {"capabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}}
    assert offers_tool_tasks(offered)
    for init in (None, {}, {"capabilities": {"tasks": {}}}, {"capabilities": {"tasks": {"requests": {"tools": []}}}}):
        assert not offers_tool_tasks(init)
    assert augment({"name": "t"}, offered) == {"name": "t", "task": {}}
    assert augment({"name": "t"}, {}) == {"name": "t"}
    assert is_created({"task": {"taskId": "a"}}) and not is_created({"content": [], "task": {}})
    with pytest.raises(ProtocolError, match="without a taskId"):
        LegacyTaskHandle(None, {"task": {"status": "working"}})  # type: ignore[arg-type]


# ---------------------------------------------------------------- input_required (elicitation in a task)
def _ambiguous(target: Any, answer: dict[str, Any], **options: Any) -> tuple[list[Any], list[tuple[str, Any]], str, str]:
    """``simulate-research-query`` with ``ambiguous``: at its third stage the task goes
    ``input_required`` and the server's ``elicitation/create`` (related to the task) is delivered
    while the client waits on ``tasks/result``, answered by the client's elicitation handler."""
    async def main() -> tuple[list[Any], list[tuple[str, Any]], str, str]:
        asked: list[Any] = []
        statuses: list[tuple[str, Any]] = []

        async def elicit(params: Any) -> dict[str, Any]:
            asked.append((params, statuses[-1][0] if statuses else None))
            return answer

        async with Client(target, era_cache=EraCache(), elicitation=elicit, **options) as client:
            handle = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True}, task=True)
            result = await handle.result(on_status=lambda status, message: statuses.append((status, message)))
            return asked, statuses, text_of(result), handle.status

    return run(main(), 60)


@pytest.mark.parametrize("over", ["stdio", "http"])
def test_a_task_that_needs_input_is_answered_through_tasks_result(over: str) -> None:
    accept = {"action": "accept", "content": {"interpretation": "historical"}}
    if over == "stdio":
        asked, statuses, text, status = _ambiguous(stdio_argv(), accept, stderr=subprocess.DEVNULL)
    else:
        with everything_http() as url:
            asked, statuses, text, status = _ambiguous(url, accept)
    assert len(asked) == 1
    params, status_when_asked = asked[0]
    assert status_when_asked == "input_required"  # asked once the task said so
    assert "tides" in params.message
    assert [o["const"] for o in params.requestedSchema["properties"]["interpretation"]["oneOf"]] == \
        ["technical", "historical", "current"]
    seen = [s for s, _ in statuses]
    assert seen[0] == "working" and "input_required" in seen and seen[-1] == "completed"
    assert statuses[-1] == ("completed", None)
    assert "# Research Report: tides (historical)" in text and "**Clarification**: historical" in text
    assert status == "completed"


def test_a_declined_question_lets_the_task_go_on_with_its_default() -> None:
    asked, statuses, text, status = _ambiguous(stdio_argv(), {"action": "decline"}, stderr=subprocess.DEVNULL)
    assert len(asked) == 1 and status == "completed"
    assert "User declined - using default interpretation" in text


def test_without_an_elicitation_handler_the_task_never_asks() -> None:
    # The client declares no elicitation capability: server-everything does not ask at all.
    async def main() -> str:
        async with Client(stdio_argv(), era_cache=EraCache(), stderr=subprocess.DEVNULL) as client:
            handle = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True}, task=True)
            return text_of(await handle.result())

    text = run(main(), 60)
    assert "# Research Report: tides\n" in text and "Clarification" not in text


def test_cli_call_task_asks_the_tasks_question_on_a_terminal() -> None:
    # `mcpkit call --task` on a terminal: the task's question (a titled single-select enum) is
    # asked with its choices while the task is input_required; the answer reaches the task.
    from tests.test_cli_newcomer import on_a_terminal

    code, out, term, _ = on_a_terminal(["call", "simulate-research-query", "topic=tides", "ambiguous=true", "--task",
                                        "--", *stdio_argv()], wait_for="choose (1-3", then="2\n\n", timeout=60)
    assert code == 0, term
    assert "task input_required: Found multiple interpretations" in term
    assert "2. historical - Historical perspective" in term
    assert "# Research Report: tides (historical)" in out
