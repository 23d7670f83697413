"""Server side: declare tools, resources and prompts; answer every request statelessly.

Extensions (:mod:`mcpkit.extensions`) are installed with :meth:`Server.use` and build on
:meth:`Server.add_method`, :meth:`Server.wrap_method`, :meth:`Server.add_middleware`, the
registered :class:`ToolDef` objects (``server.tools``: ``options(ext_id)``, ``set_meta``) and
the :class:`Context` (``input_channel``, ``emitter``, ``progress_sink``, ``extensions``);
:data:`Handler`, :data:`Wrapper`, :class:`InputChannel`, :class:`InputRequired`,
:func:`parse_answer` and :func:`owner_key` are their types and tools.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports as _lazy_exports
from ..errors import ToolError
from ._binding import owner_key
from ._bus import Bus, Change, InMemoryBus, Subscription
from ._context import Context
from ._dispatch import Handler, Wrapper
from ._input import InputChannel, InputRequests, InputRequired, parse_answer
from ._primitives import ToolDef, assistant, audio, embedded, image, resource_contents, text, user
from ._server import Reply, Server
from ._signature import Header
from ._state import KeyRing

if TYPE_CHECKING:
    from ..extensions.tasks import InMemoryTaskStore, TaskRecord, Tasks, TaskStore
    from ._keys import parse_state_keys as parse_state_keys
    from ._loader import load_server as load_server
    from ._loader import load_spec as load_spec
    from ._loader import spec_file as spec_file

__all__ = [
    "Bus", "Change", "Context", "Handler", "Header", "InMemoryBus", "InMemoryTaskStore", "InputChannel",
    "InputRequests", "InputRequired", "KeyRing", "Reply", "Server", "Subscription", "TaskRecord", "TaskStore",
    "Tasks", "ToolDef", "ToolError", "Wrapper", "assistant", "audio", "embedded", "image", "owner_key",
    "parse_answer", "resource_contents", "text", "user",
]

# The tasks extension loads on first use: servers without tasks never import it. (Its home
# is mcpkit.extensions.tasks; these names stay importable from here.)
_EXPORTS = dict.fromkeys(("InMemoryTaskStore", "TaskRecord", "Tasks", "TaskStore"), "mcpkit.extensions.tasks")
# For mcpkit's own commands (``mcpkit serve``, its workers), not in ``__all__``: loading a
# server from ``FILE.py[:attr]`` or ``module[:attr]``, and the ``MCPKIT_STATE_KEYS`` list.
_EXPORTS.update({
    "load_server": "mcpkit.server._loader",
    "load_spec": "mcpkit.server._loader",
    "spec_file": "mcpkit.server._loader",
    "parse_state_keys": "mcpkit.server._keys",
})

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
