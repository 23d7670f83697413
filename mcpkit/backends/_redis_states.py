"""Spent single-use ``requestState`` ids in Redis (``Server(state_single_use=True)`` on many
workers): one ``SET NX`` per spend, expiring when the state would have expired anyway."""

from __future__ import annotations

import math
import time

from redis.exceptions import RedisError

from ._redis_node import BackendUnavailable, RedisNode


class RedisUsedStates:
    """The :class:`~mcpkit.server._once.UsedStates` of every worker of one Redis."""

    def __init__(self, node: RedisNode) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis

    async def spend(self, state_id: str, expires: float) -> bool:
        await self.node.ensure("this requestState")
        ttl_ms = max(1000, math.ceil((expires - time.time()) * 1000) + 1000)
        try:
            done = await self.node.client.set(self.node.keys.used_state(state_id), b"1", nx=True, px=ttl_ms)
        except RedisError:
            raise BackendUnavailable("this requestState") from None
        return bool(done)
