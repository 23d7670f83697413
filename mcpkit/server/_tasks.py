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
- ``notifications/tasks`` are not sent (a MAY): ``subscriptions/listen`` never acknowledges
  ``taskIds`` (and refuses them with -32021 to clients that did not declare the extension).
"""

from __future__ import annotations

import abc
import heapq
import logging
import time
from typing import TYPE_CHECKING, Any, Literal

# asyncio, secrets and datetime load with the first task, not with `import mcpkit`:
# a server that never runs a task never pays for them.

import msgspec
from msgspec import UNSET, UnsetType, field

from ..protocol import errors, versions
from ..protocol import types as t
from ._input import InputRequired, parse_answer
from ._primitives import TASK_START, TASK_SUPPORT, TaskStart, TaskSupport  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from ._context import Context
    from ._server import Server

log = logging.getLogger("mcpkit.server.tasks")

EXTENSION_ID = "io.modelcontextprotocol/tasks"
#: The server capability name that gates the tasks/* methods (see ``Server._capability_names``).
CAPABILITY = f"extensions/{EXTENSION_ID}"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

DEFAULT_TTL_MS = 3_600_000
DEFAULT_POLL_INTERVAL_MS = 1_000


# ====================================================================== wire types
class TaskParams(t.RequestParams, kw_only=True):
    """``tasks/get`` and ``tasks/cancel`` params."""

    taskId: str


class UpdateTaskParams(TaskParams, kw_only=True):
    """``tasks/update`` params. Each response is checked against its question on delivery."""

    inputResponses: dict[str, Any]


def _task_result() -> str:
    return "task"


class Task(t.Result, kw_only=True):
    """The ``Task`` fields, flat on a result (``Result & Task``)."""

    taskId: str
    status: str
    statusMessage: str | UnsetType = UNSET
    createdAt: str
    lastUpdatedAt: str
    ttlMs: int | None  # null: unlimited
    pollIntervalMs: int | UnsetType = UNSET


class CreateTaskResult(Task, kw_only=True):
    """Answered to ``tools/call`` instead of its result: the seed state of the new task."""

    resultType: str = field(default_factory=_task_result)


class GetTaskResult(Task, kw_only=True):
    """``tasks/get``: a ``DetailedTask`` (status-specific payload inlined), resultType ``complete``."""

    inputRequests: dict[str, Any] | UnsetType = UNSET
    result: dict[str, Any] | UnsetType = UNSET
    error: dict[str, Any] | UnsetType = UNSET


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

    @property
    def expires_at(self) -> float | None:
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000.0

    def expired(self, now: float) -> bool:
        exp = self.expires_at
        return exp is not None and now >= exp

    def _fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": self.task_id, "status": self.status,
            "createdAt": _iso(self.created_at), "lastUpdatedAt": _iso(self.updated_at), "ttlMs": self.ttl_ms,
        }
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            out["pollIntervalMs"] = self.poll_interval_ms
        return out

    def create_result(self) -> CreateTaskResult:
        return CreateTaskResult(**self._fields())

    def detailed(self) -> GetTaskResult:
        out = GetTaskResult(**self._fields())
        if self.status == "input_required":
            out.inputRequests = dict(self.input_requests)
        elif self.status == "completed" and self.result is not None:
            out.result = self.result
        elif self.status == "failed" and self.error is not None:
            out.error = self.error
        return out


def _iso(ts: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskStore(abc.ABC):
    """Where task records live. :class:`InMemoryTaskStore` is the default; a durable store
    (SQL, Redis, ...) implements these five methods. ``create`` must be strongly consistent:
    a ``get`` right after it returns must find the record."""

    @abc.abstractmethod
    async def create(self, record: TaskRecord) -> None: ...

    @abc.abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None: ...

    @abc.abstractmethod
    async def save(self, record: TaskRecord) -> None: ...

    @abc.abstractmethod
    async def delete(self, task_id: str) -> None: ...

    @abc.abstractmethod
    async def purge_expired(self, now: float) -> list[str]:
        """Delete the records whose TTL has elapsed at ``now``; return their ids."""


class InMemoryTaskStore(TaskStore):
    """Records in a dict of this process, with an expiry heap (purging costs O(log n) per task)."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> None:
        self._records[record.task_id] = record
        exp = record.expires_at
        if exp is not None:
            heapq.heappush(self._expiry, (exp, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def save(self, record: TaskRecord) -> None:
        if record.task_id in self._records:  # a purged task stays purged
            self._records[record.task_id] = record

    async def delete(self, task_id: str) -> None:
        self._records.pop(task_id, None)

    async def purge_expired(self, now: float) -> list[str]:
        gone: list[str] = []
        heap = self._expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            rec = self._records.get(task_id)
            if rec is not None and rec.expired(now):
                del self._records[task_id]
                gone.append(task_id)
        return gone


# ====================================================================== running tasks
def declared(ctx: "Context") -> bool:
    """Whether this request's client declared the tasks extension (2026-07-28 requests only)."""
    if not versions.is_modern(ctx.protocol_version):
        return False
    ext = ctx.client_capabilities.get("extensions")
    return isinstance(ext, dict) and isinstance(ext.get(EXTENSION_ID), dict)


def missing_extension() -> errors.MCPError:
    return errors.MCPError(
        errors.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: this request needs the {EXTENSION_ID} extension "
        "(declare it in _meta clientCapabilities.extensions)",
        {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


def _not_found() -> errors.MCPError:
    return errors.invalid_params("Failed to retrieve task: Task not found")


class _Run:
    """One tool call that is, or may become, a task: its handler and its open questions."""

    __slots__ = ("tasks", "ctx", "name", "record", "runner", "waiting", "started")

    def __init__(self, tasks: "Tasks", ctx: "Context", name: str) -> None:
        self.tasks = tasks
        self.ctx = ctx
        self.name = name
        self.record: TaskRecord | None = None
        import asyncio

        self.runner: asyncio.Task | None = None
        #: key -> the future its answer is delivered to (by tasks/update).
        self.waiting: dict[str, asyncio.Future] = {}
        self.started: asyncio.Future = asyncio.get_running_loop().create_future()

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
            task_id=secrets.token_urlsafe(32), owner=self.ctx.principal, name=self.name,
            created_at=now, updated_at=now, ttl_ms=tasks.ttl_ms, poll_interval_ms=tasks.poll_interval_ms,
        )
        await tasks._sweep(now)
        await tasks.store.create(rec)
        self.record = rec
        tasks._runs[rec.task_id] = self
        ctx = self.ctx
        ctx._ask = self._ask
        ctx._emit = self._emit  # the request's own stream ends with the CreateTaskResult
        if not self.started.done():
            self.started.set_result(None)

    async def _touch(self) -> None:
        rec = self.record
        assert rec is not None
        rec.updated_at = time.time()
        await self.tasks.store.save(rec)

    async def _emit(self, method: str, params: dict) -> None:
        """Progress and log notifications are not sent for tasks (SEP-2663)."""

    async def set_status(self, message: str) -> None:
        """Set the task's ``statusMessage`` (``ctx.report_progress(..., message=...)`` in a task)."""
        rec = self.record
        if rec is not None and rec.status not in TERMINAL:
            rec.status_message = message
            await self._touch()

    async def _ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
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
        await self._touch()
        try:
            answers = await asyncio.gather(*(self.waiting[wk] for wk in wire_keys.values()))
        finally:
            for wk in wire_keys.values():
                self.waiting.pop(wk, None)
                rec.input_requests.pop(wk, None)
        return dict(zip(wire_keys, answers))

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


class Tasks:
    """The tasks extension of one :class:`~mcpkit.Server` (``server.tasks``)."""

    def __init__(self, server: "Server", store: TaskStore | None = None, *, ttl_ms: int | None = DEFAULT_TTL_MS,
                 poll_interval_ms: int | None = DEFAULT_POLL_INTERVAL_MS) -> None:
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            raise ValueError("ttl_ms must be a positive integer (milliseconds) or None (unlimited)")
        if poll_interval_ms is not None and (not isinstance(poll_interval_ms, int) or poll_interval_ms <= 0):
            raise ValueError("poll_interval_ms must be a positive integer (milliseconds) or None")
        self.server = server
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self._runs: dict[str, _Run] = {}  # the tasks whose handlers run in this process
        self._listen: Any = None
        self._next_sweep = 0.0

    def install(self) -> None:
        server = self.server
        server.add_extension(EXTENSION_ID)
        server.add_method("tasks/get", self._get, TaskParams, CAPABILITY)
        server.add_method("tasks/update", self._update, UpdateTaskParams, CAPABILITY)
        server.add_method("tasks/cancel", self._cancel, TaskParams, CAPABILITY)
        self._listen = server._handlers["subscriptions/listen"]
        server._handlers["subscriptions/listen"] = self.listen

    async def listen(self, ctx: "Context", params: t.ListenParams) -> Any:
        """``subscriptions/listen``: asking for task notifications needs the extension (-32021).

        ``notifications/tasks`` are not sent (a MAY): ``taskIds`` is never acknowledged, so
        the client knows to poll.
        """
        if params.notifications.taskIds is not UNSET and not declared(ctx):
            raise missing_extension()
        return await self._listen(ctx, params)

    # ------------------------------------------------------------------ tools/call
    async def call_tool(self, ctx: "Context", params: t.CallToolParams) -> Any:
        """``tools/call`` with the extension: a task, or the plain call (``Server._call_tool``)."""
        import asyncio

        server = self.server
        plain = server._call_tool
        tool = server._tools.get(params.name)
        support = tool.task if tool is not None else "never"
        if support == "never":
            return await plain(ctx, params)
        if not declared(ctx):
            if support == "required":
                raise missing_extension()
            return await plain(ctx, params)
        args = params.arguments if params.arguments is not UNSET else None
        try:
            tool.sig.bind(args)
        except msgspec.ValidationError:
            return await plain(ctx, params)  # answered synchronously with isError, as ever
        run = _Run(self, ctx, tool.name)
        ctx._task = run
        if tool.task_start == "immediate":
            await run.start()
        run.runner = asyncio.get_running_loop().create_task(self._drive(run, params))
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

    async def _drive(self, run: _Run, params: t.CallToolParams) -> Any:
        """Run the handler; once the call is a task, settle the task with its outcome."""
        import asyncio

        try:
            result = await self.server._call_tool(run.ctx, params)
        except asyncio.CancelledError:
            if run.record is None:
                raise
            self._runs.pop(run.record.task_id, None)  # cancelled or expired: already recorded
            return None
        except errors.MCPError as exc:
            if run.record is None:
                raise
            await self._settle(run, error=exc.to_error())
            return None
        except InputRequired:
            if run.record is None:
                raise  # MRTR before the task exists: answered input_required
            log.error("task %s: input requested outside the task", run.record.task_id)
            await self._settle(run, error=errors.internal_error("Internal error while running the task").to_error())
            return None
        except Exception:
            if run.record is None:
                raise
            log.exception("task %s (%s) failed", run.record.task_id, run.name)
            await self._settle(run, error=errors.internal_error("Internal error while running the task").to_error())
            return None
        if run.record is None:
            return result
        await self._settle(run, result=msgspec.to_builtins(result))
        return None

    async def _settle(self, run: _Run, *, result: dict[str, Any] | None = None,
                      error: dict[str, Any] | None = None) -> None:
        rec = run.record
        assert rec is not None
        self._runs.pop(rec.task_id, None)
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
    async def _lookup(self, ctx: "Context", task_id: str) -> TaskRecord:
        if not declared(ctx):
            raise missing_extension()
        now = time.time()
        await self._sweep(now)
        run = self._runs.get(task_id)
        rec = run.record if run is not None else await self.store.get(task_id)
        if rec is not None and rec.expired(now):
            await self._expire(task_id)
            rec = None
        # Another caller's task is as unknown as a task that does not exist.
        if rec is None or rec.owner != ctx.principal:
            raise _not_found()
        return rec

    async def _get(self, ctx: "Context", params: TaskParams) -> GetTaskResult:
        rec = await self._lookup(ctx, params.taskId)
        return rec.detailed()

    async def _update(self, ctx: "Context", params: UpdateTaskParams) -> t.Result:
        rec = await self._lookup(ctx, params.taskId)
        run = self._runs.get(rec.task_id)
        if run is not None and rec.status not in TERMINAL and run.deliver(params.inputResponses):
            rec.updated_at = time.time()
            await self.store.save(rec)
        return t.Result()

    async def _cancel(self, ctx: "Context", params: TaskParams) -> t.Result:
        rec = await self._lookup(ctx, params.taskId)
        if rec.status not in TERMINAL:
            rec.status = "cancelled"
            rec.status_message = "Cancelled at the client's request"
            rec.input_requests = {}
            rec.updated_at = time.time()
            await self.store.save(rec)
            run = self._runs.pop(rec.task_id, None)
            if run is not None and run.runner is not None:
                run.runner.cancel()
        return t.Result()

    # ------------------------------------------------------------------ expiry
    async def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + 1.0
        for task_id in await self.store.purge_expired(now):
            self._stop(task_id)

    async def _expire(self, task_id: str) -> None:
        self._stop(task_id)
        await self.store.delete(task_id)

    def _stop(self, task_id: str) -> None:
        run = self._runs.pop(task_id, None)
        if run is not None and run.runner is not None:
            run.runner.cancel()

    def running(self) -> int:
        """How many tasks have a handler running in this process."""
        return len(self._runs)
