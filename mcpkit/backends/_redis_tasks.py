"""Task records in Redis, and the channel to the worker that runs a task's handler.

A record is a hash (``status`` and ``data``, the msgspec-encoded :class:`TaskRecord`) that
expires with the task (``PEXPIREAT``, so Redis purges it). A save never overwrites a
terminal status (a Lua check-and-set): a task cancelled through one worker stays cancelled
even if its handler, on another, finishes a moment later.

A record names the worker running its handler. ``tasks/update`` and ``tasks/cancel`` that
land elsewhere are sent to that worker's inbox and awaited. A worker that died (its
heartbeat key expired, or nobody receives its inbox) has its unfinished tasks marked
``failed`` when they are next read, instead of ``working`` forever.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import msgspec
from redis.exceptions import RedisError

from ..extensions.tasks import TaskRecord, TaskStore
from ..protocol import errors
from ..protocol.tasks import TERMINAL
from ._redis_node import BackendUnavailable, RedisNode

if TYPE_CHECKING:
    from ..extensions.tasks import Tasks

log = logging.getLogger("mcpkit.backends.redis")

_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(TaskRecord).decode

# KEYS[1] the record; ARGV[1] status, ARGV[2] data. Saves unless the record is gone or terminal.
_SAVE = """
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return 0 end
if cur == 'completed' or cur == 'failed' or cur == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'data', ARGV[2])
return 1
"""

WORKER_GONE = "The worker running this task stopped before it finished"


class RedisTaskStore(TaskStore):
    """A :class:`~mcpkit.extensions.tasks.TaskStore` shared by every worker of one Redis."""

    def __init__(self, node: RedisNode) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis
        self.tasks: Tasks | None = None
        self._save = node.client.register_script(_SAVE)
        node.handlers["task_update"] = self._on_update
        node.handlers["task_cancel"] = self._on_cancel

    def attach(self, tasks: Tasks) -> None:
        self.tasks = tasks

    # ------------------------------------------------------------------ records
    async def create(self, record: TaskRecord) -> None:
        await self.node.ensure("a task")
        record.worker = self.node.worker_id
        key = self.node.keys.task(record.task_id)
        try:
            pipe = self.node.client.pipeline(transaction=True)
            pipe.hset(key, mapping={"status": record.status, "data": _encode(record)})
            exp = record.expires_at
            if exp is not None:
                pipe.pexpireat(key, int(exp * 1000))
            await pipe.execute()
        except RedisError:
            raise BackendUnavailable("a task") from None

    async def get(self, task_id: str) -> TaskRecord | None:
        try:
            data = await self.node.client.hget(self.node.keys.task(task_id), "data")
        except RedisError:
            raise BackendUnavailable("tasks/*") from None
        if data is None:
            return None
        record = _decode(data)
        if record.status not in TERMINAL and record.worker is not None and not await self._running(record):
            await self._fail(record)
        return record

    async def save(self, record: TaskRecord) -> None:
        try:
            await self._save(keys=[self.node.keys.task(record.task_id)], args=[record.status, _encode(record)])
        except RedisError:
            raise BackendUnavailable("tasks/*") from None

    async def delete(self, task_id: str) -> None:
        try:
            await self.node.client.delete(self.node.keys.task(task_id))
        except RedisError:
            raise BackendUnavailable("tasks/*") from None

    async def purge_expired(self, now: float) -> list[str]:
        # Redis deletes expired records itself; what is left is stopping our own handlers.
        runs = self.tasks.runs if self.tasks is not None else {}
        return [tid for tid, run in runs.items() if run.record is not None and run.record.expired(now)]

    async def _running(self, record: TaskRecord) -> bool:
        assert record.worker is not None
        # Our own tasks are alive by definition (a restarted process has a new worker id).
        return await self.node.alive(record.worker)

    async def _fail(self, record: TaskRecord) -> None:
        log.warning("task %s: worker %s is gone; marking the task failed", record.task_id, record.worker)
        record.status = "failed"
        record.error = errors.internal_error(WORKER_GONE).to_error()
        record.status_message = WORKER_GONE
        record.input_requests = {}
        record.updated_at = time.time()
        await self.save(record)

    # ------------------------------------------------------------------ the handler's worker
    async def relay_update(self, record: TaskRecord, responses: dict[str, Any]) -> None:
        assert record.worker is not None
        reply = await self.node.call(record.worker, {"t": "task_update", "id": record.task_id, "responses": responses})
        if reply is None:
            if not await self.node.alive(record.worker):
                await self._fail(record)
            return
        if "error" in reply:
            err = reply["error"]
            raise errors.MCPError(err.get("code", errors.INTERNAL_ERROR), err.get("message", ""), err.get("data"))

    async def relay_cancel(self, record: TaskRecord) -> None:
        assert record.worker is not None
        await self.node.call(record.worker, {"t": "task_cancel", "id": record.task_id})

    async def _on_update(self, msg: dict[str, Any]) -> dict[str, Any]:
        tasks = self.tasks
        run = tasks.runs.get(msg["id"]) if tasks is not None else None
        rec = run.record if run is not None else None
        if run is None or rec is None or rec.status in TERMINAL:
            return {"ok": False}
        if run.deliver(msg.get("responses") or {}):
            rec.updated_at = time.time()
            await self.save(rec)
        return {"ok": True}

    async def _on_cancel(self, msg: dict[str, Any]) -> dict[str, Any]:
        tasks = self.tasks
        run = tasks.runs.get(msg["id"]) if tasks is not None else None
        if run is None or tasks is None:
            return {"ok": False}
        if run.record is not None:
            run.record.status = "cancelled"  # saved by the worker that was asked
        tasks.stop(msg["id"])
        return {"ok": True}
