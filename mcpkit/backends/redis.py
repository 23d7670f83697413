"""Redis backends: one server on many workers and machines, behind any load balancer.

::

    from mcpkit.backends.redis import RedisBackend

    redis = RedisBackend("redis://127.0.0.1:6379/0")
    server = Server("notes", bus=redis.bus, session_store=redis.sessions)
    server.use(Tasks(store=redis.task_store))       # mcpkit.extensions.tasks
    # or, for a server defined elsewhere (before it serves):  redis.install(server)

- ``bus``: ``subscriptions/listen`` fan-out (and legacy session pushes) across workers,
  over Redis pub/sub.
- ``task_store``: task records, plus the channel that carries ``tasks/update`` answers and
  ``tasks/cancel`` to the worker running the handler.
- ``sessions``: legacy (2025-11-25) ``Mcp-Session-Id`` sessions, usable from any worker.
- ``used_states``: spent ``requestState`` ids of a ``Server(state_single_use=True)``, so a
  state is accepted once across every worker.
- :func:`shared_state_keys`: one MRTR key ring for every worker, kept in Redis, when no
  keys are configured (``MCPKIT_STATE_KEYS`` keeps them out of Redis instead).
- ``rate_buckets``: token buckets of :class:`mcpkit.server.ratelimit.RateLimits`, so a
  caller's budget is one across every worker (one atomic script per rule and request).
- ``dpop``: the DPoP proof replay cache and nonce secret (``install`` gives them to the
  server's ``ResourceServerAuth``), so a proof used at one worker is refused at every other
  and a nonce issued by one is accepted by all.

``url`` is ``redis://``/``rediss://``/``unix://``, or a Sentinel URL
(``redis+sentinel://host:26379[,host:26379...]/SERVICE[/DB]``): the connections then
follow the primary the sentinels elect, and survive a failover (listen streams open at that
moment end cleanly and clients listen again; new work is refused for the seconds the
election takes, then continues on the promoted replica).

Every worker of a process gets its own :class:`RedisBackend` (one per process: it holds a
pub/sub connection and a heartbeat). Needs ``pip install 'mcpkit[redis]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._redis_bus import RedisBus
from ._redis_dpop import RedisDPoPStore
from ._redis_keys import Keys
from ._redis_node import BackendUnavailable, RedisNode
from ._redis_ratelimit import RedisBuckets
from ._redis_sessions import RedisSessionStore
from ._redis_states import RedisUsedStates
from ._redis_tasks import RedisTaskStore
from ._redis_url import sync_client

if TYPE_CHECKING:
    from ..server import Server

__all__ = ["BackendUnavailable", "RedisBackend", "RedisBuckets", "RedisBus", "RedisDPoPStore", "RedisSessionStore",
           "RedisTaskStore", "RedisUsedStates", "shared_state_keys"]


class RedisBackend:
    """The Redis-backed parts of one worker process, sharing one connection set."""

    def __init__(self, url: str, *, prefix: str = "mcpkit", worker_id: str | None = None,
                 heartbeat: float = 1.0, alive_ttl: float = 5.0) -> None:
        self.node = RedisNode(url, prefix=prefix, worker_id=worker_id, heartbeat=heartbeat, alive_ttl=alive_ttl)
        self.bus = RedisBus(self.node)
        self.task_store = RedisTaskStore(self.node)
        self.sessions = RedisSessionStore(self.node)
        self.dpop = RedisDPoPStore(self.node)
        self.used_states = RedisUsedStates(self.node)
        #: Token buckets for :class:`mcpkit.server.ratelimit.RateLimits` shared by every worker.
        self.rate_buckets = RedisBuckets(self.node)

    @property
    def worker_id(self) -> str:
        return self.node.worker_id

    def install(self, server: Server) -> None:
        """Back an already-built server with Redis (call before it serves)."""
        from ..extensions.tasks import Tasks

        server.use_bus(self.bus)
        tasks = server.get_extension(Tasks)
        if tasks is not None:
            tasks.use_store(self.task_store)
        server.session_store = self.sessions
        server.used_states = self.used_states
        health = self.node.health  # GET /readyz: PING this Redis (every part shares the node)
        taken = server.readiness_checks
        if health not in taken.values():
            name, n = "redis", 1
            while name in taken:
                n += 1
                name = f"redis-{n}"
            server.readiness_check(health, name=name)
        self.install_auth(getattr(server, "auth", None))

    def install_auth(self, auth: Any) -> None:
        """Share the DPoP replay cache and nonce secret of ``auth`` (a ``ResourceServerAuth``,
        or its ``DPoPChecker``) through Redis. :meth:`install` does it for ``server.auth``;
        call it for an auth given to ``http_app(auth=...)`` / ``run_http_server`` instead."""
        checker = getattr(auth, "dpop_checker", auth)
        share = getattr(checker, "share", None)
        if callable(share):
            share(self.dpop)

    async def start(self) -> None:
        """Connect now (optional: every part connects on first use)."""
        await self.node.ensure("startup", timeout=5.0)

    async def aclose(self) -> None:
        await self.node.aclose()


def shared_state_keys(url: str, *, prefix: str = "mcpkit", timeout: float = 5.0) -> list[str]:
    """The MRTR key ring every worker shares: read from Redis, created there on first use.

    Anyone who can read this Redis can mint ``requestState``; configure ``state_keys`` /
    ``MCPKIT_STATE_KEYS`` instead to keep the keys out of it.
    """
    import base64
    import secrets

    key = Keys(prefix).state_keys
    client: Any = sync_client(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.set(key, base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(), nx=True)
        value = client.get(key)
    finally:
        client.close()
    return [k for k in value.decode().split(",") if k]
