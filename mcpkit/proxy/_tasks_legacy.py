"""A 2025-11-25 backend's tasks, served to 2026-07-28 front clients as the tasks extension.

A 2025-11-25 server that offers tool tasks (``capabilities.tasks.requests.tools.call``) runs a
``tools/call`` whose params carry ``task`` as a task: it answers ``{"task": {...}}``, then
``tasks/get`` reports the status and ``tasks/result`` the outcome. The front advertises the
``io.modelcontextprotocol/tasks`` extension for such a backend and translates:

- a ``tools/call`` whose front request declares the extension, for a tool whose
  ``execution.taskSupport`` is ``optional`` or ``required``, is sent with ``task: {}``; the
  backend's task comes back as the extension's ``CreateTaskResult`` (``ttl`` -> ``ttlMs``,
  ``pollInterval`` -> ``pollIntervalMs``);
- ``tasks/get`` is the backend's ``tasks/get``, with the outcome of a finished task fetched by
  ``tasks/result`` and inlined (``result``, or ``error``);
- ``tasks/cancel`` is the backend's ``tasks/cancel``.

A 2025-11-25 front client gets the backend's tasks as they are: the front's ``initialize``
advertises the backend's ``tasks`` capability (``list``, ``cancel``, ``requests.tools.call``),
a task-augmented ``tools/call`` (its ``task``) is sent on with it and answered with the
backend's ``{"task": {...}}``, and ``tasks/get``, ``tasks/list``, ``tasks/cancel`` and
``tasks/result`` are the backend's. Questions a task asks arrive (as a 2025-11-25 server
sends them) while ``tasks/result`` waits on the backend session: the front's ``tasks/result``
is a forwarded call like ``tools/call``, so they reach the front client as real requests.

A 2026-07-28 front client gets a task's questions through the extension's input path: when
``tasks/get`` finds the backend task ``input_required``, the proxy opens the backend's
``tasks/result`` for it (where the questions arrive) and reports them as ``inputRequests``;
``tasks/update`` answers them. That ``tasks/result`` is held in this process
(:class:`Waiting`: bounded, one per task, bound to the caller) until the task ends, and its
outcome is then the one ``tasks/get`` inlines. ``tasks/update`` that reaches a worker holding
no such question is refused with ``-32602``.

Tasks live in the backend session that created them: the caller's own (:mod:`._pool`), in the
worker that created them. With several workers and Redis, that worker records itself as the
task's owner, and the task's requests that reach another worker are relayed to it
(:mod:`._relay`); without Redis, route a client's requests to one worker.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError
from ..protocol import errors, tasks
from ..protocol import types as t
from ._pending import BackendCall, Event

if TYPE_CHECKING:
    from ..server import Context
    from ._backend import Backend

_MAX_PAGES = 20


def offers(backend: Backend) -> bool:
    """Whether a legacy backend offers 2025-11-25 tool tasks."""
    if backend.era != "legacy":
        return False
    node: Any = (backend.card.get("capabilities") or {}).get("tasks")
    for key in ("requests", "tools", "call"):
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict)


#: The 2025-11-25 methods a legacy front client gets (beside the extension's tasks/get, tasks/cancel).
LEGACY_METHODS = ("tasks/list", "tasks/result")


def legacy_capability(backend: Backend) -> dict[str, Any]:
    """The ``tasks`` capability a 2025-11-25 front client is offered: what the backend's has of
    ``list``, ``cancel`` and ``requests.tools.call`` (``{}`` when it offers no tool tasks)."""
    if not offers(backend):
        return {}
    cap = (backend.card.get("capabilities") or {})["tasks"]
    out: dict[str, Any] = {k: {} for k in ("list", "cancel") if isinstance(cap.get(k), dict)}
    out["requests"] = {"tools": {"call": {}}}
    return {"tasks": out}


def wanted(ctx: Context) -> bool:
    """Whether the front request declared the tasks extension."""
    return tasks.declared(ctx.protocol_version, ctx.client_capabilities or {})


async def task_support(session: Backend, tool: str) -> str | None:
    """The backend tool's ``execution.taskSupport`` (read from its raw ``tools/list``: the
    typed tool has no such field), kept per session until a tool is not found."""
    known: dict[str, str | None] = session.task_support
    if tool not in known:
        known.clear()
        cursor: Any = None
        for _ in range(_MAX_PAGES):
            page = await session.request("tools/list", {"cursor": cursor} if cursor else None)
            for item in page.get("tools") or ():
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    execution = item.get("execution")
                    support = execution.get("taskSupport") if isinstance(execution, dict) else None
                    known[item["name"]] = support if isinstance(support, str) else None
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
    return known.get(tool)


def is_created(raw: dict[str, Any]) -> bool:
    return isinstance(raw.get("task"), dict) and "content" not in raw


def _fields(task: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: task[k] for k in ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt")
                           if k in task}
    ttl = task.get("ttl")
    out["ttlMs"] = ttl if isinstance(ttl, int) else None
    if isinstance(task.get("pollInterval"), int):
        out["pollIntervalMs"] = task["pollInterval"]
    return out


def _convert(raw: dict[str, Any], typ: type[Any], method: str) -> Any:
    try:
        return msgspec.convert(raw, typ)
    except msgspec.ValidationError as exc:
        raise errors.internal_error(f"proxy: the backend server's answer to {method} is malformed: {exc}") from None


def created(raw: dict[str, Any]) -> tasks.CreateTaskResult:
    """The backend's ``{"task": {...}}`` as the extension's ``CreateTaskResult``."""
    return _convert(_fields(raw["task"]), tasks.CreateTaskResult, "tools/call")  # type: ignore[no-any-return]


#: What answers each kind of question.
ANSWER_TYPES: dict[str, type[Any]] = {"elicitation/create": t.ElicitResult, "sampling/createMessage": t.CreateMessageResult,
                                  "roots/list": t.ListRootsResult}
#: How long ``tasks/get`` waits for the question of a task that says ``input_required``.
_QUESTION_WAIT = 2.0
_SETTLE = 0.005


class Waiting:
    """The backend ``tasks/result`` calls held open for 2025-11-25 tasks that asked a question
    (their questions arrive there), by task id: at most ``limit`` (the oldest is cancelled).
    Used on the backend loop only."""

    def __init__(self, *, limit: int = 1000) -> None:
        self.calls: OrderedDict[str, BackendCall] = OrderedDict()
        self.limit = limit

    def _find(self, task_id: str, principal: str | None) -> BackendCall | None:
        call = self.calls.get(task_id)
        if call is None or not secrets.compare_digest(str(call.principal), str(principal)):
            return None
        return call

    async def questions(self, session: Backend, task_id: str, principal: str | None) -> dict[str, Any]:
        """The open questions of an ``input_required`` task (its ``tasks/result`` opened first)."""
        call = self._find(task_id, principal)
        if call is None:
            if task_id in self.calls:
                return {}  # another caller's task id: nothing of it is shown
            while len(self.calls) >= self.limit:
                self.calls.popitem(last=False)[1].cancel()
            call = BackendCall("tasks/result", principal)
            call.task_id = task_id
            self.calls[task_id] = call
            await session.start_call(call, "tasks/result", {"taskId": task_id}, progress=False, log_level=None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _QUESTION_WAIT
        while not call.done and not any(not fut.done() for _, fut in call.questions.values()):
            left = deadline - loop.time()
            if left <= 0:
                return {}
            await asyncio.sleep(min(0.02, left))
        return await call.open_questions(_SETTLE)

    async def answer(self, task_id: str, principal: str | None, responses: dict[str, Any]) -> None:
        """``tasks/update``: hand the answers to the waiting questions."""
        call = self._find(task_id, principal)
        asked = {k: q for k, (q, fut) in call.questions.items() if not fut.done()} if call is not None else {}
        unknown = sorted(set(responses) - set(asked))
        if call is None or unknown:
            what = f"question {', '.join(unknown)}" if unknown else "question"
            raise errors.invalid_params(f"tasks/update: no {what} of task {task_id} is waiting here (answered "
                                        "already, or asked through another proxy worker)")
        for key, value in responses.items():
            typ = ANSWER_TYPES.get(asked[key].get("method", ""))
            try:
                msgspec.convert(value, typ if typ is not None else dict[str, Any])
            except msgspec.ValidationError as exc:
                raise errors.invalid_params(f"tasks/update: the answer to {key} is malformed: {exc}") from None
        for key, value in responses.items():
            await call.answer(key, value)

    async def outcome(self, task_id: str, principal: str | None, timeout: float) -> Event | None:
        """A finished task's outcome from its held ``tasks/result`` (then forgotten); None if
        none is held."""
        call = self._find(task_id, principal)
        if call is None:
            return None
        del self.calls[task_id]
        try:
            async with asyncio.timeout(timeout):
                while True:
                    event = await call.next_event()
                    if event.kind in ("done", "error"):
                        return event
        except TimeoutError:
            call.cancel()
            return None

    def forget(self, task_id: str, principal: str | None) -> None:
        call = self._find(task_id, principal)
        if call is not None:
            del self.calls[task_id]
            call.cancel()


async def forward(session: Backend, method: str, params: Any, *, legacy_front: bool = False,
                  waiting: Waiting | None = None, principal: str | None = None) -> Any:
    """``tasks/get``, ``tasks/update``, ``tasks/cancel`` on the backend session; for a
    2025-11-25 front client, those and ``tasks/list`` as the backend answers them."""
    if legacy_front:
        if method == "tasks/update":
            raise errors.method_not_found(method)
        send: dict[str, Any] = {}
        if getattr(params, "taskId", None) is not None:
            send["taskId"] = params.taskId
        elif isinstance(getattr(params, "cursor", None), str):
            send["cursor"] = params.cursor
        return await session.request(method, send or None)
    task_id = params.taskId
    bridge = session.bridge
    assert bridge is not None and waiting is not None
    if method == "tasks/update":
        await bridge.run(waiting.answer(task_id, principal, params.inputResponses))
        return t.Result()
    if method == "tasks/cancel":
        await session.request("tasks/cancel", {"taskId": task_id})
        bridge.call_soon(lambda: waiting.forget(task_id, principal))
        return t.Result()
    raw = await session.request("tasks/get", {"taskId": task_id})
    out = _fields(raw)
    status = raw.get("status")
    if status == "input_required":
        questions = await bridge.run(waiting.questions(session, task_id, principal))
        if questions:
            out["inputRequests"] = questions
    elif status == "cancelled":
        bridge.call_soon(lambda: waiting.forget(task_id, principal))
    elif status in ("completed", "failed"):
        held = await bridge.run(waiting.outcome(task_id, principal, session.request_timeout))
        try:
            if held is not None and held.kind == "error":
                raise held.data
            result = held.data if held is not None else await session.request("tasks/result", {"taskId": task_id})
        except MCPError as exc:
            out["error"] = {"code": exc.code, "message": exc.message,
                            **({"data": exc.data} if exc.data is not None else {})}
        else:
            meta = result.get("_meta")
            if isinstance(meta, dict):  # the related-task mark is the 2025-11-25 wire's
                meta = {k: v for k, v in meta.items() if k != "io.modelcontextprotocol/related-task"}
                result = {**result, "_meta": meta} if meta else {k: v for k, v in result.items() if k != "_meta"}
            out["result"] = result
    return _convert(out, tasks.GetTaskResult, method)
