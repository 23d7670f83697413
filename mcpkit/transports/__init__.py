"""Transports: thin adapters between bytes on a wire and the protocol core.

The public modules are :mod:`mcpkit.transports.http` and :mod:`mcpkit.transports.stdio`.
This package also names what the rest of mcpkit uses of its private modules (the server,
the CLI, the inspector, the Redis backend), so no other package imports them: the seam a
server satisfies (:class:`Dispatcher`, :class:`Envelope`, :class:`AuthRefusal`, the
session store), the load-time hand-over, the stdio entry point and the ASGI plumbing
(``asgi``, a module). Names load lazily: importing this package loads none
of them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    # the seam between server/ and transports/
    "Envelope": "mcpkit.transports._envelope",
    "Dispatcher": "mcpkit.transports._interface",
    "Serving": "mcpkit.transports._envelope",
    "SendRaw": "mcpkit.transports._interface",
    "AuthRefusal": "mcpkit.transports._interface",
    "SessionStore": "mcpkit.transports._http_legacy",
    "SessionEvents": "mcpkit.transports._http_legacy",
    # loading a server file: server.run() at import hands the server over
    "RunAtImport": "mcpkit.transports._loading",
    "loading": "mcpkit.transports._loading",
    # stdio without asyncio until the first request needs it
    "run_stdio_server": "mcpkit.transports._stdio_main",
    "claim_stdout": "mcpkit.transports._stdio_main",
    # the event loop servers run on (uvloop where installed)
    "loop_factory": "mcpkit.transports._loops",
    # HTTP
    "is_wildcard": "mcpkit.transports._resource",
    "asgi": "mcpkit.transports._asgi:",
}

__all__: list[str] = []

if TYPE_CHECKING:
    from . import _asgi as asgi  # noqa: F401 (the lazy "asgi" export)
    from ._envelope import Envelope as Envelope
    from ._envelope import Serving as Serving
    from ._http_legacy import SessionEvents as SessionEvents
    from ._http_legacy import SessionStore as SessionStore
    from ._interface import AuthRefusal as AuthRefusal
    from ._interface import Dispatcher as Dispatcher
    from ._interface import SendRaw as SendRaw
    from ._loading import RunAtImport as RunAtImport
    from ._loading import loading as loading
    from ._loops import loop_factory as loop_factory
    from ._resource import is_wildcard as is_wildcard
    from ._stdio_main import claim_stdout as claim_stdout
    from ._stdio_main import run_stdio_server as run_stdio_server



def hand_over(server: Any) -> None:
    """While a server file is being loaded (:func:`loading`), raise :class:`RunAtImport` for
    ``server``; elsewhere do nothing (see :mod:`._loading`). A process that never loaded that
    module is loading no server file, so a server run directly does not import it."""
    module = sys.modules.get(__name__ + "._loading")
    if module is not None:
        module.hand_over(server)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
