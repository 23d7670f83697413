"""2025-11-25 tasks, client side (the ``tasks`` capability of that revision, experimental).

A ``tools/call`` whose params carry ``task`` is answered by a ``CreateTaskResult`` (``{"task":
{...}}``); the requestor polls ``tasks/get`` (at the server's ``pollInterval``), fetches the
outcome with ``tasks/result`` (which blocks until the task ends, and is where the server's
questions arrive while it is ``input_required``: they are answered by the client's handlers
as any server request of the session), and may ``tasks/cancel``. ``tasks/list`` pages
through the tasks the server keeps for us (:meth:`Client.list_tasks`).

The same :class:`~mcpkit.client.TaskHandle` API as the 2026-07-28 tasks extension: only the
wire differs.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError, NoAnswer, ProtocolError, TaskCancelled
from ..protocol import types as t
from ._tasks import StatusCallback, TaskHandle

if TYPE_CHECKING:
    from ._client import Client
    from ._input import InputHandlers

_INF = float("inf")


def offers_tool_tasks(initialize_result: dict[str, Any] | None) -> bool:
    """Whether a 2025-11-25 server declared ``capabilities.tasks.requests.tools.call``."""
    caps = (initialize_result or {}).get("capabilities")
    node: Any = caps.get("tasks") if isinstance(caps, dict) else None
    for key in ("requests", "tools", "call"):
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict)


def augment(params: dict[str, Any], initialize_result: dict[str, Any] | None) -> dict[str, Any]:
    """``tools/call`` params asking for a task (``params.task``) when the server offers tool
    tasks; unchanged otherwise (the spec forbids asking then: the call is answered at once)."""
    return {**params, "task": {}} if offers_tool_tasks(initialize_result) else params


def is_created(raw: dict[str, Any]) -> bool:
    """Whether a ``tools/call`` result is a 2025-11-25 ``CreateTaskResult``."""
    return isinstance(raw.get("task"), dict) and "content" not in raw


class LegacyTaskHandle(TaskHandle):
    """A 2025-11-25 task (see the module): ``tasks/get``, ``tasks/result`` and ``tasks/cancel``."""

    def __init__(self, client: Client, created: dict[str, Any], *, inputs: InputHandlers | None = None) -> None:
        super().__init__(client, inputs=inputs)
        task = created.get("task")
        task_id = task.get("taskId") if isinstance(task, dict) else None
        if not isinstance(task_id, str):
            raise ProtocolError("tools/call: a CreateTaskResult without a taskId")
        self.task_id = task_id
        self.status = "working"
        assert isinstance(task, dict)
        self._update(task)

    def _update(self, task: dict[str, Any]) -> None:
        self._take_status(task, "pollInterval")

    async def _ask(self, method: str, params: dict[str, Any] | None = None, *,
                   timeout: float | None = None) -> dict[str, Any]:
        assert self.task_id is not None
        return await self.client.request(method, {"taskId": self.task_id, **(params or {})}, timeout=timeout)

    async def cancel(self) -> None:
        """``tasks/cancel`` (a task already finished is left as it is)."""
        if self.task_id is None or self.done:
            return
        self._update(await self._ask("tasks/cancel"))

    async def result(self, *, on_status: StatusCallback | None = None, timeout: float | None = None) -> t.CallToolResult:
        """Wait for the task to end and return its ``CallToolResult`` (from ``tasks/result``).

        ``tasks/get`` is polled while the task is ``working``; once it is ``input_required`` or
        finished, ``tasks/result`` is sent (the server's questions come while it waits). A task
        whose outcome is a JSON-RPC error raises it as :class:`~mcpkit.MCPError`; a cancelled one
        :class:`TaskCancelled`; ``timeout`` (seconds) raises ``TimeoutError`` (the task goes on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[str, str | None] | None = None
        while True:
            seen = self._tell(on_status, seen)
            if self._result is not None:
                return self._result
            if self.status == "cancelled":
                raise TaskCancelled(self.status_message or "the task was cancelled")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"task {self.task_id}: not finished within {timeout:g} s")
            if self.done or self.status == "input_required":
                result = await self._fetch(left)  # the server's questions come while it blocks
                self._tell(on_status, seen)
                return result
            await asyncio.sleep(self.poll_interval if left is None else min(self.poll_interval, left))
            await self.poll()

    async def _fetch(self, left: float | None) -> t.CallToolResult:
        """``tasks/result``: blocks until the task ends; its outcome."""
        try:
            raw = await self._ask("tasks/result", timeout=_INF if left is None else left)
        except NoAnswer:
            raise TimeoutError(f"task {self.task_id}: not finished within the time limit") from None
        except MCPError:
            self.status = "failed" if self.status != "cancelled" else self.status
            raise
        try:
            self._result = msgspec.convert(raw, t.CallToolResult)
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"tasks/result: malformed result: {exc}") from None
        if not self.done:  # its outcome is in: the status the last tasks/get gave is over
            self.status, self.status_message = "completed", None
        return self._result


async def list_tasks(client: Client) -> list[dict[str, Any]]:
    """Every page of ``tasks/list``: the Task objects as the server sent them."""
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(10_000):
        page = await client.request("tasks/list", {"cursor": cursor} if cursor is not None else None)
        tasks = page.get("tasks")
        if not isinstance(tasks, list):
            raise ProtocolError("tasks/list: the result has no tasks list")
        out.extend(task for task in tasks if isinstance(task, dict))
        nxt = page.get("nextCursor")
        if not isinstance(nxt, str):
            return out
        cursor = nxt
    raise ProtocolError("tasks/list: too many pages")
