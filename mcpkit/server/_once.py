"""Single-use ``requestState`` (``Server(state_single_use=True)``): each sealed state is
accepted once, so a retry cannot run a handler's side effects twice.

A state is verified first (key, binding, expiry), then *spent*: its id is recorded until the
state would expire anyway, and a second presentation is refused. The record lives in
:attr:`Server.used_states`: :class:`MemoryUsedStates` (one process) by default,
``mcpkit.backends.redis``' store once :meth:`RedisBackend.install` ran (every worker).
"""

from __future__ import annotations

import heapq
import time
from typing import Protocol

from ..protocol import errors

#: The answer to a state presented a second time.
SPENT_STATE_MESSAGE = "requestState was already used: this server accepts each requestState once; start the request again"


def spent_state_error() -> errors.MCPError:
    return errors.invalid_params(SPENT_STATE_MESSAGE)


def state_id(token: str) -> str:
    """The id a spent state is recorded under (the token is canonical, so one id per state)."""
    import hashlib

    return hashlib.sha256(token.encode("ascii")).hexdigest()[:32]


class UsedStates(Protocol):
    """Where spent ``requestState`` ids are recorded."""

    async def spend(self, state_id: str, expires: float) -> bool:
        """Record ``state_id`` until ``expires`` (epoch seconds); False if it was already spent."""
        ...


class MemoryUsedStates:
    """Spent states of this process, each kept until it would have expired.

    At most ``max_entries`` unexpired states are kept; beyond that a state cannot be
    recorded and the request is refused (fail closed, -32603) until older ones expire.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._spent: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []

    async def spend(self, state_id: str, expires: float) -> bool:
        now = time.time()
        heap, spent = self._expiry, self._spent
        while heap and heap[0][0] < now:
            _, old = heapq.heappop(heap)
            if spent.get(old, now) < now:
                del spent[old]
        if state_id in spent:
            return False
        if len(spent) >= self.max_entries:
            raise errors.MCPError(errors.INTERNAL_ERROR, "Too many requestStates in use to record another; retry shortly")
        spent[state_id] = expires
        heapq.heappush(heap, (expires, state_id))
        return True
