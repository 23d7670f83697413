"""A 2026-07-28 backend's tasks extension, served to 2025-11-25 front clients as that revision's tasks.

When the backend offers ``io.modelcontextprotocol/tasks``, a 2025-11-25 front client is offered
the ``tasks`` capability (``cancel``, ``requests.tools.call``; no ``list``: the extension has no
such method) in ``initialize``, and:

- a task-augmented ``tools/call`` (its ``task``) reaches the backend declaring the extension;
  a task handle comes back as ``{"task": {...}}`` (``ttlMs`` -> ``ttl``, ``pollIntervalMs`` ->
  ``pollInterval``), a plain result as it is;
- ``tasks/get`` and ``tasks/cancel`` answer the backend's task as a 2025-11-25 ``Task``;
- ``tasks/result`` polls the backend's ``tasks/get`` until the task ends and answers its
  result (a failed task's error as the error). A question the task asks (``input_required``
  with ``inputRequests``) goes to the front client as real requests, on the ``tasks/result``
  stream as a 2025-11-25 server sends it, and the answers to the backend with ``tasks/update``.

Nothing is kept in the proxy: task ids are the backend's.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError
from ..protocol import errors, tasks
from ..protocol import meta as M

if TYPE_CHECKING:
    from ..server import Context
    from ._backend import Backend

#: The longest and the default wait between two polls of the backend's task (seconds).
_MAX_POLL = 1.0
_DEFAULT_POLL = 0.5
#: Input rounds a task may ask for, in one tasks/result.
_MAX_ROUNDS = 64


def offers(backend: Backend) -> bool:
    """Whether a 2026-07-28 backend's tasks extension is carried (and so served to 2025-11-25 clients)."""
    return backend.era != "legacy" and tasks.EXTENSION_ID in backend.extensions


def capability() -> dict[str, Any]:
    return {"tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}


def declare(send: dict[str, Any]) -> dict[str, Any]:
    """``send`` (a backend request's params) declaring the tasks extension."""
    meta = dict(send.get("_meta") or {})
    caps = dict(meta.get(M.CLIENT_CAPABILITIES) or {})
    caps["extensions"] = {**(caps.get("extensions") or {}), tasks.EXTENSION_ID: {}}
    meta[M.CLIENT_CAPABILITIES] = caps
    return {**send, "_meta": meta}


def legacy_task(raw: dict[str, Any]) -> dict[str, Any]:
    """The extension's task fields as a 2025-11-25 ``Task``."""
    out: dict[str, Any] = {k: raw[k] for k in ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt") if k in raw}
    out["ttl"] = raw.get("ttlMs") if isinstance(raw.get("ttlMs"), int) else None
    if isinstance(raw.get("pollIntervalMs"), int):
        out["pollInterval"] = raw["pollIntervalMs"]
    return out


def created(raw: dict[str, Any]) -> dict[str, Any]:
    """A backend task handle as a 2025-11-25 ``CreateTaskResult``."""
    return {"task": legacy_task(raw)}


async def forward(session: Backend, ctx: Context, method: str, params: Any) -> Any:
    """``tasks/get``, ``tasks/cancel``, ``tasks/result`` of a 2025-11-25 front client."""
    task_id = params.taskId
    send = declare(session.params_for({"taskId": task_id}, ctx.client_capabilities))
    if method == "tasks/cancel":
        await session.request("tasks/cancel", send)
        return legacy_task(await session.request("tasks/get", send))
    if method == "tasks/get":
        return legacy_task(await session.request("tasks/get", send))
    if method != "tasks/result":
        raise errors.method_not_found(method)
    answered: set[str] = set()
    rounds = 0
    while True:
        raw = await session.request("tasks/get", send)
        status = raw.get("status")
        if status == "completed":
            result = raw.get("result")
            if not isinstance(result, dict):
                raise errors.internal_error("proxy: the backend server's completed task has no result")
            meta = {**(result.get("_meta") or {}), "io.modelcontextprotocol/related-task": {"taskId": task_id}}
            return {**result, "_meta": meta}
        if status == "failed":
            found = raw.get("error")
            err: dict[str, Any] = found if isinstance(found, dict) else {}
            raise MCPError(int(err.get("code", errors.INTERNAL_ERROR)), str(err.get("message") or "the task failed"),
                           err.get("data"))
        if status == "cancelled":
            raise errors.internal_error(f"task {task_id} was cancelled")
        requests = raw.get("inputRequests")
        fresh = {k: v for k, v in requests.items() if k not in answered} if isinstance(requests, dict) else {}
        if status == "input_required" and fresh:
            rounds += 1
            if rounds > _MAX_ROUNDS:
                raise errors.internal_error(f"proxy: task {task_id} still wants input after {_MAX_ROUNDS} rounds")
            answers = await ctx.ask(fresh)  # real requests to the 2025-11-25 client
            answered.update(fresh)
            await session.request("tasks/update", {**send, "inputResponses": {
                k: msgspec.to_builtins(v) for k, v in answers.items()}})
            continue
        wait = raw.get("pollIntervalMs")
        await asyncio.sleep(min(_MAX_POLL, wait / 1000) if isinstance(wait, int) and wait >= 0 else _DEFAULT_POLL)
