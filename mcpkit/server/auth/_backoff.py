"""How often a verifier asks an issuer again after a failed fetch (metadata, JWKS).

Without it, while an issuer is down every forged token would trigger fresh fetches: a
way to make the resource server hammer its authorization server. After a failure the next
attempt waits ``base`` seconds, doubling with every failure in a row up to ``cap``; a
success resets it, so a recovered issuer is picked up at the next attempt after the wait.
"""

from __future__ import annotations

import time


class Backoff:
    """Exponential backoff for one issuer's fetches (per verifier: one issuer each)."""

    __slots__ = ("base", "cap", "failures", "retry_at")

    def __init__(self, base: float = 1.0, cap: float = 60.0) -> None:
        if base < 0 or cap < base:
            raise ValueError("the backoff needs 0 <= base <= cap")
        self.base = base
        self.cap = cap
        self.failures = 0
        self.retry_at = float("-inf")

    def ready(self, now: float | None = None) -> bool:
        """Whether a fetch may be tried now."""
        return (time.monotonic() if now is None else now) >= self.retry_at

    def wait(self, now: float | None = None) -> float:
        """Seconds until the next attempt may be made (0 when it may be now)."""
        return max(0.0, self.retry_at - (time.monotonic() if now is None else now))

    def failed(self, now: float | None = None) -> float:
        """Record a failed fetch; returns the wait before the next attempt."""
        self.failures += 1
        delay = min(self.cap, self.base * 2.0 ** min(self.failures - 1, 62))
        self.retry_at = (time.monotonic() if now is None else now) + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.retry_at = float("-inf")
