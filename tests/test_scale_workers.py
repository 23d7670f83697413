"""Two workers on one Redis, addressed one by one (two machines behind a balancer, with
the balancer's choice made by the test): tasks, MRTR state and legacy sessions started on
one worker and continued on the other; Redis restarts; a worker killed mid-task.

Each worker is ``serve_workers(tests/servers/scale_server.py, workers=1, redis_url=...)`` in
its own process on its own port; ``redis-server`` is real (tests/helpers/redis.py).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers.messages import JSON_ACCEPT, LEGACY, init_msg, sse_events
from tests.helpers.paths import SERVERS
from tests.helpers.redis import RedisServer, workers_argv
from tests.helpers.servers import ServerProcess
from tests.helpers.wire import HttpWire

SCALE_SERVER = SERVERS / "scale_server.py"
EXT = "io.modelcontextprotocol/tasks"
DECLARING = {"extensions": {EXT: {}}, "elicitation": {}}
ELICITING = {"elicitation": {}}
TERMINAL = {"completed", "failed", "cancelled"}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


class Worker:
    """One worker process (``serve_workers(..., workers=1)``) and a wire to it."""

    def __init__(self, redis_url: str) -> None:
        self.proc = ServerProcess(workers_argv(SCALE_SERVER, workers=1, redis_url=redis_url))
        assert self.proc.wait_ready(), self.proc.output()
        self.url = self.proc.url
        self.http = httpx.Client(timeout=10.0, trust_env=False)
        self.wire = HttpWire(self.http, self.url, client="test_scale", caps=DECLARING)

    def pid(self) -> int:
        result = self.wire.result("tools/call", {"name": "whoami", "arguments": {}})
        return int(result["structuredContent"]["result"])

    def close(self) -> None:
        self.http.close()
        self.proc.stop()



@pytest.fixture(scope="module")
def pair(redis: RedisServer) -> Iterator[tuple[Worker, Worker]]:
    a, b = Worker(redis.url), Worker(redis.url)
    yield a, b
    a.close()
    b.close()


def get(w: Worker, task_id: str) -> dict[str, Any]:
    return w.wire.result("tasks/get", {"taskId": task_id})


def poll(w: Worker, task_id: str, until: set[str] = TERMINAL, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = get(w, task_id)
        if task["status"] in until or time.monotonic() > deadline:
            assert task["status"] in until, task
            return task
        time.sleep(0.05)


# ====================================================================== tasks
def test_task_created_on_one_worker_is_answered_and_finished_through_the_other(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    pid_a, pid_b = a.pid(), b.pid()
    assert pid_a != pid_b
    created = a.wire.result("tools/call", {"name": "ask_name", "arguments": {}})
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    waiting = poll(b, task_id, {"input_required"})
    assert set(waiting["inputRequests"]) == {"user_name"}, waiting
    # A malformed answer is refused by the worker that received it (-32602).
    _, err = b.wire.error("tasks/update", {"taskId": task_id, "inputResponses": {"user_name": {"action": "maybe"}}})
    assert err["code"] == -32602, err
    ack = b.wire.result("tasks/update", {"taskId": task_id, "inputResponses": {"user_name": accept(name="Ada")}})
    assert ack["resultType"] == "complete", ack
    done = poll(b, task_id)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == f"Hello, Ada! (from {pid_a})", done
    assert get(a, task_id)["status"] == "completed"


def test_task_cancelled_through_the_other_worker_stays_cancelled(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    created = a.wire.result("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.8}})
    task_id = created["taskId"]
    assert get(b, task_id)["status"] == "working"
    assert b.wire.result("tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
    assert get(a, task_id)["status"] == "cancelled"
    time.sleep(1.2)  # the handler would have finished by now, had worker A not stopped it
    task = get(b, task_id)
    assert task["status"] == "cancelled" and "result" not in task, task


# ====================================================================== MRTR
def test_mrtr_state_minted_by_one_worker_is_accepted_by_the_other(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    first = a.wire.result("tools/call", {"name": "ask_name", "arguments": {}}, caps=ELICITING)
    assert first["resultType"] == "input_required", first
    retry = {"name": "ask_name", "arguments": {}, "requestState": first["requestState"],
             "inputResponses": {"user_name": accept(name="Bea")}}
    done = b.wire.result("tools/call", retry, caps=ELICITING)
    assert done["resultType"] == "complete", done
    assert done["content"][0]["text"] == f"Hello, Bea! (from {b.pid()})", done


# ====================================================================== legacy sessions
def legacy_post(w: Worker, msg: dict[str, Any], sid: str | None = None) -> httpx.Response:
    headers = dict(JSON_ACCEPT)
    if sid is not None:
        headers["Mcp-Session-Id"] = sid
        headers["MCP-Protocol-Version"] = LEGACY
    return w.http.post(w.url, content=json.dumps(msg).encode(), headers=headers)


def test_legacy_session_opened_on_one_worker_is_served_by_the_other(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    r = legacy_post(a, init_msg(caps={"elicitation": {}}))
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    assert legacy_post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid).status_code == 202
    r = legacy_post(b, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
    assert r.status_code == 200 and "whoami" in r.text, r.text
    # An unknown session is unknown everywhere; DELETE through one worker ends it on both.
    assert legacy_post(a, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, "nope").status_code == 404
    assert b.http.delete(a.url, headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}).status_code == 200
    assert legacy_post(a, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, sid).status_code == 404


def test_legacy_elicitation_answer_reaches_the_asking_worker(pair: tuple[Worker, Worker]) -> None:
    """The server asks on worker A (on the POST's event stream); the client's answer is a new
    POST that lands on worker B, which forwards it to A."""
    a, b = pair
    sid = legacy_post(a, init_msg(caps={"elicitation": {}})).headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
    headers = {**JSON_ACCEPT, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    with a.http.stream("POST", a.url, content=json.dumps(call).encode(), headers=headers) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        asked = None
        buf: list[str] = []
        for line in lines:
            buf.append(line)
            if line == "" and any(x.startswith("data:") for x in buf):
                events = sse_events("\n".join(buf) + "\n\n", strict=False)
                buf = []
                for ev in events:
                    if ev.get("method") == "elicitation/create":
                        asked = ev
                if asked is not None:
                    break
        assert asked is not None
        assert isinstance(asked["id"], str), asked  # names the asking worker
        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": accept(name="Cy")}
        assert legacy_post(b, answer, sid).status_code == 202
        rest = "\n".join(lines) + "\n\n"
    final = [ev for ev in sse_events(rest, strict=False) if ev.get("id") == 7]
    assert final and final[0]["result"]["content"][0]["text"] == f"Hello, Cy! (from {a.pid()})", rest


def test_legacy_subscription_set_on_one_worker_pushes_on_the_stream_held_by_the_other(
        pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    sid = legacy_post(a, init_msg()).headers["mcp-session-id"]
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    with b.http.stream("GET", b.url, headers=headers) as stream:  # the GET stream is on B
        lines = stream.iter_lines()
        assert next(lines).startswith(":")  # stream open
        r = legacy_post(a, {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                            "params": {"uri": "notes://groceries"}}, sid)
        assert r.status_code == 200, r.text
        r = legacy_post(a, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": "save_note", "arguments": {"name": "groceries", "text": "tea"}}}, sid)
        assert r.status_code == 200, r.text
        got = None
        for line in lines:
            if line.startswith("data:"):
                got = json.loads(line[5:])
                if got.get("method") == "notifications/resources/updated":
                    break
        assert got == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                       "params": {"uri": "notes://groceries"}}, got


# ====================================================================== failures
def test_redis_down_refuses_new_work_and_recovers(redis: RedisServer, pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    sid = legacy_post(a, init_msg()).headers["mcp-session-id"]
    redis.stop()
    try:
        time.sleep(0.3)
        # A legacy session cannot be read: 503 with a JSON-RPC error that says why.
        r = legacy_post(b, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, sid)
        assert r.status_code == 503 and "Redis" in r.json()["error"]["message"], r.text
        r = legacy_post(b, init_msg())
        assert r.status_code == 503 and "Redis" in r.json()["error"]["message"], r.text
        _, err = a.wire.error("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.1}})
        assert err["code"] == -32603 and "Redis" in err["message"], err
        status, reply = a.wire.call("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["notes://x"]}})
        assert "error" in reply and "Redis" in reply["error"]["message"], (status, reply)
        # Work that needs no shared state is still served.
        assert a.pid() > 0
    finally:
        redis.start()
    deadline = time.monotonic() + 10
    while True:
        status, reply = a.wire.call("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.1}})
        if "result" in reply or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert reply["result"]["resultType"] == "task", reply
    assert poll(b, reply["result"]["taskId"])["status"] == "completed"


def test_worker_killed_mid_task_fails_its_tasks(redis: RedisServer) -> None:
    a, b = Worker(redis.url), Worker(redis.url)
    try:
        created = a.wire.result("tools/call", {"name": "sleepy", "arguments": {"seconds": 60}})
        task_id = created["taskId"]
        assert get(b, task_id)["status"] == "working"
        pid = a.pid()
        os.kill(pid, signal.SIGKILL)  # the worker itself, not its supervisor
        task = poll(b, task_id, timeout=15)
        assert task["status"] == "failed", task
        assert "worker" in task["error"]["message"], task
    finally:
        a.close()
        b.close()


def test_redis_restart_mid_listen_ends_the_stream_cleanly_and_a_new_listen_works(
        redis: RedisServer, pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    listen = a.wire.message("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["notes://groceries"]}})
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}
    with a.http.stream("POST", a.url, content=json.dumps(listen).encode(), headers=headers) as stream:
        lines = stream.iter_lines()
        for line in lines:
            if line.startswith("data:") and "acknowledged" in line:
                break
        redis.stop()
        # The stream ends with the listen's (graceful) result, not a hang or a reset.
        rest = [line for line in lines if line.startswith("data:")]
    redis.start()
    final = json.loads(rest[-1][5:])
    assert final["id"] == listen["id"] and "result" in final, rest

    # Once Redis is back, a new listen (on either worker) gets changes made through the other.
    deadline = time.monotonic() + 10
    while True:
        listen = b.wire.message("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["notes://groceries"]}})
        with b.http.stream("POST", b.url, content=json.dumps(listen).encode(), headers=headers) as stream:
            lines = stream.iter_lines()
            first = next((line for line in lines if line.startswith("data:")), "")
            if "acknowledged" in first:
                for tool in ("save_note", "save_note_blocking"):  # published on the loop, and from a thread
                    a.wire.result("tools/call", {"name": tool, "arguments": {"name": "groceries", "text": "jam"}})
                    got = next(json.loads(line[5:]) for line in lines if line.startswith("data:"))
                    assert got["method"] == "notifications/resources/updated", got
                    assert got["params"]["uri"] == "notes://groceries", got
                return
        assert time.monotonic() < deadline, first
        time.sleep(0.2)


def test_legacy_subscriptions_made_at_once_on_two_workers_both_count(pair: tuple[Worker, Worker]) -> None:
    """Two resources/subscribe of one session, one per worker, at the same time: both stick
    (a save writes only what its request changed)."""
    import concurrent.futures

    a, b = pair
    sid = legacy_post(a, init_msg()).headers["mcp-session-id"]
    uris = [f"notes://n{i}" for i in range(6)]

    def subscribe(i: int) -> int:
        w = (a, b)[i % 2]
        with httpx.Client(timeout=10, trust_env=False) as http:
            r = http.post(w.url, content=json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "resources/subscribe",
                                                     "params": {"uri": uris[i]}}).encode(),
                          headers={**JSON_ACCEPT, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
            return r.status_code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(subscribe, range(6))) == [200] * 6
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    with a.http.stream("GET", a.url, headers=headers) as stream:
        lines = stream.iter_lines()
        assert next(lines).startswith(":")
        for i in range(6):
            b.wire.result("tools/call", {"name": "save_note", "arguments": {"name": f"n{i}", "text": "x"}})
        got = []
        for line in lines:
            if line.startswith("data:"):
                got.append(json.loads(line[5:])["params"]["uri"])
                if len(got) == 6:
                    break
    assert sorted(got) == uris, got
