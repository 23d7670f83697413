"""Client recovery: restart a stdio server that died, retry HTTP connection failures.

Only requests that are safe to repeat are sent again: ``server/discover``, ``initialize``,
``ping``, the lists, ``resources/read``, ``prompts/get``, ``completion/complete``, and
``tools/call`` of a tool the server annotated ``idempotentHint`` or ``readOnlyHint`` (known
from the last ``list_tools()``). Another request that was in flight when the server died
raises :class:`RequestNotRetried` — the server may have acted on it — while the server is
still restarted, so the next call works.

``Client(restart=...)``: ``None`` (the default) restarts nothing over stdio and retries
HTTP connection failures; ``True`` turns both on, ``False`` both off; a :class:`Recovery`
sets the budget. Every stdio restart is logged at WARNING, every HTTP retry at INFO
(logger ``mcpkit.client``).

The :class:`Recoverer` holds the policy and the state; it never touches the Client. The
Client's recovery layer retries HTTP through :meth:`Recoverer.retry` and turns a stdio death
into a :class:`~._signals.ServerExited` signal; the top of the send path then restarts the
server inside :meth:`Recoverer.restarting` (one restart per death, within the budget).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple, TypeVar

from ..errors import RequestNotRetried as RequestNotRetried
from ..errors import ResponseTooLarge, TransportClosed, TransportError
from ._transport import NoAnswer

T = TypeVar("T")

log = logging.getLogger("mcpkit.client")

SAFE_METHODS = frozenset({
    "server/discover", "initialize", "ping", "tools/list", "resources/list", "resources/templates/list",
    "prompts/list", "resources/read", "prompts/get", "completion/complete",
})


class Recovery(NamedTuple):
    """How a :class:`~mcpkit.Client` recovers from a dead server or connection.

    stdio_restart: restart a stdio server that exited.
    http_retry: retry safe requests whose HTTP connection failed.
    attempts: restarts (stdio) or retries (HTTP) for one request before its error is raised;
        also the stdio restarts allowed per ``window`` seconds (a server that keeps dying stays dead).
    backoff, max_backoff: the first wait before a retry/restart, doubled each time up to ``max_backoff``.
    """

    stdio_restart: bool = False
    http_retry: bool = True
    attempts: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0
    window: float = 60.0

    @classmethod
    def of(cls, restart: bool | Recovery | None) -> Recovery:
        """The Recovery a ``restart=`` argument means: a Recovery as it is, None the defaults, a
        bool turning stdio restarts and HTTP retries on or off.
        """
        if isinstance(restart, Recovery):
            return restart
        if restart is None:
            return cls()
        return cls(stdio_restart=restart, http_retry=restart)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): exponential backoff, capped."""
        return float(min(self.backoff * 2.0 ** attempt, self.max_backoff))


class Recoverer:
    """One client's recovery state: which tools are safe, the restart generation and budget."""

    def __init__(self, policy: Recovery) -> None:
        self.policy = policy
        self.safe_tools: set[str] = set()
        #: Bumped by each stdio restart (a request knows which server it went to).
        self.generation = 0
        self._restarts: list[float] = []
        self._lock = asyncio.Lock()

    def note_tools(self, tools: Iterable[Any]) -> None:
        """Remember which tools are safe to call twice (from a ``tools/list``)."""
        safe = set()
        for tool in tools:
            ann = getattr(tool, "annotations", None)
            get = ann.get if isinstance(ann, Mapping) else (lambda k, a=ann: getattr(a, k, None))
            if get("idempotentHint") is True or get("readOnlyHint") is True:
                safe.add(tool.name)
        self.safe_tools = safe

    def is_safe(self, method: str, params: Mapping[str, Any] | None) -> bool:
        if method in SAFE_METHODS:
            return True
        if method != "tools/call" or not params:
            return False
        name = params.get("name")
        return isinstance(name, str) and name in self.safe_tools

    async def retry(self, method: str, params: Mapping[str, Any] | None, send: Callable[[], Awaitable[T]],
                    failure: TransportError) -> T:
        """After the HTTP connection failed with ``failure``: ``send()`` again with backoff while
        the request is safe to repeat and the budget lasts, else ``failure`` is raised. A timeout
        or an answer too large is never retried (the server may still be working on it; the
        answer would be too large again): :meth:`retried` says which failures may be."""
        attempt = 0
        while True:
            if attempt >= self.policy.attempts or not self.is_safe(method, params):
                raise failure
            wait = self.policy.delay(attempt)
            log.info("%s failed (%s); retrying in %.2f s (%d/%d)", method, failure, wait, attempt + 1,
                     self.policy.attempts)
            await asyncio.sleep(wait)
            attempt += 1
            try:
                return await send()
            except TransportError as exc:
                if not self.retried(exc):
                    raise
                failure = exc

    @staticmethod
    def retried(exc: TransportError) -> bool:
        """Whether a failure of this kind may be retried (see :meth:`retry`)."""
        return not isinstance(exc, (NoAnswer, ResponseTooLarge))

    @asynccontextmanager
    async def restarting(self, generation: int, cause: BaseException) -> AsyncIterator[bool]:
        """Serialise the restart of the stdio server that died under ``generation``: yields True
        to the one caller that restarts it (in the ``with`` block), False when another request
        already did. Raises TransportClosed when the server keeps dying."""
        async with self._lock:
            if self.generation != generation:
                yield False  # another request already restarted it
                return
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < self.policy.window]
            if len(self._restarts) >= self.policy.attempts:
                log.error("the stdio server died again (%s); %d restarts within %g s: giving up", cause,
                          len(self._restarts), self.policy.window)
                raise TransportClosed(f"the server keeps exiting ({cause}); not restarted again") from cause
            await asyncio.sleep(self.policy.delay(len(self._restarts)))
            self._restarts.append(time.monotonic())
            log.warning("the stdio server exited (%s); restarting it (%d/%d)", cause, len(self._restarts),
                        self.policy.attempts)
            yield True
            self.generation += 1
