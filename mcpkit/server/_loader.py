"""Loading a server from ``FILE.py[:attr]`` or ``module[:attr]`` (``mcpkit serve``, its workers).

:func:`load_server` returns the :class:`Server`, or raises :class:`~mcpkit.errors.ServerLoadError`
whose message is one line saying why not (no such file, a syntax error, the module failed
while it ran, no Server or several in it). ``attr`` may name a Server or a function returning
one; without it the module must hold exactly one Server at module level.

A file that calls ``server.run()`` when it is imported (a common pattern) does not start a
server here: the import runs inside :func:`mcpkit.transports._loading.loading`, in which that
call hands its server over and stops the import. :func:`load_spec` says whether that happened, so
the caller can say so; nothing is patched, and other threads are not affected.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, NamedTuple

from ..errors import ServerLoadError
from ..transports import RunAtImport, loading
from ._server import Server

#: The name a server file is imported under (``sys.modules``).
MODULE_NAME = "_mcpkit_served"


class Loaded(NamedTuple):
    server: Server
    #: Whether the module called ``server.run()`` while it was imported (that call was stopped).
    ran_at_import: bool


def load_server(spec: str) -> Server:
    """The Server in ``FILE.py[:attr]`` or ``module[:attr]`` (raises :class:`ServerLoadError`)."""
    return load_spec(spec).server


def load_spec(spec: str) -> Loaded:
    """The Server in ``spec`` and whether its module called ``server.run()`` at import
    (raises :class:`ServerLoadError`, with a one-line message)."""
    try:
        return _load(spec)
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else spec
        raise ServerLoadError(f"{where}: {exc.msg}") from exc
    except (ImportError, OSError, AttributeError, LookupError, TypeError) as exc:
        raise ServerLoadError(str(exc)) from exc
    except Exception as exc:  # the module itself failed while it ran
        raise ServerLoadError(f"{spec}{_user_line(exc)}: {type(exc).__name__}: {exc}") from exc


def spec_file(spec: str) -> tuple[str | None, str | None]:
    """(path, attr) when ``spec`` names a file (``FILE.py`` or ``FILE.py:attr``), else (None, None)."""
    m = re.match(r"^(.*\.py):([A-Za-z_]\w*)$", spec)
    if m:
        return m.group(1), m.group(2)
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        return spec, None
    return None, None


def _user_line(exc: BaseException) -> str:
    """`` (line N)`` of the innermost frame outside mcpkit, when there is one."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "mcpkit" not in f.filename.split(os.sep)[-3:-1]]
    return f" (line {frames[-1].lineno})" if frames and frames[-1].lineno else ""


def _load(spec: str) -> Loaded:
    try:
        with loading():
            module, attr = _import(spec)
    except RunAtImport as ran:
        path, attr = spec_file(spec)
        if attr is None and path is None:
            attr = spec.partition(":")[2] or None
        module = sys.modules.get(MODULE_NAME if path is not None else spec.partition(":")[0])
        found = getattr(module, attr, None) if (attr and module is not None) else None
        server = found if isinstance(found, Server) else ran.server
        if not isinstance(server, Server):
            raise TypeError(f"{spec}: server.run() was called on something that is not an mcpkit Server") from None
        return Loaded(server, True)
    return Loaded(_pick(spec, module, attr), False)


def _import(spec: str) -> tuple[Any, str | None]:
    import importlib
    import importlib.util

    path, attr = spec_file(spec)
    if path is not None:
        if not os.path.exists(path):
            raise OSError(f"no such file: {path}")
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        modspec = importlib.util.spec_from_file_location(MODULE_NAME, path)
        if modspec is None or modspec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(modspec)
        sys.modules[MODULE_NAME] = module
        modspec.loader.exec_module(module)
        return module, attr
    modname, _, attr_text = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # module:attr from the current directory, as `python -m` would
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name and modname.startswith(exc.name):
            raise ImportError(f"no module named {modname!r} here (looked in the current directory "
                              "and on sys.path); for a file, give FILE.py") from None
        raise
    return module, attr_text or None


def _pick(spec: str, module: Any, attr: str | None) -> Server:
    if attr:
        if not hasattr(module, attr):
            raise AttributeError(f"{spec}: the module has no attribute {attr!r}")
        obj = getattr(module, attr)
        if callable(obj) and not isinstance(obj, Server):
            obj = obj()  # a factory
        if not isinstance(obj, Server):
            raise TypeError(f"{spec} is not an mcpkit Server")
        return obj
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    if len(found) != 1:
        raise LookupError(f"{spec}: expected exactly one mcpkit Server at module level, found {len(found)}; "
                          "name it as FILE.py:attr or module:attr")
    return found[0]
