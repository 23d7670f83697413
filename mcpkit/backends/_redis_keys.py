"""Redis key and channel names, in one place (all under one prefix, default ``mcpkit``)."""

from __future__ import annotations


class Keys:
    __slots__ = ("prefix",)

    def __init__(self, prefix: str = "mcpkit") -> None:
        self.prefix = prefix

    # ---- pub/sub channels
    @property
    def changes(self) -> str:
        """Change notifications (listen fan-out), one message per change."""
        return f"{self.prefix}:changes"

    @property
    def sessions(self) -> str:
        """Legacy session state changes and ends, to every worker."""
        return f"{self.prefix}:sessions"

    def inbox(self, worker: str) -> str:
        """One worker's own channel: task answers and cancels, session stream pushes, replies."""
        return f"{self.prefix}:inbox:{worker}"

    # ---- keys
    def alive(self, worker: str) -> str:
        """Present (with a short TTL, refreshed) while ``worker`` runs."""
        return f"{self.prefix}:alive:{worker}"

    def task(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def session(self, sid: str) -> str:
        return f"{self.prefix}:session:{sid}"

    def session_subs(self, sid: str) -> str:
        """The set of URIs the session subscribed to."""
        return f"{self.prefix}:session:{sid}:subs"

    def used_state(self, state_id: str) -> str:
        """Present while a spent single-use requestState could still be presented."""
        return f"{self.prefix}:used-state:{state_id}"

    @property
    def state_keys(self) -> str:
        """The shared MRTR key ring, when no keys are configured."""
        return f"{self.prefix}:state-keys"

    def dpop_jti(self, digest: str) -> str:
        """A DPoP proof seen (its key thumbprint and ``jti``, hashed), until it is too old to use."""
        return f"{self.prefix}:dpop-jti:{digest}"

    @property
    def dpop_nonce_secret(self) -> str:
        """The DPoP nonce HMAC secret every worker shares."""
        return f"{self.prefix}:dpop-nonce-secret"
