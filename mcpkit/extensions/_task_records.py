"""Task records and where they live: :class:`TaskRecord`, :class:`TaskStore` and the default
:class:`InMemoryTaskStore` (the tasks extension, :mod:`mcpkit.extensions.tasks`).

A durable store (SQL, Redis: ``mcpkit.backends.redis``) subclasses :class:`TaskStore`.
"""

from __future__ import annotations

import abc
import heapq
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import field

from ..protocol.tasks import CreateTaskResult, GetTaskResult

if TYPE_CHECKING:
    from .tasks import Tasks

__all__ = ["InMemoryTaskStore", "TaskRecord", "TaskStore", "iso_time"]


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
        """The ``tasks/get`` answer: the task, with its questions while ``input_required`` and
        its result or error once finished."""
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
        """Store a changed record (a record deleted meanwhile stays deleted)."""

    @abc.abstractmethod
    async def delete(self, task_id: str) -> None:
        """Remove the record of ``task_id`` (no error when it is gone)."""

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
        """Store a new record (strongly consistent: a ``get`` right after finds it)."""
        self.records[record.task_id] = record
        exp = record.expires_at
        if exp is not None:
            heapq.heappush(self.expiry, (exp, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None."""
        return self.records.get(task_id)

    async def save(self, record: TaskRecord) -> None:
        """Store a changed record (a record deleted meanwhile stays deleted)."""
        if record.task_id in self.records:  # a purged task stays purged
            self.records[record.task_id] = record

    async def delete(self, task_id: str) -> None:
        """Remove the record of ``task_id`` (no error when it is gone)."""
        self.records.pop(task_id, None)

    async def purge_expired(self, now: float) -> list[str]:
        gone: list[str] = []
        heap = self.expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            rec = self.records.get(task_id)
            if rec is not None and rec.expired(now):
                del self.records[task_id]
                gone.append(task_id)
        return gone
