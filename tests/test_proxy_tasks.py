"""2025-11-25 tasks through the proxy to a 2025-11-25 backend (npm server-everything's
``simulate-research-query``, ``execution.taskSupport: "required"``), for a 2025-11-25 front
client: the ``tasks`` capability in ``initialize``, a task-augmented ``tools/call``,
``tasks/get``, ``tasks/list``, ``tasks/cancel``, ``tasks/result``, and the question a task asks
(its ``ambiguous`` argument) reaching the front client as a real ``elicitation/create``.

A peer that cannot be installed FAILS these tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import EraCache, MCPError
from mcpkit.client import Client, TaskCancelled
from mcpkit.client._tasks_legacy import LegacyTaskHandle
from tests.helpers.aio import run
from tests.helpers.cli import everything_argv
from tests.helpers.servers import running_server


@pytest.fixture(scope="module")
def proxied_everything() -> Iterator[str]:
    argv = everything_argv()
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "proxy", "--http", "--port", str(port),
                                      "--", *argv], timeout=60) as url:
        yield url


def test_a_tasks_question_reaches_a_legacy_client_of_a_stdio_front() -> None:
    # `mcpkit proxy -- node server-everything` as a stdio server: the question comes on stdout.
    import subprocess

    argv = [sys.executable, "-m", "mcpkit", "proxy", "--", *everything_argv()]

    async def main() -> tuple[list[Any], str]:
        asked: list[Any] = []

        async def elicit(params: Any) -> dict[str, Any]:
            asked.append(params)
            return {"action": "accept", "content": {"interpretation": "current"}}

        async with Client(argv, mode="legacy", era_cache=EraCache(), elicitation=elicit,
                          stderr=subprocess.DEVNULL) as client:
            assert client.era == "legacy"
            handle = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True},
                                            task=True)
            return asked, text_of(await handle.result())

    asked, text = run(main(), 90)
    assert len(asked) == 1 and "# Research Report: tides (current)" in text


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_a_legacy_client_gets_the_backends_tasks(proxied_everything: str) -> None:
    async def main() -> tuple[Any, ...]:
        async with Client(proxied_everything, mode="legacy", era_cache=EraCache()) as client:
            assert client.era == "legacy"
            init = await client.discover_raw()
            caps = init["capabilities"]
            statuses: list[str] = []
            handle = await client.call_tool("simulate-research-query", {"topic": "tides"}, task=True)
            first = (type(handle), handle.task_id, handle.status)
            listed = [t["taskId"] for t in await client.list_tasks()]
            result = await handle.result(on_status=lambda status, message: statuses.append(status))
            doomed = await client.call_tool("simulate-research-query", {"topic": "waves"}, task=True)
            await doomed.cancel()
            with pytest.raises(TaskCancelled):
                await doomed.result()
            return caps, first, listed, statuses, text_of(result), doomed.status

    caps, first, listed, statuses, text, doomed = run(main(), 90)
    assert caps["tasks"]["requests"] == {"tools": {"call": {}}}
    assert "extensions" not in caps or caps["extensions"].get("io.modelcontextprotocol/tasks") is not None
    kind, task_id, status = first
    assert kind is LegacyTaskHandle and isinstance(task_id, str) and status == "working"
    assert task_id in listed
    assert statuses[0] == "working" and statuses[-1] == "completed"
    assert "Research Report: tides" in text
    assert doomed == "cancelled"


ANSWERS = [{"action": "accept", "content": {"interpretation": "historical"}}, {"action": "decline"}]


def ask_through(url: str, answer: dict[str, Any], era: str | None = None, **options: Any) -> None:
    """An ambiguous research task through the proxy: its one question reaches the client's
    elicitation handler, and the answer shapes the report."""
    async def main() -> tuple[list[Any], list[str], str]:
        asked: list[Any] = []
        statuses: list[str] = []

        async def elicit(params: Any) -> dict[str, Any]:
            asked.append(params)
            return answer

        async with Client(url, era_cache=EraCache(), elicitation=elicit, **options) as client:
            if era is not None:
                assert client.era == era
            handle = await client.call_tool("simulate-research-query", {"topic": "tides", "ambiguous": True},
                                            task=True)
            result = await handle.result(on_status=lambda status, message: statuses.append(status))
            return asked, statuses, text_of(result)

    asked, statuses, text = run(main(), 90)
    assert len(asked) == 1 and "tides" in asked[0].message
    assert "input_required" in statuses and statuses[-1] == "completed"
    if answer["action"] == "accept":
        assert "# Research Report: tides (historical)" in text
    else:
        assert "User declined - using default interpretation" in text


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_tasks_question_reaches_the_legacy_client(proxied_everything: str, answer: dict[str, Any]) -> None:
    ask_through(proxied_everything, answer, mode="legacy")


def test_the_legacy_task_methods_are_not_served_to_a_modern_client(proxied_everything: str) -> None:
    async def main() -> list[int]:
        codes = []
        async with Client(proxied_everything, era_cache=EraCache()) as client:
            assert client.era == "modern"
            for method in ("tasks/result", "tasks/list"):
                with pytest.raises(MCPError) as info:
                    await client.request(method, {"taskId": "x"} if method == "tasks/result" else None)
                codes.append(info.value.code)
        return codes

    assert run(main(), 60) == [-32601, -32601]


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_tasks_question_reaches_a_modern_client_through_the_tasks_extension(
        proxied_everything: str, answer: dict[str, Any]) -> None:
    # The 2026-07-28 client sees the task input_required with inputRequests in tasks/get,
    # answers them with tasks/update (its TaskHandle does), and the task goes on.
    ask_through(proxied_everything, answer, era="modern")


def test_tasks_update_with_nothing_waiting_is_refused(proxied_everything: str) -> None:
    async def main() -> tuple[str, str]:
        async with Client(proxied_everything, era_cache=EraCache(),
                          elicitation=lambda p: {"action": "decline"}) as client:
            handle = await client.call_tool("simulate-research-query", {"topic": "x"}, task=True)
            with pytest.raises(MCPError) as none:
                await client.request("tasks/update", {"taskId": handle.task_id, "inputResponses": {"elicit-1": {}}})
            await handle.cancel()
            with pytest.raises(MCPError) as unknown:
                await client.request("tasks/update", {"taskId": "nope", "inputResponses": {}})
            return none.value.message, unknown.value.message

    first, second = run(main(), 60)
    assert "no question elicit-1 of task" in first and "waiting here" in second


def test_a_tasks_question_goes_to_that_tasks_result_only() -> None:
    # A 2025-11-25 backend marks a task's question with related-task: it goes to the held
    # tasks/result of that task, never to another request in flight (and plain questions never
    # go to a held tasks/result).
    from mcpkit.proxy._backend import Backend
    from mcpkit.proxy._pending import BackendCall

    backend = Backend(["true"])
    plain, held = BackendCall("tools/call", "p"), BackendCall("tasks/result", "p")
    held.task_id = "t1"
    backend.inflight += [plain, held]
    assert backend._route("t1") is held
    assert backend._route("t2") is None
    assert backend._route() is plain
    backend.inflight.remove(plain)
    assert backend._route() is None


def test_legacy_only_capabilities_are_in_initialize_not_discover() -> None:
    import json

    from mcpkit import Server
    from mcpkit.protocol import codec
    from mcpkit.server._legacy import LegacySession

    server = Server("s")

    @server.tool()
    def hello() -> str:
        return "hi"

    server.advertise_legacy({"tasks": {"list": {}}})

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        session = LegacySession(server)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
        reply = await session.handle(codec.Request(1, "initialize", init))
        async with Client(server) as new:
            return json.loads(reply[0])["result"]["capabilities"], (await new.discover_raw())["capabilities"]

    legacy, modern = run(main(), 30)
    assert legacy["tasks"] == {"list": {}} and "tools" in legacy
    assert "tasks" not in modern and "tools" in modern


# ---------------------------------------------------------------- a 2026-07-28 backend's tasks extension
@pytest.fixture(scope="module")
def proxied_tasks_server() -> Iterator[str]:
    from tests.helpers.paths import TASKS_SERVER, serve_argv

    argv = serve_argv(TASKS_SERVER)
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "proxy", "--http", "--port", str(port),
                                      "--", *argv], timeout=60) as url:
        yield url


def test_a_modern_backends_tasks_reach_a_legacy_client_as_2025_11_25_tasks(proxied_tasks_server: str) -> None:
    def answer_name(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada", "ok": True}}

    async def main() -> tuple[Any, ...]:
        async with Client(proxied_tasks_server, mode="legacy", era_cache=EraCache(),
                          elicitation=answer_name) as client:
            assert client.era == "legacy"
            caps = (await client.discover_raw())["capabilities"]
            handle = await client.call_tool("slow", {"seconds": 0.3, "label": "render"}, task=True)
            first = (type(handle), handle.task_id, handle.status)
            done = text_of(await handle.result())
            asking = await client.call_tool("ask_twice", task=True)  # its questions: real requests
            asked = text_of(await asking.result())
            doomed = await client.call_tool("slow", {"seconds": 30}, task=True)
            await doomed.cancel()
            failing = await client.call_tool("protocol_error", task=True)
            with pytest.raises(MCPError) as info:
                await failing.result()
            plain = text_of(await client.call_tool("slow", {"seconds": 0.01, "label": "now"}))
            return caps, first, done, asked, doomed.status, info.value.message, plain

    caps, first, done, asked, doomed, failed, plain = run(main(), 90)
    assert caps["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}
    assert first[0] is LegacyTaskHandle and first[1] and first[2] == "working"
    assert done == "render done after 0.3s"
    assert asked == "Ada/True/Ada"
    assert doomed == "cancelled"
    assert "the job broke" in failed
    assert plain == "now done after 0.01s"
