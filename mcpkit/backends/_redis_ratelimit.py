"""Token buckets in Redis, shared by every worker: one atomic Lua script, one round trip.

The script refills the bucket from the time elapsed (Redis's own clock, so workers' clocks
do not matter), takes a token when there is one, and keeps the bucket only as long as it
takes to refill (then a missing bucket is a full one).
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError

from ..errors import BackendUnavailable
from ._redis_node import RedisNode

TAKE = """
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / 1000.0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000.0 + tonumber(t[2]) / 1000.0
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or cap
local ts = tonumber(b[2]) or now
tokens = math.min(cap, tokens + math.max(0, now - ts) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(cap / rate) + 1000)
return tostring(wait / 1000.0)
"""


class RedisBuckets:
    """A :class:`mcpkit.server.ratelimit.BucketStore` in Redis (refuses with
    :class:`~mcpkit.errors.BackendUnavailable` when Redis cannot be reached: fail closed)."""

    def __init__(self, node: RedisNode) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis
        self._script: Any = None

    async def take(self, key: str, capacity: float, per_second: float) -> float:
        if self._script is None:
            self._script = self.node.client.register_script(TAKE)
        try:
            wait = await self._script(keys=[self.node.keys.prefix + ":" + key], args=[capacity, per_second])
        except RedisError:
            raise BackendUnavailable("a rate-limited request") from None
        return float(wait)
