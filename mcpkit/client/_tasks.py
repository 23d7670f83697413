"""The tasks extension, client side: ``io.modelcontextprotocol/tasks`` (SEP-2663).

``await client.call_tool(name, args, task=True)`` declares the extension on that request and
returns a :class:`TaskHandle`. When the server runs the call as a task (``resultType:
"task"``), the handle polls ``tasks/get`` at the server's ``pollIntervalMs``, answers
``input_required`` with ``tasks/update`` through the client's own elicitation, sampling and
roots handlers, and can ``tasks/cancel``. When the server answers at once (the tool is never a
task, or the server is a 2025-11-25 one) the handle is already complete::

    handle = await client.call_tool("render", {"scene": "a"}, task=True)
    print(handle.task_id, handle.status)
    result = await handle.result()            # a CallToolResult, once the task completes
    # or: await handle.cancel()

A plain ``call_tool`` whose request declared the extension (``capabilities={"extensions":
{"io.modelcontextprotocol/tasks": {}}}``) and was answered with a task waits for it the same
way and returns the final result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError, ProtocolError
from ..errors import TaskCancelled as TaskCancelled
from ..protocol import meta as M
from ..protocol import types as t

if TYPE_CHECKING:
    from ._client import Client
    from ._input import InputHandlers

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: Seconds between polls when the server gives no ``pollIntervalMs``.
DEFAULT_POLL_INTERVAL = 1.0

#: Called with (status, statusMessage) each time a poll sees the task change.
StatusCallback = Callable[[str, "str | None"], Any]


def declares_tasks(capabilities: dict[str, Any]) -> bool:
    ext = capabilities.get("extensions")
    return isinstance(ext, dict) and isinstance(ext.get(EXTENSION_ID), dict)


def with_extension(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``capabilities`` with the tasks extension declared."""
    ext = capabilities.get("extensions")
    ext = dict(ext) if isinstance(ext, dict) else {}
    ext.setdefault(EXTENSION_ID, {})
    return {**capabilities, "extensions": ext}


def declaring(client: Client, params: dict[str, Any]) -> dict[str, Any]:
    """Request params whose ``_meta`` declares the extension (for this request only)."""
    return declare_in(params, client.capabilities)


def declare_in(params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    """``params`` whose ``_meta`` declares the extension on top of ``capabilities`` (this request only)."""
    if declares_tasks(capabilities):
        return params
    meta = dict(params.get("_meta") or {})
    meta[M.CLIENT_CAPABILITIES] = with_extension(capabilities)
    return {**params, "_meta": meta}


class TaskHandle:
    """A ``tools/call`` running as a task (or already answered: :attr:`task_id` is None)."""

    def __init__(self, client: Client, created: dict[str, Any] | None = None, *,
                 result: t.CallToolResult | None = None, inputs: InputHandlers | None = None) -> None:
        self.client = client
        #: The client's handlers for the questions a task asks (its elicitation, sampling, roots).
        self._inputs = inputs
        #: The task's id (None when the server answered the call at once).
        self.task_id: str | None = None
        #: ``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``.
        self.status = "completed"
        self.status_message: str | None = None
        #: Seconds between polls (the server's ``pollIntervalMs``).
        self.poll_interval = DEFAULT_POLL_INTERVAL
        #: The latest task object the server sent (``CreateTaskResult`` or ``tasks/get``).
        self.last: dict[str, Any] = {}
        self._result = result
        self._error: dict[str, Any] | None = None
        self._answered: set[str] = set()
        if created is not None:
            task_id = created.get("taskId")
            if not isinstance(task_id, str):
                raise ProtocolError("tools/call: a task result without a taskId")
            self.task_id = task_id
            self._update(created)

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, status={self.status!r})"

    @property
    def done(self) -> bool:
        """Whether the task reached a terminal status (completed, failed or cancelled)."""
        return self.status in TERMINAL

    def _take_status(self, task: dict[str, Any], interval_key: str) -> None:
        """``task``'s status, message and poll interval (milliseconds under ``interval_key``)."""
        self.last = task
        status = task.get("status")
        if isinstance(status, str):
            self.status = status
        message = task.get("statusMessage")
        self.status_message = message if isinstance(message, str) else None
        interval = task.get(interval_key)
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval > 0:
            self.poll_interval = interval / 1000.0

    def _tell(self, on_status: StatusCallback | None, seen: tuple[str, str | None] | None) -> tuple[str, str | None] | None:
        """Call ``on_status`` if the status or its message changed since ``seen``; what it saw."""
        if on_status is not None and (self.status, self.status_message) != seen:
            seen = (self.status, self.status_message)
            on_status(self.status, self.status_message)
        return seen

    def _update(self, task: dict[str, Any]) -> None:
        self._take_status(task, "pollIntervalMs")
        if self.status == "completed" and isinstance(task.get("result"), dict):
            try:
                self._result = msgspec.convert(task["result"], t.CallToolResult)
            except msgspec.ValidationError as exc:
                raise ProtocolError(f"tasks/get: malformed result: {exc}") from None
        elif self.status == "failed" and isinstance(task.get("error"), dict):
            self._error = task["error"]

    async def _ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.task_id is not None
        body = declaring(self.client, {"taskId": self.task_id, **(params or {})})
        return await self.client.request(method, body)

    async def poll(self) -> str:
        """One ``tasks/get``: the task's status now."""
        if self.task_id is None or self.done:
            return self.status
        self._update(await self._ask("tasks/get"))
        return self.status

    async def cancel(self) -> None:
        """Ask the server to cancel the task (a task already finished is left as it is)."""
        if self.task_id is None or self.done:
            return
        await self._ask("tasks/cancel")
        await self.poll()

    async def result(self, *, on_status: StatusCallback | None = None, timeout: float | None = None) -> t.CallToolResult:
        """Wait for the task to finish and return its ``CallToolResult``.

        Questions the task asks (``input_required``) are answered by the client's handlers.
        A failed task raises its :class:`~mcpkit.MCPError`; a cancelled one
        :class:`TaskCancelled`; ``timeout`` (seconds) raises ``TimeoutError`` (the task goes on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[str, str | None] | None = None
        while True:
            seen = self._tell(on_status, seen)
            if self.status == "completed":
                if self._result is None:
                    raise ProtocolError("tasks/get: a completed task without a result")
                return self._result
            if self.status == "failed":
                err = self._error or {}
                raise MCPError(err.get("code", 0), err.get("message", self.status_message or "the task failed"),
                               err.get("data"))
            if self.status == "cancelled":
                raise TaskCancelled(self.status_message or "the task was cancelled")
            if self.status == "input_required":
                if await self._answer_input():
                    await self.poll()
                    continue
            wait = self.poll_interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"task {self.task_id}: not finished within {timeout:g} s")
                wait = min(wait, left)
            await asyncio.sleep(wait)
            await self.poll()

    async def _answer_input(self) -> bool:
        """Answer the open questions not answered yet; True if any were."""
        requests = self.last.get("inputRequests")
        if not isinstance(requests, dict):
            return False
        fresh = {k: v for k, v in requests.items() if k not in self._answered}
        if not fresh:
            return False
        if self._inputs is None:
            raise ProtocolError(f"task {self.task_id} wants input, and this handle has no handlers to answer it")
        answers = await self._inputs.answer_all("tasks/get", fresh)
        self._answered.update(fresh)
        await self._ask("tasks/update", {"inputResponses": answers or {}})
        return True
