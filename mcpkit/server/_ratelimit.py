"""Rate limits: token buckets per caller, per method or tool, installed as middleware.

::

    from mcpkit.server.ratelimit import RateLimits

    RateLimits(["100/s", "tools/call:10/s", "tools/call:search:2/s"]).install(server)
    # shared by every worker:  RateLimits([...], store=RedisBackend(url).rate_buckets)

A rule is ``[METHOD[:NAME]:]N/PERIOD``: ``N`` requests per ``PERIOD`` (``s``, ``m``, ``h``,
``d``, or a count of them: ``10s``, ``5m``), with bursts of up to ``N``. Without a method it
counts every request; ``tools/call:NAME`` / ``prompts/get:NAME`` count one tool or prompt.
Each caller has its own buckets: the authenticated principal, else its peer address
(``ctx.peer``: over HTTP the socket's peer, or the client a trusted proxy names when the app
was given ``trusted_proxies=``; forwarded headers are never trusted by default), else one
shared ``anonymous`` bucket (stdio, in memory). A request over a limit is refused with :class:`RateLimited`, a
JSON-RPC error (``-32029``) whose ``data.retryAfter`` says how many seconds to wait.

The buckets live in this process (:class:`MemoryBuckets`) or in Redis
(``mcpkit.backends.redis.RedisBuckets``: one atomic script, one round trip per rule). When
Redis cannot be reached the request is refused (fail closed).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..errors import RateLimited as RateLimited  # raised here; its home is mcpkit.errors
from ..protocol.errors import RATE_LIMITED as _RATE_LIMITED
from ..protocol.types import request_target

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Handler
    from ._server import Server

#: The JSON-RPC error code of a refusal (implementation-defined server error range).
RATE_LIMITED = _RATE_LIMITED

_PERIODS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$")

#: A peer address set by a custom transport (``ctx.peer`` is preferred; HTTP fills that itself).
peer_address: ContextVar[str | None] = ContextVar("mcpkit_peer_address", default=None)


class Rule(NamedTuple):
    """``capacity`` requests per ``period`` seconds, for ``method`` (None: every one) and ``name``."""

    text: str
    method: str | None
    name: str | None
    capacity: float
    period: float

    @property
    def per_second(self) -> float:
        return self.capacity / self.period


def parse_rule(text: str) -> Rule:
    """``[METHOD[:NAME]:]N/PERIOD`` -> :class:`Rule` (ValueError saying what is wrong)."""
    scope, colon, rate = text.rpartition(":")
    m = _RATE.match(rate)
    if m is None:
        raise ValueError(f"rate limit {text!r}: expected [METHOD[:NAME]:]N/PERIOD, e.g. 100/s or tools/call:10/m")
    count, multiple, unit = float(m.group(1)), m.group(2), m.group(3)[0]
    period = _PERIODS[unit] * (int(multiple) if multiple else 1)
    if count <= 0 or period <= 0:
        raise ValueError(f"rate limit {text!r}: the count and the period must be positive")
    method, _, name = scope.partition(":")
    if colon and not method:
        raise ValueError(f"rate limit {text!r}: empty method name")
    if name and method not in ("tools/call", "prompts/get"):
        raise ValueError(f"rate limit {text!r}: a name is only for tools/call:NAME or prompts/get:NAME")
    return Rule(text.strip(), method or None, name or None, count, period)


class BucketStore(Protocol):
    async def take(self, key: str, capacity: float, per_second: float) -> float:
        """Take one token from bucket ``key``: 0.0 when there was one, else the seconds until there is."""
        ...


class MemoryBuckets:
    """Token buckets in this process (each worker counts on its own)."""

    def __init__(self, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}
        self.max_keys = max_keys
        self._clock = clock

    async def take(self, key: str, capacity: float, per_second: float) -> float:
        return self.take_now(key, capacity, per_second)

    def take_now(self, key: str, capacity: float, per_second: float) -> float:
        now = self._clock()
        tokens, last = self._buckets.get(key, (capacity, now))
        tokens = min(capacity, tokens + (now - last) * per_second)
        if tokens >= 1.0:
            self._store(key, tokens - 1.0, now)
            return 0.0
        self._store(key, tokens, now)
        return (1.0 - tokens) / per_second

    def _store(self, key: str, tokens: float, now: float) -> None:
        buckets = self._buckets
        if key not in buckets and len(buckets) >= self.max_keys:
            del buckets[next(iter(buckets))]  # the oldest caller's bucket goes (it refills to full anyway)
        buckets[key] = (tokens, now)


def default_key(ctx: Context) -> str:
    """The caller: its principal, else its peer address (``ctx.peer``), else ``anonymous``."""
    if ctx.principal:
        return f"p:{ctx.principal}"
    peer = ctx.peer or peer_address.get()
    return f"a:{peer}" if peer else "anonymous"


class RateLimits:
    """The middleware: ``RateLimits(rules, store=..., key=...).install(server)``."""

    def __init__(self, rules: Iterable[str | Rule], *, store: BucketStore | None = None,
                 key: Callable[[Context], str] = default_key, prefix: str = "rl") -> None:
        self.rules = [r if isinstance(r, Rule) else parse_rule(r) for r in rules]
        if not self.rules:
            raise ValueError("RateLimits needs at least one rule")
        self.store: BucketStore = store if store is not None else MemoryBuckets()
        self.key = key
        self.prefix = prefix
        self._every = [(i, r) for i, r in enumerate(self.rules) if r.method is None]
        self._by_method: dict[str, list[tuple[int, Rule]]] = {}
        for i, r in enumerate(self.rules):
            if r.method is not None:
                self._by_method.setdefault(r.method, []).append((i, r))

    def install(self, server: Server) -> RateLimits:
        """Limit ``server``'s requests. A Redis store's PING is one of the server's readiness
        checks once :meth:`mcpkit.backends.redis.RedisBackend.install` ran; a store built on its
        own is added with ``server.readiness_check(store.health)``."""
        server.add_middleware(self)
        return self

    async def __call__(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        rules = self._by_method.get(ctx.method)
        if rules or self._every:
            who = self.key(ctx)
            name = request_target(params)[0]
            for i, rule in (*(rules or ()), *self._every):
                if rule.name is not None and rule.name != name:
                    continue
                wait = await self.store.take(f"{self.prefix}:{i}:{rule.text}:{who}", rule.capacity, rule.per_second)
                if wait > 0:
                    raise RateLimited(wait, rule.text)
        return await call_next(ctx, params)


def peer_aware(app: Any) -> Any:
    """Deprecated: the HTTP transport now gives every request its peer address (``ctx.peer``),
    which :func:`default_key` uses. Returns ``app`` unchanged."""
    import warnings

    warnings.warn("peer_aware() is no longer needed: HTTP requests carry their peer address (ctx.peer)",
                  DeprecationWarning, stacklevel=2)
    return app
