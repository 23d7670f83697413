"""Extensions the proxy carries when the backend offers them.

- Skills (``io.modelcontextprotocol/skills``, SEP-2640): ``skills/list``, ``skills/get`` and,
  when the backend advertises ``directoryRead``, ``resources/directory/read`` are forwarded
  as they are (their ``skill://`` files are ordinary resources, forwarded like any);
- tasks (``io.modelcontextprotocol/tasks``, SEP-2663) from a 2026-07-28 backend:
  ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` are forwarded, a ``tools/call``
  answered with a task handle reaches the front client as that handle, and the front
  client's declaration of the extension reaches the backend with each request (a task is
  only created for a request that declares it). Task ids are the backend's: nothing is kept
  in the proxy, so any worker answers any of them. A 2025-11-25 backend's tool tasks are
  served as this extension too (:mod:`._tasks_legacy`), and to 2025-11-25 front clients as
  that revision's tasks; a 2026-07-28 backend's tasks reach 2025-11-25 front clients as
  2025-11-25 tasks (:mod:`._tasks_modern`).

The front advertises each carried extension with the backend's own settings; an extension
the proxy does not know is not advertised (its methods would have nowhere to go).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import skills, tasks
from ..protocol import types as t

if TYPE_CHECKING:
    from ..server import Context, Server
    from ._backend import Backend

#: Each carried extension's methods: method -> (params type, result type); and, by setting,
#: the methods served only when the backend's settings have it.
_METHODS: dict[str, dict[str, tuple[type[t.RequestParams], type[t.Result]]]] = {
    skills.EXTENSION_ID: {
        "skills/list": (skills.ListSkillsParams, skills.ListSkillsResult),
        "skills/get": (skills.GetSkillParams, skills.GetSkillResult),
        "resources/directory/read": (skills.ReadDirectoryParams, skills.ReadDirectoryResult),
    },
    tasks.EXTENSION_ID: {
        "tasks/get": (tasks.TaskParams, tasks.GetTaskResult),
        "tasks/update": (tasks.UpdateTaskParams, t.Result),
        "tasks/cancel": (tasks.TaskParams, t.Result),
    },
}
_OPTIONAL = {"resources/directory/read": "directoryRead"}
#: The 2025-11-25 task methods served to a 2025-11-25 front client of a backend of that era.
_LEGACY_TASKS: dict[str, tuple[type[t.RequestParams], type[t.Result]]] = {
    "tasks/list": (t.PaginatedParams, t.Result),
    "tasks/result": (tasks.TaskParams, t.Result),
}
#: Extensions carried only from a backend of this era.
_MODERN_ONLY = frozenset({tasks.EXTENSION_ID})


def carried(backend: Backend) -> dict[str, dict[str, Any]]:
    """The backend's extensions the proxy carries: id -> the backend's settings."""
    from . import _tasks_legacy

    caps = backend.card.get("capabilities") or {}
    offered = caps.get("extensions")
    out = {}
    for ext_id, settings in (offered.items() if isinstance(offered, dict) else ()):
        if ext_id not in _METHODS or (ext_id in _MODERN_ONLY and backend.era == "legacy"):
            continue
        out[ext_id] = dict(settings) if isinstance(settings, dict) else {}
    if _tasks_legacy.offers(backend):  # 2025-11-25 tool tasks, served as the extension
        out[tasks.EXTENSION_ID] = {}
    return out


def is_task(raw: dict[str, Any]) -> bool:
    """Whether a backend's ``tools/call`` result is a task handle."""
    return raw.get("resultType") == "task"


def task_handle(raw: dict[str, Any]) -> tasks.CreateTaskResult:
    import msgspec

    return msgspec.convert(raw, tasks.CreateTaskResult)


Forward = Callable[[str, type[Any], "Context", Any], Any]


def install(server: Server, backend: Backend, forward: Forward) -> None:
    """Serve on ``server`` the methods of every extension :func:`carried` from ``backend``;
    ``forward(method, result_type, ctx, params)`` answers each."""
    from . import _tasks_legacy

    found = carried(backend)
    backend.extensions = frozenset(found)
    for ext_id, settings in found.items():
        capability = f"extensions/{ext_id}"
        methods = dict(_METHODS[ext_id])
        if ext_id == tasks.EXTENSION_ID:  # 2025-11-25 front clients get that revision's tasks
            methods.update(_LEGACY_TASKS if _tasks_legacy.offers(backend) else
                           {"tasks/result": _LEGACY_TASKS["tasks/result"]})
        for method, (params_type, result_type) in methods.items():
            needs = _OPTIONAL.get(method)
            if needs is not None and not settings.get(needs):
                continue

            async def handler(ctx: Context, params: Any, _m: str = method, _r: type[Any] = result_type) -> Any:
                return await forward(_m, _r, ctx, params)

            server.add_method(method, handler, params_type, capability)
