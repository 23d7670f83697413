"""The Tasks extension, server side: ``io.modelcontextprotocol/tasks`` (SEP-2663).

A ``tools/call`` may be answered with a *task handle* (``resultType: "task"``) instead of its
result; the client then polls ``tasks/get``, answers questions with ``tasks/update`` and may
``tasks/cancel``. Enable it on the server and mark the tools that may run as tasks::

    server = Server("jobs", tasks=True)          # or server.enable_tasks(store=..., ttl_ms=...)

    @server.tool(task="optional")   # a task when the client declared the extension, else synchronous
    async def render(scene: str, ctx: Context) -> str: ...

    @server.tool(task="required")   # only ever a task; other clients get -32021
    async def train(epochs: int, ctx: Context) -> str: ...

The rules, as this module applies them:

- A task is only created for a request whose own ``clientCapabilities.extensions`` declares
  ``io.modelcontextprotocol/tasks`` (2026-07-28 requests only). Otherwise a ``"optional"``
  tool runs synchronously, and a ``"required"`` one is refused with ``-32021`` before its
  handler runs. ``"never"`` (the default) tools are never tasks.
- With ``task_start="immediate"`` (the default) the task is created before the handler runs
  and the ``CreateTaskResult`` is answered at once. With ``task_start="explicit"`` the handler
  starts synchronously (it may still ask questions the MRTR way) and the call becomes a task
  when it calls ``await ctx.start_task()``; if it returns first, its result is answered as
  usual.
- Inside a task, ``ctx.elicit()``/``ctx.ask()``/``ctx.sample()`` park the task in
  ``input_required`` and wait for ``tasks/update`` (the same handler code works synchronously
  through MRTR). ``ctx.report_progress(..., message=...)`` sets the task's ``statusMessage``
  (progress and log notifications are not sent for tasks).
- A handler's result (``isError`` results included) completes the task; a JSON-RPC error
  (:class:`~mcpkit.MCPError`) fails it with that error.
- ``tasks/cancel`` marks the task ``cancelled`` and cancels its handler (``CancelledError`` at
  its current ``await``); a task already terminal is left as it is. Both are acknowledged.
- Task ids are 256-bit random secrets. Tasks expire ``ttl_ms`` after creation: expired tasks
  are purged (a still-running handler is cancelled) and their ids become unknown (-32602).
- Task records live in a :class:`TaskStore` (in memory by default). A running handler lives
  in this process, so the answers of ``tasks/update`` must reach the process running it.
- The extension uses only the server's public hooks (``add_method``, ``wrap_method``, the
  context's ``input_channel``/``emitter``/``extensions``); its wire types live in
  :mod:`mcpkit.protocol.tasks`.
- ``notifications/tasks`` are not sent (a MAY): ``subscriptions/listen`` never acknowledges
  ``taskIds`` (and refuses them with -32021 to clients that did not declare the extension).
"""

from __future__ import annotations

import abc
import heapq
import logging
import time
from typing import TYPE_CHECKING, Any

# asyncio, secrets and datetime load with the first task, not with `import mcpkit`:
# a server that never runs a task never pays for them.
import msgspec
from msgspec import UNSET, field

from ..protocol import errors
from ..protocol import types as t
from ..protocol.tasks import (  # noqa: F401 (the wire names stay importable from here)
    CAPABILITY,
    EXTENSION_ID,
    TERMINAL,
    CreateTaskResult,
    GetTaskResult,
    Task,
    TaskParams,
    TaskStatus,
    UpdateTaskParams,
    missing_extension,
    task_not_found,
)
from ..protocol.tasks import declared as declared_by
from . import _input  # the rules for answers, shared with ctx.ask()
from ._binding import owner_key

if TYPE_CHECKING:
    import asyncio

    from . import Context, Handler, InputRequests, Server  # the package's public extension API

log = logging.getLogger("mcpkit.server.tasks")

DEFAULT_TTL_MS = 3_600_000
DEFAULT_POLL_INTERVAL_MS = 1_000


# ====================================================================== records and stores
class TaskRecord(msgspec.Struct, kw_only=True):
    """A task's state as a store keeps it (plain data: msgspec-encodable for durable stores)."""

    task_id: str
    #: The authenticated caller that created the task (None when the transport knows none).
    owner: str | None = None
    #: What the task runs, e.g. ``tools/call`` and the tool name (for logs and stores).
    method: str = "tools/call"
    name: str | None = None
    status: str = "working"
    status_message: str | None = None
    created_at: float  # epoch seconds
    updated_at: float
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    #: Outstanding questions: key -> ``{"method": ..., "params": ...}``.
    input_requests: dict[str, Any] = field(default_factory=dict)
    #: Every ``inputRequests`` key ever issued: a key is never reused over a task's lifetime.
    issued_keys: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: The worker running the handler (set by shared stores such as Redis; None in memory).
    worker: str | None = None

    @property
    def expires_at(self) -> float | None:
        """When the record expires (epoch seconds), or None without a TTL."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000.0

    def expired(self, now: float) -> bool:
        """Whether the TTL has elapsed at ``now`` (epoch seconds)."""
        exp = self.expires_at
        return exp is not None and now >= exp

    def wire_fields(self) -> dict[str, Any]:
        """The ``Task`` fields of this record, as the wire spells them."""
        out: dict[str, Any] = {
            "taskId": self.task_id, "status": self.status,
            "createdAt": iso_time(self.created_at), "lastUpdatedAt": iso_time(self.updated_at), "ttlMs": self.ttl_ms,
        }
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            out["pollIntervalMs"] = self.poll_interval_ms
        return out

    def create_result(self) -> CreateTaskResult:
        """The ``CreateTaskResult`` answering the call that created the task."""
        return CreateTaskResult(**self.wire_fields())

    def detailed(self) -> GetTaskResult:
        """The ``tasks/get`` answer: the task, with its questions while ``input_required`` and its
        result or error once finished.
        """
        out = GetTaskResult(**self.wire_fields())
        if self.status == "input_required":
            out.inputRequests = dict(self.input_requests)
        elif self.status == "completed" and self.result is not None:
            out.result = self.result
        elif self.status == "failed" and self.error is not None:
            out.error = self.error
        return out


def iso_time(ts: float) -> str:
    """An epoch time as the RFC 3339 UTC timestamp the wire carries (milliseconds)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskStore(abc.ABC):
    """Where task records live. :class:`InMemoryTaskStore` is the default; a durable store
    (SQL, Redis, ...) implements these five methods. ``create`` must be strongly consistent:
    a ``get`` right after it returns must find the record."""

    @abc.abstractmethod
    async def create(self, record: TaskRecord) -> None:
        """Store a new record (strongly consistent: a ``get`` right after finds it)."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None."""

    @abc.abstractmethod
    async def save(self, record: TaskRecord) -> None:
        """Store a changed record (a record deleted or purged meanwhile stays gone)."""

    @abc.abstractmethod
    async def delete(self, task_id: str) -> None:
        """Delete the record of ``task_id`` (nothing when there is none)."""

    @abc.abstractmethod
    async def purge_expired(self, now: float) -> list[str]:
        """Delete the records whose TTL has elapsed at ``now``; return their ids."""

    # A store shared by several workers also carries ``tasks/update`` answers and
    # ``tasks/cancel`` to the worker running the handler. A store of one process needs none
    # of this: these defaults do nothing.
    def attach(self, tasks: Tasks) -> None:  # noqa: B027 (optional hook)
        """Called once by the :class:`Tasks` that uses this store."""

    async def relay_update(self, record: TaskRecord, responses: dict[str, Any]) -> None:  # noqa: B027
        """Hand ``tasks/update`` answers to the worker running ``record`` (not this one)."""

    async def relay_cancel(self, record: TaskRecord) -> None:  # noqa: B027
        """Stop the handler of ``record`` (already saved as cancelled) on the worker running it."""


class InMemoryTaskStore(TaskStore):
    """Records in a dict of this process, with an expiry heap (purging costs O(log n) per task)."""

    def __init__(self) -> None:
        self.records: dict[str, TaskRecord] = {}
        #: (expiry time, task id), a heap: the next task to expire first.
        self.expiry: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self.records)

    async def create(self, record: TaskRecord) -> None:
        """Store a new record (and its expiry)."""
        self.records[record.task_id] = record
        exp = record.expires_at
        if exp is not None:
            heapq.heappush(self.expiry, (exp, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None."""
        return self.records.get(task_id)

    async def save(self, record: TaskRecord) -> None:
        """Replace a record (a purged task stays purged)."""
        if record.task_id in self.records:  # a purged task stays purged
            self.records[record.task_id] = record

    async def delete(self, task_id: str) -> None:
        """Delete the record of ``task_id``."""
        self.records.pop(task_id, None)

    async def purge_expired(self, now: float) -> list[str]:
        """Delete the records whose TTL has elapsed at ``now``; return their ids."""
        gone: list[str] = []
        heap = self.expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            rec = self.records.get(task_id)
            if rec is not None and rec.expired(now):
                del self.records[task_id]
                gone.append(task_id)
        return gone


# ====================================================================== running tasks
def declared(ctx: Context) -> bool:
    """Whether this request's client declared the tasks extension (2026-07-28 requests only)."""
    return declared_by(ctx.protocol_version, ctx.client_capabilities)


async def _no_notifications(method: str, params: dict[str, Any]) -> None:
    """Progress and log notifications are not sent for tasks (SEP-2663)."""


class TaskRun:
    """One tool call that is, or may become, a task: its handler and its open questions.

    Kept in ``ctx.extensions[EXTENSION_ID]`` (``ctx.task_id``, ``ctx.start_task()``); once a
    task, it is also the call's input channel (questions wait for ``tasks/update``).
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
        if not self.started.done():
            self.started.set_result(None)

    async def touch(self) -> None:
        rec = self.record
        assert rec is not None
        rec.updated_at = time.time()
        await self.tasks.store.save(rec)

    async def set_status(self, message: str) -> None:
        """Set the task's ``statusMessage`` (``ctx.report_progress(..., message=...)`` in a task)."""
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
            _input.parse_answer(key, rec.input_requests[key], raw)  # -32602 before anything is taken
        for key, raw in taken.items():
            self.waiting[key].set_result(raw)
            rec.input_requests.pop(key, None)
        if taken and not rec.input_requests and rec.status == "input_required":
            rec.status = "working"
        return bool(taken)


class Tasks:
    """The tasks extension of one :class:`~mcpkit.Server` (``server.tasks``).

    Installed through the server's public hooks only: it adds the ``tasks/*`` methods and
    wraps ``tools/call`` and ``subscriptions/listen``.
    """

    def __init__(self, server: Server, store: TaskStore | None = None, *, ttl_ms: int | None = DEFAULT_TTL_MS,
                 poll_interval_ms: int | None = DEFAULT_POLL_INTERVAL_MS) -> None:
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            raise ValueError("ttl_ms must be a positive integer (milliseconds) or None (unlimited)")
        if poll_interval_ms is not None and (not isinstance(poll_interval_ms, int) or poll_interval_ms <= 0):
            raise ValueError("poll_interval_ms must be a positive integer (milliseconds) or None")
        self.server = server
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.store.attach(self)
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: The tasks whose handlers run in this process, by id.
        self.runs: dict[str, TaskRun] = {}
        self.next_sweep = 0.0

    def use_store(self, store: TaskStore) -> None:
        """Keep records in ``store`` from now on (before serving: records already made stay behind)."""
        self.store = store
        store.attach(self)

    def install(self) -> None:
        """Add the ``tasks/*`` methods, the extension and the wrappers to the server (once)."""
        server = self.server
        server.add_extension(EXTENSION_ID)
        server.add_method("tasks/get", self.get, TaskParams, CAPABILITY)
        server.add_method("tasks/update", self.update, UpdateTaskParams, CAPABILITY)
        server.add_method("tasks/cancel", self.cancel, TaskParams, CAPABILITY)
        server.wrap_method("tools/call", self.call_tool)
        server.wrap_method("subscriptions/listen", self.listen)

    async def listen(self, ctx: Context, params: t.ListenParams, call_next: Handler) -> Any:
        """``subscriptions/listen``: asking for task notifications needs the extension (-32021).

        ``notifications/tasks`` are not sent (a MAY): ``taskIds`` is never acknowledged, so
        the client knows to poll.
        """
        if params.notifications.taskIds is not UNSET and not declared(ctx):
            raise missing_extension()
        return await call_next(ctx, params)

    # ------------------------------------------------------------------ tools/call
    async def call_tool(self, ctx: Context, params: t.CallToolParams, call_next: Handler) -> Any:
        """``tools/call`` with the extension: a task, or the plain call (``call_next``)."""
        import asyncio

        tool = self.server.tools.get(params.name)
        if tool is None or tool.task == "never":
            return await call_next(ctx, params)
        if not declared(ctx):
            if tool.task == "required":
                raise missing_extension()
            return await call_next(ctx, params)
        args = params.arguments if params.arguments is not UNSET else None
        try:
            tool.sig.bind(args)
        except msgspec.ValidationError:
            return await call_next(ctx, params)  # answered synchronously with isError, as ever
        owner_key(ctx, "a task")  # refused up front for a caller a task cannot be bound to
        run = TaskRun(self, ctx, tool.name)
        ctx.extensions[EXTENSION_ID] = run
        if tool.task_start == "immediate":
            await run.start()
        run.runner = asyncio.get_running_loop().create_task(self.drive(run, params, call_next))
        if run.record is not None:
            return run.record.create_result()
        try:
            await asyncio.wait((run.runner, run.started), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if run.record is None:  # the request went away before the call became a task
                run.runner.cancel()
            raise
        if run.record is not None:
            return run.record.create_result()
        return run.runner.result()  # the handler finished (or asked, MRTR) before start_task()

    async def drive(self, run: TaskRun, params: t.CallToolParams, call_next: Handler) -> Any:
        """Run the handler; once the call is a task, settle the task with its outcome."""
        import asyncio

        try:
            result = await call_next(run.ctx, params)
        except asyncio.CancelledError:
            if run.record is None:
                raise
            self.runs.pop(run.record.task_id, None)  # cancelled or expired: already recorded
            return None
        except errors.MCPError as exc:
            if run.record is None:
                raise
            await self.settle(run, error=exc.to_error())
            return None
        except _input.InputRequired:
            if run.record is None:
                raise  # MRTR before the task exists: answered input_required
            log.error("task %s: input requested outside the task", run.record.task_id)
            await self.settle(run, error=errors.internal_error("Internal error while running the task").to_error())
            return None
        except Exception:
            if run.record is None:
                raise
            log.exception("task %s (%s) failed", run.record.task_id, run.name)
            await self.settle(run, error=errors.internal_error("Internal error while running the task").to_error())
            return None
        if run.record is None:
            return result
        await self.settle(run, result=msgspec.to_builtins(result))
        return None

    async def settle(self, run: TaskRun, *, result: dict[str, Any] | None = None,
                     error: dict[str, Any] | None = None) -> None:
        """Finish the task of ``run`` with its ``result`` or ``error`` (a task already terminal stays as it is)."""
        rec = run.record
        assert rec is not None
        self.runs.pop(rec.task_id, None)
        if rec.status in TERMINAL:
            return  # cancelled meanwhile: the late outcome is dropped
        rec.input_requests = {}
        if error is not None:
            rec.status, rec.error = "failed", error
            rec.status_message = str(error.get("message") or "The task failed")
        else:
            rec.status, rec.result = "completed", result
        rec.updated_at = time.time()
        await self.store.save(rec)

    # ------------------------------------------------------------------ tasks/*
    async def lookup(self, ctx: Context, task_id: str) -> TaskRecord:
        """The record of ``task_id`` for this caller; -32602 when there is none or it is another caller's."""
        if not declared(ctx):
            raise missing_extension()
        now = time.time()
        await self.sweep(now)
        run = self.runs.get(task_id)
        rec = run.record if run is not None else await self.store.get(task_id)
        if rec is not None and rec.expired(now):
            await self.expire(task_id)
            rec = None
        # Another caller's task is as unknown as a task that does not exist.
        if rec is None or rec.owner != owner_key(ctx, "a task"):
            raise task_not_found()
        return rec

    async def get(self, ctx: Context, params: TaskParams) -> GetTaskResult:
        """``tasks/get``: the task's status, questions or result."""
        rec = await self.lookup(ctx, params.taskId)
        return rec.detailed()

    async def update(self, ctx: Context, params: UpdateTaskParams) -> t.Result:
        """``tasks/update``: answers to the task's questions, passed to the running handler."""
        rec = await self.lookup(ctx, params.taskId)
        run = self.runs.get(rec.task_id)
        if rec.status in TERMINAL:
            return t.Result()
        if run is not None:
            if run.deliver(params.inputResponses):
                rec.updated_at = time.time()
                await self.store.save(rec)
        elif rec.worker is not None:
            # Another worker runs the handler: check the answers here (-32602 to this caller),
            # then the store carries them there.
            for key, raw in params.inputResponses.items():
                if key in rec.input_requests:
                    _input.parse_answer(key, rec.input_requests[key], raw)
            await self.store.relay_update(rec, params.inputResponses)
        return t.Result()

    async def cancel(self, ctx: Context, params: TaskParams) -> t.Result:
        """``tasks/cancel``: mark the task cancelled and stop its handler."""
        rec = await self.lookup(ctx, params.taskId)
        if rec.status not in TERMINAL:
            rec.status = "cancelled"
            rec.status_message = "Cancelled at the client's request"
            rec.input_requests = {}
            rec.updated_at = time.time()
            await self.store.save(rec)
            run = self.runs.pop(rec.task_id, None)
            if run is not None and run.runner is not None:
                run.runner.cancel()
            elif run is None and rec.worker is not None:
                await self.store.relay_cancel(rec)
        return t.Result()

    # ------------------------------------------------------------------ expiry
    async def sweep(self, now: float) -> None:
        """Purge expired tasks (at most once a second), stopping their handlers."""
        if now < self.next_sweep:
            return
        self.next_sweep = now + 1.0
        for task_id in await self.store.purge_expired(now):
            self.stop(task_id)

    async def expire(self, task_id: str) -> None:
        """Stop the task's handler and delete its record (its TTL elapsed)."""
        self.stop(task_id)
        await self.store.delete(task_id)

    def stop(self, task_id: str) -> None:
        """Cancel the handler running ``task_id`` in this process, if any."""
        run = self.runs.pop(task_id, None)
        if run is not None and run.runner is not None:
            run.runner.cancel()

    def running(self) -> int:
        """How many tasks have a handler running in this process."""
        return len(self.runs)
