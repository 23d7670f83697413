"""A response cache that honours the server's ``ttlMs`` and ``cacheScope``."""

from __future__ import annotations

import time
from collections import Counter
from types import ModuleType
from typing import Any, Literal

import msgspec

CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list", "resources/read"})
CacheMode = Literal["use", "bypass", "refresh"]

_LIST_OF = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

#: (partition, key): the partition is None for public entries, else the credentials'
#: keyed hash (see ``_credentials``).
_Slot = tuple[str | None, bytes]


def credentials() -> ModuleType:
    """The ``_credentials`` module, imported when a private entry or an auth hook first needs it
    (it pulls in hashlib, hmac, secrets and json, which a plain call never uses)."""
    from . import _credentials

    return _credentials


def cache_key(method: str, params: dict[str, Any] | None) -> bytes:
    """Method plus the parameters that shape the result (never ``_meta``)."""
    body = {k: v for k, v in (params or {}).items() if k != "_meta"}
    return method.encode() + b"\x00" + msgspec.json.encode(body, order="sorted")


class ResponseCache:
    """Fresh results by key. ``private`` entries live in the partition of the credentials the
    request that fetched them carried, so other credentials never see them; when those are
    unknown (``partition=None``) a private result is not kept at all. ``public`` ones are shared."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._entries: dict[_Slot, tuple[float, dict[str, Any]]] = {}
        self._private: Counter[bytes] = Counter()  # key -> how many private entries it has

    def has_private(self, key: bytes) -> bool:
        """Whether some partition holds an entry for ``key`` (worth learning the partition)."""
        return self._private[key] > 0

    def get(self, key: bytes, partition: str | None) -> dict[str, Any] | None:
        """The fresh entry for ``key``: the private one of ``partition`` (none when it is
        None: unknown credentials), else the public one."""
        now = time.monotonic()
        for part in (partition, None) if partition is not None else (None,):
            hit = self._entries.get((part, key))
            if hit is not None:
                if hit[0] > now:
                    return hit[1]
                self._drop((part, key))
        return None

    def put(self, key: bytes, partition: str | None, method: str, result: dict[str, Any]) -> None:
        if result.get("resultType", "complete") != "complete":
            return  # input_required results are never cached
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return  # missing or negative means 0: stale at once
        # A missing cacheScope is treated as private: the safe reading for an old server.
        if result.get("cacheScope") == "public":
            part = None
        elif partition is None:
            return  # private, and whose credentials fetched it is unknown: never kept
        else:
            part = partition
        slot = (part, key)
        if slot not in self._entries and len(self._entries) >= self.max_entries:
            self._evict()
        if slot not in self._entries and part is not None:
            self._private[key] += 1
        self._entries[slot] = (time.monotonic() + ttl / 1000.0, result)

    def _drop(self, slot: _Slot) -> None:
        if self._entries.pop(slot, None) is not None and slot[0] is not None:
            self._private[slot[1]] -= 1
            if self._private[slot[1]] <= 0:
                del self._private[slot[1]]

    def _evict(self) -> None:
        now = time.monotonic()
        for k in [k for k, (exp, _) in self._entries.items() if exp <= now]:
            self._drop(k)
        while len(self._entries) >= self.max_entries:
            self._drop(next(iter(self._entries)))

    def invalidate(self, notification: str, params: dict[str, Any] | None = None) -> None:
        """Drop what a change notification makes stale."""
        methods = _LIST_OF.get(notification)
        if methods is not None:
            prefixes = tuple(m.encode() + b"\x00" for m in methods)
            for k in [k for k in self._entries if k[1].startswith(prefixes)]:
                self._drop(k)
        elif notification == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            target = cache_key("resources/read", {"uri": uri})
            for k in [k for k in self._entries if k[1] == target]:
                self._drop(k)

    def clear(self) -> None:
        self._entries.clear()
        self._private.clear()

    def __len__(self) -> int:
        return len(self._entries)
