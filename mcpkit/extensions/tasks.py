"""The tasks extension, server side: ``io.modelcontextprotocol/tasks`` (SEP-2663).

A ``tools/call`` may be answered with a *task handle* (``resultType: "task"``) instead of its
result; the client then polls ``tasks/get``, answers questions with ``tasks/update`` and may
``tasks/cancel``. Install it on the server and mark the tools that may run as tasks::

    from mcpkit.extensions.tasks import Tasks

    server = Server("jobs")
    server.use(Tasks())                  # or Tasks(store=..., ttl_ms=..., poll_interval_ms=...)

    # a task when the client declared the extension, else synchronous
    @server.tool(extensions={Tasks.id: {"support": "optional"}})
    async def render(scene: str, ctx: Context) -> str: ...

    # only ever a task; other clients get -32021; a task once the handler says so
    @server.tool(extensions={Tasks.id: {"support": "required", "start": "explicit"}})
    async def train(epochs: int, ctx: Context) -> str:
        ...                                  # runs synchronously (may ask, the MRTR way)
        await ctx.extension(Tasks).start()   # from here on a task
        ...

The rules, as this module applies them:

- A task is only created for a request whose own ``clientCapabilities.extensions`` declares
  ``io.modelcontextprotocol/tasks`` (2026-07-28 requests only). Otherwise a ``"optional"``
  tool runs synchronously, and a ``"required"`` one is refused with ``-32021`` before its
  handler runs. Tools without the option are never tasks.
- With ``"start": "immediate"`` (the default) the task is created before the handler runs
  and the ``CreateTaskResult`` is answered at once. With ``"start": "explicit"`` the handler
  starts synchronously (it may still ask questions the MRTR way) and the call becomes a task
  when it calls ``await ctx.extension(Tasks).start()``; if it returns first, its result is
  answered as usual.
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
- The extension is an :class:`~mcpkit.extensions.Extension` and uses only the server's
  public hooks (``add_method``, ``wrap_method``, the context's ``input_channel``/``emitter``/
  ``progress_sink``/``extensions``); its wire types live in :mod:`mcpkit.protocol.tasks`.
- ``notifications/tasks`` are not sent (a MAY): ``subscriptions/listen`` never acknowledges
  ``taskIds`` (and refuses them with -32021 to clients that did not declare the extension).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

# asyncio, secrets and datetime load with the first task, not with the extension:
# a server that never runs a task never pays for them.
import msgspec
from msgspec import UNSET

from ..protocol import errors, versions
from ..protocol import types as t
from ..protocol.tasks import (
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
from ..server import InputRequired, owner_key, parse_answer
from . import Extension
from ._task_records import InMemoryTaskStore, TaskRecord, TaskStore, iso_time
from ._task_run import TaskRun

if TYPE_CHECKING:
    from ..server import Context, Handler, Server, ToolDef

__all__ = [
    "CAPABILITY", "DEFAULT_POLL_INTERVAL_MS", "DEFAULT_TTL_MS", "EXTENSION_ID", "TERMINAL", "CreateTaskResult",
    "GetTaskResult", "InMemoryTaskStore", "Task", "TaskContext", "TaskOptions", "TaskParams", "TaskRecord", "TaskRun",
    "TaskStart", "TaskStatus", "TaskStore", "TaskSupport", "Tasks", "UpdateTaskParams", "iso_time",
]

log = logging.getLogger("mcpkit.server.tasks")

DEFAULT_TTL_MS = 3_600_000
DEFAULT_POLL_INTERVAL_MS = 1_000

#: Whether a tool may run as a task for clients that declare the extension, or must.
TaskSupport = Literal["optional", "required"]
#: When its call becomes a task: before the handler runs, or when it calls ``start()``.
TaskStart = Literal["immediate", "explicit"]
SUPPORT: tuple[str, ...] = ("optional", "required")
START: tuple[str, ...] = ("immediate", "explicit")


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """A tool's tasks options, as ``tool.options(Tasks.id)`` returns them (checked)."""

    support: TaskSupport = "optional"
    start: TaskStart = "immediate"


def declared(ctx: Context) -> bool:
    """Whether this request's client declared the tasks extension (2026-07-28 requests only)."""
    return declared_by(ctx.protocol_version, ctx.client_capabilities)


class TaskContext:
    """The tasks extension's helper for one request: ``ctx.extension(Tasks)``."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def _run(self) -> TaskRun | None:
        run: TaskRun | None = self._ctx.extensions.get(EXTENSION_ID)
        return run

    @property
    def task_id(self) -> str | None:
        """The id of the task this tool call runs as, or None (not, or not yet, a task)."""
        run = self._run()
        return run.task_id if run is not None else None

    @property
    def declared(self) -> bool:
        """Whether this request's client declared the extension (only then may it be a task)."""
        return declared(self._ctx)

    async def start(self) -> bool:
        """Continue this tool call as a task: the client gets its ``CreateTaskResult`` now and
        the handler keeps running in the background.

        For tools registered with ``"start": "explicit"``: code before this call runs
        synchronously (questions asked there go the MRTR way, before any task exists).
        Returns False, and the call simply continues synchronously, when it cannot become a
        task (the tool has no tasks option, or the client did not declare the extension);
        True when it is (or already was) a task.
        """
        run = self._run()
        if run is None:
            return False
        await run.start()
        return True


class Tasks(Extension[TaskContext]):
    """The tasks extension: ``server.use(Tasks(store=..., ttl_ms=..., poll_interval_ms=...))``.

    Installed through the server's public hooks only: it adds the ``tasks/*`` methods and
    wraps ``tools/call`` and ``subscriptions/listen``. ``store`` keeps task records (default:
    in memory); tasks expire ``ttl_ms`` after creation (None: never); ``poll_interval_ms`` is
    the polling pace suggested to clients.
    """

    id: ClassVar[str] = EXTENSION_ID

    def __init__(self, store: TaskStore | None = None, *, ttl_ms: int | None = DEFAULT_TTL_MS,
                 poll_interval_ms: int | None = DEFAULT_POLL_INTERVAL_MS) -> None:
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            raise ValueError("ttl_ms must be a positive integer (milliseconds) or None (unlimited)")
        if poll_interval_ms is not None and (not isinstance(poll_interval_ms, int) or poll_interval_ms <= 0):
            raise ValueError("poll_interval_ms must be a positive integer (milliseconds) or None")
        if store is not None and not isinstance(store, TaskStore):
            raise TypeError(f"store must be a TaskStore, not {type(store).__name__}")
        self._server: Server | None = None
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.store.attach(self)
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: The tasks whose handlers run in this process, by id.
        self.runs: dict[str, TaskRun] = {}
        self.next_sweep = 0.0

    @property
    def server(self) -> Server:
        """The server this extension is installed on."""
        if self._server is None:
            raise RuntimeError("Tasks is not installed on a server yet: server.use(Tasks())")
        return self._server

    def use_store(self, store: TaskStore) -> None:
        """Keep records in ``store`` from now on (before serving: records already made stay behind)."""
        self.store = store
        store.attach(self)

    # ------------------------------------------------------------------ the Extension hooks
    def install(self, server: Server) -> None:
        self._server = server
        server.add_method("tasks/get", self.get, TaskParams, CAPABILITY)
        server.add_method("tasks/update", self.update, UpdateTaskParams, CAPABILITY)
        server.add_method("tasks/cancel", self.cancel, TaskParams, CAPABILITY)
        server.wrap_method("tools/call", self.call_tool)
        server.wrap_method("subscriptions/listen", self.listen)

    def tool_options(self, tool: ToolDef, options: Any) -> TaskOptions:
        """``{"support": "optional" | "required", "start": "immediate" | "explicit"}``."""
        if isinstance(options, TaskOptions):
            options = dataclasses.asdict(options)
        if not isinstance(options, Mapping):
            raise ValueError(f"tool {tool.name!r}: the {EXTENSION_ID} options must be a dict such as "
                             "{'support': 'optional'}")
        unknown = sorted(set(options) - {"support", "start"})
        support, start = options.get("support"), options.get("start", "immediate")
        if unknown or support not in SUPPORT or start not in START:
            raise ValueError(f"tool {tool.name!r}: the {EXTENSION_ID} options take 'support' (one of {SUPPORT}) "
                             f"and 'start' (one of {START}); got {dict(options)!r}")
        return TaskOptions(support, start)

    def context(self, ctx: Context) -> TaskContext:
        return TaskContext(ctx)

    def declared(self, ctx: Context) -> bool:
        """Whether this request's client declared the extension (2026-07-28 requests only)."""
        return declared(ctx)

    # ------------------------------------------------------------------ subscriptions/listen
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
        opts: TaskOptions | None = tool.options(EXTENSION_ID) if tool is not None else None
        if tool is None or opts is None:
            return await call_next(ctx, params)
        if not declared(ctx):
            if opts.support == "required":
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
        if opts.start == "immediate":
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
        except InputRequired:
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
        """Record a run's outcome (its result or its error), unless the task was cancelled meanwhile."""
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
        """The caller's live task ``task_id``; another caller's task, an expired or unknown one is -32602."""
        if not versions.is_modern(ctx.protocol_version):
            raise errors.method_not_found(ctx.method)  # a 2026-07-28 extension: no such method in a legacy session
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
        """Answer ``tasks/get``."""
        rec = await self.lookup(ctx, params.taskId)
        return rec.detailed()

    async def update(self, ctx: Context, params: UpdateTaskParams) -> t.Result:
        """Answer ``tasks/update``: deliver the client's answers to the task's questions."""
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
                    parse_answer(key, rec.input_requests[key], raw)
            await self.store.relay_update(rec, params.inputResponses)
        return t.Result()

    async def cancel(self, ctx: Context, params: TaskParams) -> t.Result:
        """Answer ``tasks/cancel``: mark the task cancelled and stop its handler, wherever it runs."""
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
        """Stop and delete a task whose TTL has elapsed."""
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
