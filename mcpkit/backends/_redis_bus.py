"""Listen fan-out across workers: Redis pub/sub in, the in-process bus out.

``publish`` sends each change to one Redis channel (in order, pipelined when several are
waiting); every worker's node receives it once and hands it to its local
:class:`~mcpkit.server.InMemoryBus`, which fans it out to the listen streams and legacy
sessions of that worker. A worker receives its own changes the same way, so every
listener, wherever it is, sees the same sequence.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from typing import Any

import msgspec
from redis.exceptions import RedisError

from ..server import Change, InMemoryBus, Subscription
from ._redis_node import RedisNode

log = logging.getLogger("mcpkit.backends.redis")

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class RedisBus:
    """A :class:`~mcpkit.server.Bus` shared by every worker connected to one Redis."""

    def __init__(self, node: RedisNode, *, maxsize: int = 10_000) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis
        self.local = InMemoryBus(maxsize)
        self._pending: deque[bytes] = deque()
        self._flushing = False
        self._sync_client: Any = None
        node.on_change = self._received
        # Changes published while the connection was down are lost: end the streams so that
        # clients re-listen (and re-read) rather than silently missing an update.
        node.on_down.append(self.local.close_all)

    # ------------------------------------------------------------------ Bus
    def publish(self, change: Change) -> None:
        data = _encode((change.kind, change.uri))
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # Not on an event loop: registrations at import (nothing serves yet, so nobody
            # listens here, and other workers have the same registrations), or a worker
            # thread (a blocking=True handler), which may wait for Redis itself.
            if threading.current_thread() is not threading.main_thread():
                self._publish_blocking(data)
            return
        self._enqueue(data)

    def _publish_blocking(self, data: bytes) -> None:
        if self._sync_client is None:
            from ._redis_url import sync_client

            self._sync_client = sync_client(self.node.url, socket_connect_timeout=self.node.connect_timeout,
                                            socket_timeout=2.0)
        try:
            self._sync_client.publish(self.node.keys.changes, data)
        except RedisError as exc:
            log.warning("dropped a change notification: Redis is unavailable (%s)", exc)

    def subscribe(self) -> Subscription:
        self.node.start()
        return self.local.subscribe()

    def close_all(self) -> None:
        self.local.close_all()

    def __len__(self) -> int:
        return len(self.local)

    async def ready(self) -> None:
        """Raise :class:`~._redis_node.BackendUnavailable` unless changes can be received now."""
        await self.node.ensure("subscriptions/listen")

    # ------------------------------------------------------------------ plumbing
    def _enqueue(self, data: bytes) -> None:
        self._pending.append(data)
        if not self._flushing:
            self._flushing = True
            self.node.start()
            asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        client = self.node.client
        channel = self.node.keys.changes
        try:
            while self._pending:
                batch = list(self._pending)
                self._pending.clear()
                try:
                    if len(batch) == 1:
                        await client.publish(channel, batch[0])
                    else:
                        pipe = client.pipeline(transaction=False)
                        for data in batch:
                            pipe.publish(channel, data)
                        await pipe.execute()
                except RedisError as exc:
                    log.warning("dropped %d change notification(s): Redis is unavailable (%s)", len(batch), exc)
        finally:
            self._flushing = False

    def _received(self, data: bytes) -> None:
        kind, uri = _decode(data)
        self.local.publish(Change(kind, uri))
