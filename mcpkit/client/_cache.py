"""A response cache that honours the server's ``ttlMs`` and ``cacheScope``."""

from __future__ import annotations

import time
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


def cache_key(method: str, params: dict[str, Any] | None) -> bytes:
    """Method plus the parameters that shape the result (never ``_meta``)."""
    body = {k: v for k, v in (params or {}).items() if k != "_meta"}
    return method.encode() + b"\x00" + msgspec.json.encode(body, order="sorted")


class ResponseCache:
    """Fresh results by key. ``private`` entries live in the partition of the auth context
    that fetched them, so a different token never sees them; ``public`` ones are shared."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._entries: dict[tuple[str | None, bytes], tuple[float, dict[str, Any]]] = {}

    def get(self, key: bytes, auth: str) -> dict[str, Any] | None:
        now = time.monotonic()
        for part in (auth, None):
            hit = self._entries.get((part, key))
            if hit is not None:
                if hit[0] > now:
                    return hit[1]
                del self._entries[(part, key)]
        return None

    def put(self, key: bytes, auth: str, method: str, result: dict[str, Any]) -> None:
        if result.get("resultType", "complete") != "complete":
            return  # input_required results are never cached
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            return  # missing or negative means 0: stale at once
        # A missing cacheScope is treated as private: the safe reading for an old server.
        part = None if result.get("cacheScope") == "public" else auth
        if len(self._entries) >= self.max_entries:
            self._evict()
        self._entries[(part, key)] = (time.monotonic() + ttl / 1000.0, result)

    def _evict(self) -> None:
        now = time.monotonic()
        for k in [k for k, (exp, _) in self._entries.items() if exp <= now]:
            del self._entries[k]
        while len(self._entries) >= self.max_entries:
            self._entries.pop(next(iter(self._entries)))

    def invalidate(self, notification: str, params: dict[str, Any] | None = None) -> None:
        """Drop what a change notification makes stale."""
        methods = _LIST_OF.get(notification)
        if methods is not None:
            prefixes = tuple(m.encode() + b"\x00" for m in methods)
            for k in [k for k in self._entries if k[1].startswith(prefixes)]:
                del self._entries[k]
        elif notification == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            target = cache_key("resources/read", {"uri": uri})
            for k in [k for k in self._entries if k[1] == target]:
                del self._entries[k]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
