"""Server side: declare tools, resources and prompts; answer every request statelessly."""

from typing import TYPE_CHECKING, Any

from ._context import Context
from ._primitives import ToolError, assistant, audio, embedded, image, resource_contents, text, user
from ._server import Reply, Server
from ._signature import Header

if TYPE_CHECKING:
    from ._tasks import InMemoryTaskStore, TaskRecord, Tasks, TaskStore

__all__ = [
    "Context", "Header", "InMemoryTaskStore", "Reply", "Server", "TaskRecord", "TaskStore", "Tasks", "ToolError",
    "assistant", "audio", "embedded", "image", "resource_contents", "text", "user",
]

_TASK_NAMES = frozenset({"InMemoryTaskStore", "TaskRecord", "Tasks", "TaskStore"})


def __getattr__(name: str) -> Any:
    # The tasks extension loads on first use: servers without tasks never import it.
    if name in _TASK_NAMES:
        from . import _tasks

        return getattr(_tasks, name)
    raise AttributeError(f"module 'mcpkit.server' has no attribute {name!r}")
