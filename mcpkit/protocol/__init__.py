"""The sans-IO protocol core: wire types, JSON-RPC codec, ``_meta`` and version rules,
errors, header mirroring, and pure decision functions. No sockets, no event loop."""

from __future__ import annotations

import re
from typing import Any, AnyStr


class _LazyPattern:
    """Stands for a module's compiled regular expression until first used: then compiles
    it and puts the compiled pattern in its place in the module (no cost after that)."""

    __slots__ = ("_namespace", "_name", "_pattern", "_flags", "_compiled")

    def __init__(self, namespace: dict[str, Any], name: str, pattern: str | bytes, flags: int) -> None:
        self._namespace, self._name, self._pattern, self._flags = namespace, name, pattern, flags
        self._compiled: re.Pattern[Any] | None = None

    def __getattr__(self, attr: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._pattern, self._flags)
            if self._namespace.get(self._name) is self:
                self._namespace[self._name] = compiled
        return getattr(compiled, attr)


def lazy_re(namespace: dict[str, Any], name: str, pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, compiled when first used rather than at import (a cold
    start compiles only the expressions its first requests use): assign it to ``name`` in
    the module whose ``globals()`` is ``namespace``."""
    return _LazyPattern(namespace, name, pattern, flags)  # type: ignore[return-value]
