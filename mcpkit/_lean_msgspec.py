"""msgspec's import, without the typing_extensions import it does not need on Python 3.11+.

msgspec's Python helpers (``msgspec._utils``) import ``typing_extensions`` when it is
installed, for three names: ``get_type_hints``, ``Required`` and ``NotRequired``. On Python
3.11 and later all three are the :mod:`typing` module's own: typing_extensions re-exports
``Required`` and ``NotRequired``, and its ``get_type_hints`` with ``include_extras=True`` (the
only way msgspec calls it) returns what :func:`typing.get_type_hints` returns. When the import
fails, msgspec takes the same names from :mod:`typing`, so it behaves the same either way.
The import itself is not free: typing_extensions pulls in inspect, ast, dis and tokenize,
about a third of msgspec's import time, and a server's cold start pays it before its first
answer.

:func:`install` (called by ``import mcpkit``) puts a finder at the front of ``sys.meta_path``
that refuses ``typing_extensions`` to ``msgspec._utils`` alone (the importing frame is checked,
so another module or thread importing typing_extensions meanwhile gets it as usual), and that
takes itself out once msgspec's helpers are loaded. Nothing happens when msgspec or
typing_extensions is already imported. ``MCPKIT_MSGSPEC_TYPING_EXTENSIONS=1`` turns it off.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

_HELPERS = "msgspec._utils"


class _Finder:
    """A ``sys.meta_path`` finder that finds nothing: it refuses ``typing_extensions`` to
    msgspec's helpers, and lets every other import through to the finders after it."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> None:
        helpers = sys.modules.get(_HELPERS)
        if helpers is not None and "NotRequired" in vars(helpers):  # msgspec's helpers are loaded: done
            cls.uninstall()
            return None
        if name == "typing_extensions" and helpers is not None:
            frame: FrameType | None = sys._getframe(1)
            while frame is not None:
                if frame.f_globals.get("__name__") == _HELPERS:
                    raise ModuleNotFoundError(f"{name} is not needed by msgspec on Python 3.11+ (mcpkit)", name=name)
                frame = frame.f_back
        return None

    @classmethod
    def uninstall(cls) -> None:
        try:
            sys.meta_path.remove(cls)
        except ValueError:
            pass


def install() -> None:
    """Engage the finder for msgspec's first import (see the module's docstring)."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules or _Finder in sys.meta_path:
        return
    if os.environ.get("MCPKIT_MSGSPEC_TYPING_EXTENSIONS") == "1":
        return
    sys.meta_path.insert(0, _Finder)
