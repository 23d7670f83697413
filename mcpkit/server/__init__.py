"""Server side: declare tools, resources and prompts; answer every request statelessly.

Extensions build on :meth:`Server.add_method`, :meth:`Server.wrap_method`,
:meth:`Server.add_middleware` and the :class:`Context` (``input_channel``, ``emitter``,
``extensions``); :data:`Handler`, :data:`Wrapper`, :class:`InputChannel` and
:class:`InputRequired` are their types.
"""

from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ._context import Context
from ._dispatch import Handler, Wrapper
from ._input import InputChannel, InputRequests, InputRequired
from ._primitives import assistant, audio, embedded, image, resource_contents, text, user
from ._server import Reply, Server
from ._signature import Header

if TYPE_CHECKING:
    from ._tasks import InMemoryTaskStore, TaskRecord, Tasks, TaskStore

__all__ = [
    "Context", "Handler", "Header", "InMemoryTaskStore", "InputChannel", "InputRequests", "InputRequired", "Reply",
    "Server", "TaskRecord", "TaskStore", "Tasks", "ToolError", "Wrapper",
    "assistant", "audio", "embedded", "image", "resource_contents", "text", "user",
]

_TASK_NAMES = frozenset({"InMemoryTaskStore", "TaskRecord", "Tasks", "TaskStore"})


def __getattr__(name: str) -> Any:
    # The tasks extension loads on first use: servers without tasks never import it.
    if name in _TASK_NAMES:
        from . import _tasks

        return getattr(_tasks, name)
    raise AttributeError(f"module 'mcpkit.server' has no attribute {name!r}")
