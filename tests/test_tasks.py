"""The tasks extension (io.modelcontextprotocol/tasks, SEP-2663), end to end over stdio AND
Streamable HTTP against real server processes (``python -m mcpkit serve [--http]
tests/servers/tasks_server.py[:FACTORY]``), plus in-process checks of the API.

What the server does, as documented in mcpkit/extensions/tasks.py:

- tools registered with ``extensions={Tasks.id: {"support": ...}}`` answer ``tools/call`` with a flat
  ``CreateTaskResult`` (``resultType: "task"``) when the request declared the extension in
  its own ``clientCapabilities.extensions``; ``tasks/get`` resolves the task at once;
- ``tasks/get`` answers a DetailedTask (``resultType: "complete"``): ``inputRequests`` while
  ``input_required``, ``result`` once ``completed`` (``isError`` results included), ``error``
  once ``failed`` (a JSON-RPC error from the handler);
- ``tasks/update`` delivers ``inputResponses`` (unknown keys ignored, malformed answers
  -32602) and ``tasks/cancel`` cancels; both answer an empty ``{"resultType": "complete"}``;
- non-declaring requests never get a task: optional tools run synchronously, required ones
  and the ``tasks/*`` methods answer -32021 with ``data.requiredCapabilities.extensions``;
- unknown (or expired) task ids are -32602; servers without tasks are unchanged (-32601).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Server
from mcpkit.extensions.tasks import InMemoryTaskStore, TaskRecord, Tasks, TaskStore
from tests.helpers.paths import TASKS_SERVER, serve_argv
from tests.helpers.wire import StdioPeer, StdioWire, Wire
from tests.helpers.wire import open_wire as _open_wire

EXT = "io.modelcontextprotocol/tasks"
DECLARING = {"extensions": {EXT: {}}, "elicitation": {}}
NON_DECLARING = {"elicitation": {}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
TERMINAL = {"completed", "failed", "cancelled"}
MISSING_EXTENSION = {"requiredCapabilities": {"extensions": {EXT: {}}}}
ACK_KEYS = {"resultType", "_meta"}


# ====================================================================== wires
def open_wire(kind: str, factory: str | None = None) -> Any:
    """The tasks server (``factory`` of it) over stdio or HTTP; calls declare the extension by
    default. Task results are not their method's complete result: they are checked by the tests."""
    spec = f"{TASKS_SERVER}:{factory}" if factory else TASKS_SERVER
    return _open_wire(kind, spec, client="test_tasks", caps=DECLARING)


@pytest.fixture(scope="module", params=["stdio", "http"])
def wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    with open_wire(request.param) as w:
        yield w


# ====================================================================== helpers
def create(wire: Wire, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Call a tool that must answer with a CreateTaskResult; check its shape."""
    result = wire.result("tools/call", {"name": name, "arguments": arguments or {}}, **kw)
    assert result["resultType"] == "task", result
    assert isinstance(result["taskId"], str) and len(result["taskId"]) >= 40, result
    assert result["status"] in ("working", "input_required"), result
    assert ISO.match(result["createdAt"]) and ISO.match(result["lastUpdatedAt"]), result
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] > 0, result
    assert isinstance(result["pollIntervalMs"], int) and result["pollIntervalMs"] > 0, result
    for key in ("result", "error", "inputRequests", "requestState", "task", "ttl", "pollInterval"):
        assert key not in result, result
    return result


def get(wire: Wire, task_id: str) -> dict[str, Any]:
    task = wire.result("tasks/get", {"taskId": task_id})
    assert task["resultType"] == "complete" and task["taskId"] == task_id, task
    assert ISO.match(task["createdAt"]) and ISO.match(task["lastUpdatedAt"]), task
    assert ("inputRequests" in task) == (task["status"] == "input_required"), task
    assert ("result" in task) == (task["status"] == "completed"), task
    assert ("error" in task) == (task["status"] == "failed"), task
    assert "requestState" not in task, task
    return task


def poll(wire: Wire, task_id: str, until: set[str] = TERMINAL, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = get(wire, task_id)
        if task["status"] in until or time.monotonic() > deadline:
            assert task["status"] in until, task
            return task
        time.sleep(0.03)


def ack(wire: Wire, method: str, p: dict[str, Any]) -> None:
    result = wire.result(method, p)
    assert result["resultType"] == "complete" and set(result) <= ACK_KEYS, result


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# ====================================================================== lifecycle
def test_discover_advertises_the_extension(wire: Wire) -> None:
    caps = wire.result("server/discover")["capabilities"]
    assert caps["extensions"] == {EXT: {}}, caps
    assert "tasks" not in caps, caps


def test_task_lifecycle_working_then_completed(wire: Wire) -> None:
    created = create(wire, "slow", {"seconds": 0.3, "label": "L"})
    # Strong consistency: the task resolves right away, with the seed state.
    first = get(wire, created["taskId"])
    assert first["status"] == "working" and first["createdAt"] == created["createdAt"], first
    assert first["ttlMs"] == created["ttlMs"] and first["pollIntervalMs"] == 50, first
    done = poll(wire, created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "L done after 0.3s"}], done
    assert "isError" not in done["result"] and "_meta" not in done["result"], done
    assert done["lastUpdatedAt"] >= done["createdAt"]
    # A terminal task stays readable (idempotent reads).
    assert get(wire, created["taskId"]) == done


def test_sync_tool_is_never_a_task(wire: Wire) -> None:
    result = wire.result("tools/call", {"name": "greet", "arguments": {"name": "Ada"}, "task": {"ttl": 1000}})
    assert result["resultType"] == "complete" and "taskId" not in result, result
    assert result["content"][0]["text"] == "Hello, Ada!"


def test_invalid_arguments_answer_synchronously(wire: Wire) -> None:
    result = wire.result("tools/call", {"name": "slow", "arguments": {"seconds": "soon"}})
    assert result["resultType"] == "complete" and result["isError"] is True, result


def test_task_ids_are_unguessable_and_distinct(wire: Wire) -> None:
    ids = {create(wire, "slow", {"seconds": 0})["taskId"] for _ in range(5)}
    assert len(ids) == 5
    for task_id in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43,}", task_id), task_id  # >= 256 bits, header-safe
        poll(wire, task_id)


def test_progress_message_becomes_status_message(wire: Wire) -> None:
    created = create(wire, "progress_job")
    task = get(wire, created["taskId"])
    deadline = time.monotonic() + 5
    while task.get("statusMessage") != "half way" and task["status"] == "working" and time.monotonic() < deadline:
        time.sleep(0.02)
        task = get(wire, created["taskId"])
    assert task["statusMessage"] == "half way", task
    assert poll(wire, created["taskId"])["status"] == "completed"


# ====================================================================== input_required
def test_input_required_then_update_then_completed(wire: Wire) -> None:
    created = create(wire, "ask_name")
    task = poll(wire, created["taskId"], {"input_required"})
    assert list(task["inputRequests"]) == ["user_name"], task
    req = task["inputRequests"]["user_name"]
    assert req["method"] == "elicitation/create" and req["params"]["requestedSchema"]["required"] == ["name"], req
    # Polling again shows the same outstanding request.
    assert get(wire, created["taskId"])["inputRequests"] == task["inputRequests"]
    # A malformed answer is refused and consumes nothing.
    status, err = wire.error("tasks/update", {"taskId": created["taskId"],
                                              "inputResponses": {"user_name": accept(name=42)}})
    assert err["code"] == -32602 and status in (None, 200), err
    # Unknown keys are ignored (acknowledged, nothing happens).
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"nope": {"x": 1}}})
    assert get(wire, created["taskId"])["status"] == "input_required"
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"user_name": accept(name="Ada")}})
    done = poll(wire, created["taskId"])
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Hello, Ada!", done
    # Answering again (or a terminal task) is acknowledged and ignored.
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"user_name": accept(name="Bob")}})
    assert get(wire, created["taskId"]) == done


def test_partial_fulfillment_and_unique_keys(wire: Wire) -> None:
    created = create(wire, "ask_twice")
    task = poll(wire, created["taskId"], {"input_required"})
    assert set(task["inputRequests"]) == {"name", "ok"}, task
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"name": accept(name="Ada")}})
    task = get(wire, created["taskId"])
    assert task["status"] == "input_required" and set(task["inputRequests"]) == {"ok"}, task
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"ok": accept(ok=True)}})
    # The third question reuses the handler key "name": the task gets a fresh key for it.
    task = poll(wire, created["taskId"], {"input_required", *TERMINAL})
    deadline = time.monotonic() + 5
    while not (task["status"] == "input_required" and "ok" not in task["inputRequests"]) and time.monotonic() < deadline:
        time.sleep(0.02)
        task = get(wire, created["taskId"])
    (key,) = task["inputRequests"]
    assert key not in ("name", "ok"), task
    # An answer under the old, already answered key is ignored.
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"name": accept(name="Old")}})
    assert get(wire, created["taskId"])["status"] == "input_required"
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {key: accept(name="Bea")}})
    done = poll(wire, created["taskId"])
    assert done["result"]["content"][0]["text"] == "Ada/True/Bea", done


def test_mrtr_before_the_task_then_task(wire: Wire) -> None:
    first = wire.result("tools/call", {"name": "mrtr_then_task", "arguments": {}})
    assert first["resultType"] == "input_required" and "taskId" not in first, first
    assert list(first["inputRequests"]) == ["user_name"]
    second = wire.result("tools/call", {"name": "mrtr_then_task", "arguments": {},
                                        "inputResponses": {"user_name": accept(name="Alice")},
                                        "requestState": first["requestState"]})
    assert second["resultType"] == "task" and "requestState" not in second and "inputRequests" not in second, second
    done = poll(wire, second["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello, Alice! (task=True, id=yes)", done


def test_explicit_start_answers_fast_calls_synchronously(wire: Wire) -> None:
    fast = wire.result("tools/call", {"name": "maybe_task", "arguments": {}})
    assert fast["resultType"] == "complete" and fast["content"][0]["text"] == "fast answer", fast
    created = create(wire, "maybe_task", {"slow": True})
    assert poll(wire, created["taskId"])["result"]["content"][0]["text"] == "slow answer"


# ====================================================================== failure
def test_tool_error_completes_with_is_error(wire: Wire) -> None:
    created = create(wire, "tool_error")
    done = poll(wire, created["taskId"])
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    assert done["result"]["content"][0]["text"] == "the tool failed"


def test_unexpected_exception_is_a_tool_error(wire: Wire) -> None:
    done = poll(wire, create(wire, "crash")["taskId"])
    assert done["status"] == "completed" and done["result"]["isError"] is True, done


def test_protocol_error_fails_the_task(wire: Wire) -> None:
    created = create(wire, "protocol_error")
    done = poll(wire, created["taskId"])
    assert done["status"] == "failed", done
    assert done["error"] == {"code": -32603, "message": "the job broke", "data": {"why": "testing"}}, done
    assert done["statusMessage"] == "the job broke"


# ====================================================================== cancel
def test_cancel_running_task(wire: Wire) -> None:
    created = create(wire, "slow", {"seconds": 60})
    ack(wire, "tasks/cancel", {"taskId": created["taskId"]})
    task = get(wire, created["taskId"])
    assert task["status"] == "cancelled" and "result" not in task, task
    ack(wire, "tasks/cancel", {"taskId": created["taskId"]})  # idempotent
    assert get(wire, created["taskId"])["status"] == "cancelled"


def test_cancel_task_waiting_for_input(wire: Wire) -> None:
    created = create(wire, "ask_name")
    poll(wire, created["taskId"], {"input_required"})
    ack(wire, "tasks/cancel", {"taskId": created["taskId"]})
    task = get(wire, created["taskId"])
    assert task["status"] == "cancelled" and "inputRequests" not in task, task
    # A late answer is acknowledged and changes nothing.
    ack(wire, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"user_name": accept(name="Late")}})
    assert get(wire, created["taskId"])["status"] == "cancelled"


def test_cancel_terminal_task_keeps_its_status(wire: Wire) -> None:
    created = create(wire, "slow", {"seconds": 0})
    done = poll(wire, created["taskId"])
    ack(wire, "tasks/cancel", {"taskId": created["taskId"]})
    assert get(wire, created["taskId"]) == done


# ====================================================================== gating and errors
def test_non_declaring_client_gets_no_task(wire: Wire) -> None:
    result = wire.result("tools/call", {"name": "slow", "arguments": {"seconds": 0, "label": "sync"}}, caps=NON_DECLARING)
    assert result["resultType"] == "complete" and "taskId" not in result, result
    assert result["content"][0]["text"] == "sync done after 0s"
    # MRTR still works synchronously for a task-capable tool.
    first = wire.result("tools/call", {"name": "ask_name", "arguments": {}}, caps=NON_DECLARING)
    assert first["resultType"] == "input_required" and "taskId" not in first, first


def test_required_task_tool_refuses_non_declaring_client(wire: Wire) -> None:
    for name in ("required_job", "mrtr_then_task"):
        status, err = wire.error("tools/call", {"name": name, "arguments": {}}, caps=NON_DECLARING)
        assert err["code"] == -32021 and err["data"] == MISSING_EXTENSION, err
        assert status in (None, 400)
    assert create(wire, "required_job")["status"] == "working"


def test_tasks_methods_need_the_extension(wire: Wire) -> None:
    task_id = create(wire, "slow", {"seconds": 0})["taskId"]
    for method, p in (("tasks/get", {"taskId": task_id}),
                      ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
                      ("tasks/cancel", {"taskId": task_id}),
                      ("tasks/get", {"taskId": "no-such-task"})):
        status, err = wire.error(method, p, caps=NON_DECLARING)
        assert err["code"] == -32021 and err["data"] == MISSING_EXTENSION, (method, err)
        assert status in (None, 400)


def test_unknown_task_id_is_invalid_params(wire: Wire) -> None:
    for method, p in (("tasks/get", {"taskId": "no-such-task"}),
                      ("tasks/update", {"taskId": "no-such-task", "inputResponses": {}}),
                      ("tasks/cancel", {"taskId": "no-such-task"})):
        status, err = wire.error(method, p)
        assert err["code"] == -32602 and "not found" in err["message"], (method, err)
        assert status in (None, 200)


def test_removed_and_malformed_methods(wire: Wire) -> None:
    for method in ("tasks/result", "tasks/list"):
        _, err = wire.error(method, {"taskId": "x"})
        assert err["code"] == -32601, (method, err)
    _, err = wire.error("tasks/get", {})
    assert err["code"] == -32602, err
    _, err = wire.error("tasks/update", {"taskId": "x"})  # inputResponses is required
    assert err["code"] == -32602, err


def test_listen_for_task_notifications_needs_the_extension(wire: Wire) -> None:
    status, err = wire.error("subscriptions/listen", {"notifications": {"taskIds": ["x"]}}, caps=NON_DECLARING)
    assert err["code"] == -32021 and err["data"] == MISSING_EXTENSION, err
    assert status in (None, 400)


def test_listen_never_acknowledges_task_ids() -> None:
    """notifications/tasks are not sent (a MAY): a declaring client's taskIds are not acked."""
    with open_wire("stdio") as w:
        assert isinstance(w, StdioWire)
        msg = w.message("subscriptions/listen", {"notifications": {"taskIds": ["x"], "toolsListChanged": True}},
                        DECLARING)
        w.peer.send(msg)
        ack_note = w.peer.recv(5.0)
        assert ack_note["method"] == "notifications/subscriptions/acknowledged", ack_note
        assert ack_note["params"]["notifications"] == {"toolsListChanged": True}, ack_note
        w.peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": msg["id"]}})
        w.peer.assert_alive()


def test_http_routing_header_must_match_task_id() -> None:
    with open_wire("http") as w:
        task_id = create(w, "slow", {"seconds": 0})["taskId"]
        status, err = w.error("tasks/get", {"taskId": task_id}, headers={"Mcp-Name": "another-task"})
        assert status == 400 and err["code"] == -32020, err
        status, err = w.error("tasks/get", {"taskId": task_id}, headers={"Mcp-Name": None})
        assert status == 400 and err["code"] == -32020, err
        assert poll(w, task_id)["status"] == "completed"


def test_expired_tasks_are_purged() -> None:
    with open_wire("stdio", "short_ttl") as w:
        done_id = create(w, "slow", {"seconds": 0})["taskId"]
        running_id = create(w, "slow", {"seconds": 60})["taskId"]
        assert create(w, "slow", {"seconds": 0})["ttlMs"] == 600
        assert poll(w, done_id)["status"] == "completed"
        time.sleep(0.8)
        for task_id in (done_id, running_id):
            _, err = w.error("tasks/get", {"taskId": task_id})
            assert err["code"] == -32602, err
            _, err = w.error("tasks/cancel", {"taskId": task_id})
            assert err["code"] == -32602, err


# ====================================================================== servers without tasks
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_server_without_tasks_is_unchanged(kind: str) -> None:
    with open_wire(kind, "plain") as w:
        caps = w.result("server/discover")["capabilities"]
        assert "extensions" not in caps, caps
        result = w.result("tools/call", {"name": "slow", "arguments": {"seconds": 0, "label": "p"}})
        assert result["resultType"] == "complete" and result["content"][0]["text"] == "p done after 0s", result
        result = w.result("tools/call", {"name": "required_job", "arguments": {"seconds": 0}}, caps=NON_DECLARING)
        assert result["resultType"] == "complete", result
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            status, err = w.error(method, {"taskId": "x", "inputResponses": {}})
            assert err["code"] == -32601, err


def test_legacy_session_gets_no_task() -> None:
    """2025-11-25 (initialize) sessions: the extension does not apply."""
    peer = StdioPeer(serve_argv(TASKS_SERVER))
    try:
        init = peer.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": {"name": "legacy", "version": "0"},
            "capabilities": {"extensions": {EXT: {}}}}})
        assert init["result"]["protocolVersion"] == "2025-11-25", init
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        def call(id: int, method: str, p: dict[str, Any]) -> dict[str, Any]:
            peer.send({"jsonrpc": "2.0", "id": id, "method": method, "params": p})
            peer.methods.clear()  # legacy results (no resultType) are checked here
            return peer.recv_response()

        reply = call(2, "tools/call", {"name": "slow", "arguments": {"seconds": 0}})
        assert reply["result"]["content"][0]["text"] == "job done after 0s" and "taskId" not in reply["result"], reply
        reply = call(3, "tools/call", {"name": "required_job", "arguments": {}})
        assert reply["error"]["code"] == -32021, reply
        assert call(4, "tasks/get", {"taskId": "x"})["error"]["code"] == -32601
    finally:
        peer.close()


# ====================================================================== in-process API
def with_tasks(**kw: Any) -> Server:
    server = Server("t")
    server.use(Tasks(**kw))
    return server


def test_api_validation() -> None:
    plain = Server("p")
    with pytest.raises(ValueError, match="enable it first"):
        plain.tool(extensions={EXT: {"support": "optional"}})(lambda: "x")
    for bad in ({"support": "sometimes"}, {"support": "optional", "start": "later"}, {}, {"support": "optional", "x": 1},
                "optional", None):
        with pytest.raises(ValueError, match="options"):
            with_tasks().tool(extensions={EXT: bad})(lambda: "x")
    with pytest.raises(ValueError, match="ttl_ms"):
        Tasks(ttl_ms=0)
    with pytest.raises(ValueError, match="poll_interval_ms"):
        Tasks(poll_interval_ms=-1)
    with pytest.raises(TypeError, match="TaskStore"):
        Tasks("redis")  # type: ignore[arg-type]
    s = with_tasks()
    with pytest.raises(RuntimeError, match="already installed"):
        s.use(Tasks())
    tasks = s.get_extension(Tasks)
    assert tasks is not None and s.extensions == {EXT: tasks} and s.capabilities.extensions == {EXT: {}}
    assert tasks.server is s
    with pytest.raises(RuntimeError, match="not installed"):
        _ = Tasks().server


def test_custom_store_and_purge_in_process() -> None:
    class CountingStore(InMemoryTaskStore):
        creates = 0

        async def create(self, record: TaskRecord) -> None:
            CountingStore.creates += 1
            await super().create(record)

    store = CountingStore()
    assert isinstance(store, TaskStore)
    server = with_tasks(store=store)
    tasks = server.get_extension(Tasks)
    assert tasks is not None and tasks.store is store

    async def run() -> None:
        now = time.time()
        old = TaskRecord(task_id="a", created_at=now - 10, updated_at=now - 10, ttl_ms=1000)
        fresh = TaskRecord(task_id="b", created_at=now, updated_at=now, ttl_ms=60_000)
        forever = TaskRecord(task_id="c", created_at=now - 10**6, updated_at=now, ttl_ms=None)
        for rec in (old, fresh, forever):
            await store.create(rec)
        assert await store.purge_expired(now) == ["a"]
        assert await store.get("a") is None and await store.get("b") is fresh and await store.get("c") is forever
        await store.save(old)  # a purged task stays purged
        assert await store.get("a") is None
        assert len(store) == 2

    asyncio.run(run())
    assert CountingStore.creates == 3
