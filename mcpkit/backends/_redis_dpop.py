"""DPoP state shared by every worker of one Redis: the proof replay cache and the nonce secret.

A proof's ``jti`` (with the key thumbprint, hashed) is set with ``SET NX`` and an expiry at
the end of the proof's acceptance window, so the first worker to see a proof wins and every
other worker refuses the same proof. The nonce secret is created once (``SET NX``) and
read by every worker, so a nonce issued by one is accepted by all. Redis unreachable: the
proof is refused (503), never accepted unchecked.
"""

from __future__ import annotations

import hashlib
import secrets

from redis.exceptions import RedisError

from ._redis_node import BackendUnavailable, RedisNode


class RedisDPoPStore:
    """The :class:`~mcpkit.auth.server.DPoPStore` of every worker of one Redis."""

    def __init__(self, node: RedisNode) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis
        self._secret: bytes | None = None

    async def seen(self, key: str, until: float, now: float) -> bool:
        digest = hashlib.sha256(key.encode()).hexdigest()
        ttl_ms = max(1, int((until - now) * 1000))
        try:
            fresh = await self.node.client.set(self.node.keys.dpop_jti(digest), b"1", nx=True, px=ttl_ms)
        except RedisError:
            raise BackendUnavailable("this DPoP proof (its replay check)") from None
        return not fresh

    async def nonce_secret(self) -> bytes:
        if self._secret is None:
            key = self.node.keys.dpop_nonce_secret
            try:
                client = self.node.client
                await client.set(key, secrets.token_hex(32).encode(), nx=True)
                value = await client.get(key)
            except RedisError:
                raise BackendUnavailable("this DPoP proof (its nonce check)") from None
            if not value:
                raise BackendUnavailable("this DPoP proof (its nonce check)")
            self._secret = bytes.fromhex(value.decode() if isinstance(value, bytes) else str(value))
        return self._secret
