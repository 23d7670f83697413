"""Server side: declare tools, resources and prompts; answer every request statelessly.

Extensions build on :meth:`Server.add_method`, :meth:`Server.wrap_method`,
:meth:`Server.add_middleware` and the :class:`Context` (``input_channel``, ``emitter``,
``extensions``); :data:`Handler`, :data:`Wrapper`, :class:`InputChannel` and
:class:`InputRequired` are their types.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports as _lazy_exports
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

# The tasks extension loads on first use: servers without tasks never import it.
_EXPORTS = dict.fromkeys(("InMemoryTaskStore", "TaskRecord", "Tasks", "TaskStore"), "mcpkit.server._tasks")

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
