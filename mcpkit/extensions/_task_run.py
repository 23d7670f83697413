"""One tool call that is, or may become, a task (the tasks extension, :mod:`mcpkit.extensions.tasks`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec

from ..protocol.tasks import TERMINAL
from ..server import owner_key, parse_answer
from ._task_records import TaskRecord

if TYPE_CHECKING:
    import asyncio

    from ..server import Context, InputRequests
    from .tasks import Tasks

__all__ = ["TaskRun"]


async def _no_notifications(method: str, params: dict[str, Any]) -> None:
    """Progress and log notifications are not sent for tasks (SEP-2663)."""


class TaskRun:
    """One tool call that is, or may become, a task: its handler and its open questions.

    Kept in ``ctx.extensions[EXTENSION_ID]`` (read by ``ctx.extension(Tasks)``); once a task,
    it is also the call's input channel (questions wait for ``tasks/update``) and progress sink.
    """

    __slots__ = ("tasks", "ctx", "name", "record", "runner", "waiting", "started")

    def __init__(self, tasks: Tasks, ctx: Context, name: str) -> None:
        import asyncio

        self.tasks = tasks
        self.ctx = ctx
        self.name = name
        self.record: TaskRecord | None = None
        self.runner: asyncio.Task[Any] | None = None
        #: key -> the future its answer is delivered to (by tasks/update).
        self.waiting: dict[str, asyncio.Future[Any]] = {}
        self.started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def task_id(self) -> str | None:
        return self.record.task_id if self.record is not None else None

    async def start(self) -> None:
        """Make this call a task: create its record (durably), then switch the handler's
        questions and notifications to the task."""
        import secrets

        if self.record is not None:
            return
        tasks = self.tasks
        now = time.time()
        rec = TaskRecord(
            task_id=secrets.token_urlsafe(32), owner=owner_key(self.ctx, "a task"), name=self.name,
            created_at=now, updated_at=now, ttl_ms=tasks.ttl_ms, poll_interval_ms=tasks.poll_interval_ms,
        )
        await tasks.sweep(now)
        await tasks.store.create(rec)
        self.record = rec
        tasks.runs[rec.task_id] = self
        ctx = self.ctx
        ctx.input_channel = self
        ctx.emitter = _no_notifications  # the request's own stream ends with the CreateTaskResult
        ctx.progress_sink = self.progress  # progress messages become the task's statusMessage
        if not self.started.done():
            self.started.set_result(None)

    async def touch(self) -> None:
        rec = self.record
        assert rec is not None
        rec.updated_at = time.time()
        await self.tasks.store.save(rec)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """``ctx.report_progress`` in a task: no notification; ``message`` sets the ``statusMessage``."""
        if message is not None:
            await self.set_status(message)

    async def set_status(self, message: str) -> None:
        """Set the task's ``statusMessage``."""
        rec = self.record
        if rec is not None and rec.status not in TERMINAL:
            rec.status_message = message
            await self.touch()

    async def ask(self, requests: InputRequests) -> dict[str, Any]:
        """Park the task in ``input_required`` until tasks/update answers every question."""
        import asyncio

        rec = self.record
        assert rec is not None
        loop = asyncio.get_running_loop()
        wire_keys: dict[str, str] = {}
        for key, req in requests.items():
            wk = key
            n = 1
            while wk in rec.issued_keys:  # never reuse a key over the task's lifetime
                n += 1
                wk = f"{key}-{n}"
            rec.issued_keys.append(wk)
            rec.input_requests[wk] = msgspec.to_builtins(req)
            self.waiting[wk] = loop.create_future()
            wire_keys[key] = wk
        if rec.status not in TERMINAL:
            rec.status = "input_required"
        await self.touch()
        try:
            answers = await asyncio.gather(*(self.waiting[wk] for wk in wire_keys.values()))
        finally:
            for wk in wire_keys.values():
                self.waiting.pop(wk, None)
                rec.input_requests.pop(wk, None)
        return dict(zip(wire_keys, answers, strict=True))

    def deliver(self, responses: dict[str, Any]) -> bool:
        """Hand answers to the questions they match (after checking them all); unknown keys
        and keys already answered are ignored. True if any answer was taken."""
        rec = self.record
        assert rec is not None
        taken = {k: v for k, v in responses.items()
                 if k in self.waiting and not self.waiting[k].done() and k in rec.input_requests}
        for key, raw in taken.items():
            parse_answer(key, rec.input_requests[key], raw)  # -32602 before anything is taken
        for key, raw in taken.items():
            self.waiting[key].set_result(raw)
            rec.input_requests.pop(key, None)
        if taken and not rec.input_requests and rec.status == "input_required":
            rec.status = "working"
        return bool(taken)


