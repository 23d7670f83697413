"""The tasks extension on the wire: ``io.modelcontextprotocol/tasks`` (SEP-2663).

Its identifiers, params and results, and the checks that depend on a request alone.
"""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, UnsetType, field

from . import errors, versions
from . import meta as M
from . import types as t

EXTENSION_ID = M.PREFIX + "tasks"
#: The server capability name that gates the ``tasks/*`` methods.
CAPABILITY = f"extensions/{EXTENSION_ID}"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


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

    # A factory, not a plain default, so omit_defaults never drops the discriminator.
    resultType: str = field(default_factory=_task_result)


class GetTaskResult(Task, kw_only=True):
    """``tasks/get``: a ``DetailedTask`` (status-specific payload inlined), resultType ``complete``."""

    inputRequests: dict[str, Any] | UnsetType = UNSET
    result: dict[str, Any] | UnsetType = UNSET
    error: dict[str, Any] | UnsetType = UNSET


def declared(protocol_version: str, client_capabilities: dict[str, Any]) -> bool:
    """Whether a request's client declared the extension (2026-07-28 requests only)."""
    if not versions.is_modern(protocol_version):
        return False
    ext = client_capabilities.get("extensions")
    return isinstance(ext, dict) and isinstance(ext.get(EXTENSION_ID), dict)


def missing_extension() -> errors.MCPError:
    """-32021: the request needs the extension its client did not declare."""
    return errors.MCPError(
        errors.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: this request needs the {EXTENSION_ID} extension "
        "(declare it in _meta clientCapabilities.extensions)",
        {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


def task_not_found() -> errors.MCPError:
    """Unknown, expired and other callers' tasks all get this one answer."""
    return errors.invalid_params("Failed to retrieve task: Task not found")
