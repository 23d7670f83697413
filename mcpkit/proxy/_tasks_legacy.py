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

Tasks live in the backend session that created them: the caller's own (:mod:`._pool`).
Not carried to a 2026-07-28 front client: the questions a task asks; ``tasks/update`` is
refused with ``-32602``, and such a task is reported ``input_required`` without
``inputRequests``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError
from ..protocol import errors, tasks
from ..protocol import types as t

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


async def forward(session: Backend, method: str, params: Any, *, legacy_front: bool = False) -> Any:
    """``tasks/get``, ``tasks/cancel`` (and a refused ``tasks/update``) on the backend session;
    for a 2025-11-25 front client, those and ``tasks/list`` as the backend answers them."""
    if legacy_front:
        if method == "tasks/update":
            raise errors.method_not_found(method)
        send: dict[str, Any] = {}
        if getattr(params, "taskId", None) is not None:
            send["taskId"] = params.taskId
        elif isinstance(getattr(params, "cursor", None), str):
            send["cursor"] = params.cursor
        return await session.request(method, send or None)
    if method == "tasks/update":
        raise errors.invalid_params("tasks/update: the backend is a 2025-11-25 server, whose task questions the "
                                    "proxy does not carry")
    task_id = params.taskId
    if method == "tasks/cancel":
        await session.request("tasks/cancel", {"taskId": task_id})
        return t.Result()
    raw = await session.request("tasks/get", {"taskId": task_id})
    out = _fields(raw)
    if raw.get("status") in ("completed", "failed"):
        try:
            result = await session.request("tasks/result", {"taskId": task_id})
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
