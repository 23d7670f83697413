"""The lazy-export block of mcpkit's package ``__init__`` modules, written once.

A package lists its public names in a table; each is imported on first use (PEP 562 module
``__getattr__``), so importing the package loads neither its subsystems nor their optional
dependencies. The packages keep ``TYPE_CHECKING`` imports of the same names for type
checkers and IDEs. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str], namespace: dict[str, Any],
                 names: Iterable[str] | None = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair of the package ``package``.

    ``table`` maps a public name to where it lives: ``"module"`` (that module's attribute of
    the same name), ``"module:attr"`` (another attribute of it) or ``"module:"`` (the module
    itself). A value, once imported, is kept in ``namespace`` (the package's ``globals()``), so
    ``__getattr__`` runs once per name. ``__dir__`` lists ``names`` when given, else the
    package's own names and the table's.
    """
    listed = list(names) if names is not None else None

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, sep, attr = target.partition(":")
        module = import_without_gc(module_name)
        value = module if sep and not attr else getattr(module, attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(listed) if listed is not None else sorted(set(namespace) | set(table))

    return __getattr__, __dir__


def import_without_gc(module_name: str) -> Any:
    """``importlib.import_module(module_name)`` with the cyclic garbage collector paused.

    The first use of a public name imports a subsystem (``Server``: msgspec and some forty
    modules) and allocates tens of thousands of long-lived objects (classes, functions, wire
    types), and the collector's young generations walked them again and again while they were
    being made: about a dozen collections, 3 ms of a server's 60 ms cold start on a slow day.
    So the collector is paused for the import, and everything alive is then moved to its
    oldest generation at once (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no
    walk) before it runs again. Nothing is kept from collection: garbage among those objects
    goes at the next full collection, as it would have once it had aged there. A collector the
    process disabled stays disabled, and an inner lazy import (inside another) does nothing
    of this.
    """
    import gc
    import importlib

    if not gc.isenabled():
        return importlib.import_module(module_name)
    gc.disable()
    try:
        return importlib.import_module(module_name)
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()


class LazyLogger:
    """``logging.getLogger(name)``, looked up (and :mod:`logging` imported) on first use: a
    module's ``log = LazyLogger("mcpkit.server")`` costs nothing until something is logged,
    so a server that never logs answers its first request without importing logging.

    Every attribute is the real logger's at the time it is read (levels, handlers and
    ``caplog`` behave as with the logger itself).
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        if before_first_log:
            before_first_log.pop()()
        import logging

        return getattr(logging.getLogger(self.name), attr)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name!r}>"


#: At most one pending step to run once before mcpkit's first log record: the stdio server
#: sets up the root logger there when logging was not loaded by the time it started.
before_first_log: list[Callable[[], None]] = []
