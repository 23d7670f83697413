"""What a server needs to be operated: its lifespan and its readiness checks.

``Server(lifespan=fn)``: ``fn(server)`` returns an async context manager (an
``@asynccontextmanager`` function, as in Starlette or FastMCP); it is entered once per
process before anything is served and left when serving ends (stdin EOF, SIGTERM, the
last in-memory client closing). What it yields is ``server.lifespan_state`` and
``ctx.lifespan``. An exception on the way in is a :class:`~mcpkit.errors.LifespanError`.

``server.readiness_check(fn)``: ``GET /readyz`` answers 200 only when every check passes.
A check is a function of no arguments, sync or async, that raises (or returns False) when
what it checks is not ready. The server's own backends (a Redis bus, session store, task
store, rate-limit store) are checked too: :meth:`mcpkit.backends.redis.RedisBackend.install`
registers its Redis PING as a check; the same check registered twice runs once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import LifespanError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager


#: ``lifespan(server)`` -> an async context manager whose value is ``ctx.lifespan``.
Lifespan = Callable[[Any], "AbstractAsyncContextManager[Any]"]
#: A readiness check: no arguments; raises, or returns False, when not ready.
ReadinessCheck = Callable[[], Any]

C = TypeVar("C", bound=ReadinessCheck)

#: How long ``GET /readyz`` waits for one check before counting it as failed.
READINESS_TIMEOUT = 2.0


class Running:
    """``async with server.running():`` runs the lifespan (once, however many enter it)."""

    __slots__ = ("server",)

    def __init__(self, server: Operations) -> None:
        self.server = server

    async def __aenter__(self) -> Any:
        ops = self.server
        import asyncio

        if ops._lifespan_lock is None:
            ops._lifespan_lock = asyncio.Lock()
        async with ops._lifespan_lock:
            if ops._lifespan_users == 0 and ops.lifespan is not None:
                cm = ops.lifespan(ops)
                try:
                    state = await cm.__aenter__()
                except Exception as exc:
                    raise LifespanError(f"the lifespan of {ops.name} failed at startup: "
                                        f"{type(exc).__name__}: {exc}") from exc
                ops._lifespan_cm = cm
                ops.lifespan_state = state
            ops._lifespan_users += 1
        return ops.lifespan_state

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        ops = self.server
        ops._lifespan_users -= 1
        if ops._lifespan_users > 0:
            return
        lock = ops._lifespan_lock
        if lock is not None and not lock.locked():
            ops._lifespan_lock = None  # (an asyncio lock belongs to one loop; the next run may be on another)
        cm, ops._lifespan_cm = ops._lifespan_cm, None
        if cm is None:
            return
        try:
            # A normal exit, whatever ended serving (SIGTERM, EOF, a cancellation): the code
            # after ``yield`` is the shutdown and must run.
            await cm.__aexit__(None, None, None)
        finally:
            ops.lifespan_state = None


class Operations:
    """The operating side of :class:`~mcpkit.Server` (mixed in)."""

    #: The server's name (set by :class:`~mcpkit.Server`).
    name: str
    #: ``Server(lifespan=...)``: the factory, or None.
    lifespan: Lifespan | None = None
    #: What the lifespan yielded, while it runs (``ctx.lifespan``); None otherwise.
    lifespan_state: Any = None
    _lifespan_cm: Any = None
    _lifespan_users = 0
    _lifespan_lock: Any = None
    _readiness: dict[str, ReadinessCheck] | None = None

    def running(self) -> Running:
        """An async context manager that runs the lifespan around serving (transports and the
        in-memory client enter it; entering again while it runs only shares it)."""
        return Running(self)

    @property
    def readiness_checks(self) -> Mapping[str, ReadinessCheck]:
        """The readiness checks added with :meth:`readiness_check`, by name (read-only)."""
        return MappingProxyType(self._readiness or {})

    def readiness_check(self, fn: C | None = None, *, name: str | None = None) -> Any:
        """Add a readiness check (``GET /readyz``): ``server.readiness_check(fn)``, or as a
        decorator (``@server.readiness_check()`` / ``@server.readiness_check(name="db")``).

        ``fn()`` (sync or async) raises, or returns False, when not ready; ``name`` (default:
        the function's name) is what a failed ``/readyz`` names. Returns ``fn``."""
        def add(check: C) -> C:
            if not callable(check):
                raise TypeError("a readiness check must be callable (no arguments)")
            # the user's callable: a name it carries (RedisHealth.name), else its function name
            key = name or getattr(check, "name", None) or getattr(check, "__name__", None) or "check"
            checks = self._readiness
            if checks is None:
                checks = self._readiness = {}
            if key in checks and checks[key] is not check:
                raise ValueError(f"a readiness check named {key!r} is already registered")
            checks[key] = check
            return check

        return add if fn is None else add(fn)

    async def readiness(self, timeout: float = READINESS_TIMEOUT) -> dict[str, str]:
        """Run every readiness check at once: ``{}`` when ready, else ``{name: why}`` for those
        that failed (``why`` is the exception's class name, ``False`` or ``timeout``: no detail
        that could leak; the details are logged)."""
        import asyncio
        import inspect
        import logging

        checks: dict[str, ReadinessCheck] = {}
        seen: set[int] = set()
        for key, check in (self._readiness or {}).items():
            if id(check) not in seen:  # (a rate-limit store on the same Redis is PINGed once)
                seen.add(id(check))
                checks[key] = check
        if not checks:
            return {}

        async def one(check: ReadinessCheck) -> str | None:
            try:
                value = check()
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(_awaited(value), timeout)
            except TimeoutError:
                return "timeout"
            except Exception as exc:
                logging.getLogger("mcpkit.server").warning("readiness check failed: %s: %s",
                                                           type(exc).__name__, exc)
                return type(exc).__name__
            return "False" if value is False else None

        names = list(checks)
        results = await asyncio.gather(*(one(checks[n]) for n in names))
        return {n: why for n, why in zip(names, results, strict=True) if why is not None}


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
