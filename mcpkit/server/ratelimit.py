"""Rate limits (token buckets per caller and method or tool): see :mod:`._ratelimit`."""

from ._ratelimit import (
    RATE_LIMITED,
    BucketStore,
    MemoryBuckets,
    RateLimited,
    RateLimits,
    Rule,
    default_key,
    parse_rule,
    peer_address,
    peer_aware,
)

__all__ = ["RATE_LIMITED", "BucketStore", "MemoryBuckets", "RateLimited", "RateLimits", "Rule", "default_key",
           "parse_rule", "peer_address", "peer_aware"]
