"""One worker's link to Redis: a command client, one pub/sub connection, an inbox, a heartbeat.

Every Redis-backed part of a worker (bus, task store, session store) shares one
:class:`RedisNode`. Its pub/sub connection listens to three channels: the change channel
(listen fan-out), the session channel (legacy session state, to every worker) and this
worker's inbox (task answers and cancels, answers to server-to-client requests, replies).
One reader task handles them in the order Redis delivered them.

When the pub/sub connection breaks (Redis restarted, network gone), the node is *down*:
``on_down`` callbacks run (listen streams end: changes published meanwhile would be lost),
new work that needs Redis is refused with :class:`BackendUnavailable`, and the node
reconnects with a capped backoff. ``ensure()`` waits (briefly) for it to be up.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import RedisError

from ..errors import BackendUnavailable as BackendUnavailable
from ..protocol import errors
from ._redis_keys import Keys
from ._redis_url import async_client

log = logging.getLogger("mcpkit.backends.redis")

#: An inbox handler: gets the decoded message, returns the reply fields (or None: no reply).
InboxHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class RedisNode:
    """A worker's Redis connections and identity (``worker_id``, random per process)."""

    def __init__(self, url: str, *, prefix: str = "mcpkit", worker_id: str | None = None,
                 heartbeat: float = 1.0, alive_ttl: float = 5.0, connect_timeout: float = 1.0) -> None:
        self.url = url
        self.keys = Keys(prefix)
        self.worker_id = worker_id or secrets.token_hex(6)
        self.heartbeat = heartbeat
        self.alive_ttl = alive_ttl
        self.connect_timeout = connect_timeout
        #: Inbox message handlers by type (``{"t": type, ...}``).
        self.handlers: dict[str, InboxHandler] = {}
        #: Called with each raw message of the change channel / the session channel.
        self.on_change: Callable[[bytes], None] | None = None
        self.on_session: Callable[[dict[str, Any]], None] | None = None
        #: Called when the pub/sub connection is lost (messages may have been missed).
        self.on_down: list[Callable[[], None]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self._client: aioredis.Redis | None = None
        self._up: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._nonces = itertools.count(1)
        self._closed = False
        #: When the node last came up (loop time), to give other workers time to beat again.
        self.up_since = 0.0
        #: The readiness check of every part on this node (``GET /readyz`` PINGs Redis once).
        self.health = RedisHealth(self)

    # ------------------------------------------------------------------ connections
    @property
    def client(self) -> aioredis.Redis:
        """The command client (a pool; a failed command is retried twice, briefly)."""
        if self._client is None:
            self._client = async_client(
                self.url, socket_connect_timeout=self.connect_timeout, socket_timeout=5.0,
                retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2))
        return self._client

    @property
    def up(self) -> bool:
        return self._up is not None and self._up.is_set()

    def start(self) -> None:
        """Start the reader (on the running loop), once."""
        if self._runner is not None or self._closed:
            return
        self.loop = asyncio.get_running_loop()
        self._up = asyncio.Event()
        self._runner = self.loop.create_task(self._run())

    async def ensure(self, what: str = "this request", timeout: float | None = None) -> None:
        """Return once the node is up; raise :class:`BackendUnavailable` if it is not soon."""
        self.start()
        assert self._up is not None
        if self._up.is_set():
            return
        try:
            await asyncio.wait_for(self._up.wait(), self.connect_timeout if timeout is None else timeout)
        except TimeoutError:
            raise BackendUnavailable(what) from None

    async def _run(self) -> None:
        assert self._up is not None
        delay = 0.05
        was_up = False
        while not self._closed:
            conn = async_client(self.url, socket_connect_timeout=self.connect_timeout,
                                           socket_timeout=None, retry=Retry(NoBackoff(), 0))
            ps = conn.pubsub()
            beat: asyncio.Task[None] | None = None
            try:
                await ps.subscribe(self.keys.changes, self.keys.sessions, self.keys.inbox(self.worker_id))
                # Wait for the three confirmations: from here on nothing published is missed.
                confirmed = 0
                while confirmed < 3:
                    msg = await ps.get_message(timeout=self.connect_timeout)
                    if msg is None:
                        raise RedisError("no subscribe confirmation")
                    if msg["type"] == "subscribe":
                        confirmed += 1
                await self.client.set(self.keys.alive(self.worker_id), b"1", px=int(self.alive_ttl * 1000))
                beat = asyncio.get_running_loop().create_task(self._beat())
                if was_up:
                    log.warning("Redis is back: serving listen streams, tasks and sessions again")
                self.up_since = asyncio.get_running_loop().time()
                self._up.set()
                was_up = True
                delay = 0.05
                async for msg in ps.listen():
                    if msg["type"] == "message":
                        self._dispatch(msg["channel"], msg["data"])
                raise RedisError("pub/sub connection closed")
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                if self._up.is_set():
                    log.warning("lost Redis (%s): ending listen streams; new work is refused until it is back", exc)
                    self._up.clear()
                    self._went_down()
            finally:
                if beat is not None:
                    beat.cancel()
                try:
                    await ps.aclose()
                    await conn.aclose()
                except Exception:
                    pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _went_down(self) -> None:
        for fut in self._replies.values():
            if not fut.done():
                fut.set_exception(BackendUnavailable())
        self._replies.clear()
        for cb in self.on_down:
            try:
                cb()
            except Exception:
                log.exception("error in a Redis down callback")

    async def _beat(self) -> None:
        key = self.keys.alive(self.worker_id)
        px = int(self.alive_ttl * 1000)
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                await self.client.set(key, b"1", px=px)
            except RedisError:
                pass  # the reader notices the outage

    # ------------------------------------------------------------------ messages
    def _dispatch(self, channel: bytes, data: bytes) -> None:
        ch = channel.decode()
        try:
            if ch == self.keys.changes:
                if self.on_change is not None:
                    self.on_change(data)
                return
            msg = _decode(data)
            if ch == self.keys.sessions:
                if self.on_session is not None:
                    self.on_session(msg)
                return
            if msg.get("t") == "reply":
                fut = self._replies.pop(msg.get("nonce", ""), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
                return
            handler = self.handlers.get(msg.get("t", ""))
            if handler is None:
                log.debug("no handler for inbox message %r", msg.get("t"))
                return
            assert self.loop is not None
            self.loop.create_task(self._answer(handler, msg))
        except Exception:
            log.exception("bad message on %s", ch)

    async def _answer(self, handler: InboxHandler, msg: dict[str, Any]) -> None:
        try:
            reply = await handler(msg)
        except errors.MCPError as exc:
            reply = {"error": exc.to_error()}
        except Exception:
            log.exception("inbox handler %r failed", msg.get("t"))
            reply = {"error": errors.internal_error("internal error").to_error()}
        to, nonce = msg.get("reply_to"), msg.get("nonce")
        if to and nonce:
            out = dict(reply or {})
            out["t"], out["nonce"] = "reply", nonce
            try:
                await self.client.publish(self.keys.inbox(to), _encode(out))
            except RedisError:
                log.debug("could not reply to %s", to)

    async def publish(self, channel: str, msg: dict[str, Any]) -> int:
        """Publish a message; returns how many workers received it. Raises BackendUnavailable."""
        try:
            return int(await self.client.publish(channel, _encode(msg)))
        except RedisError:
            raise BackendUnavailable() from None

    async def send(self, worker: str, msg: dict[str, Any]) -> bool:
        """Fire-and-forget to one worker's inbox; False when no such worker listens."""
        return await self.publish(self.keys.inbox(worker), msg) > 0

    async def call(self, worker: str, msg: dict[str, Any], timeout: float = 5.0) -> dict[str, Any] | None:
        """Ask one worker and await its reply; None when it is not there (or does not answer)."""
        await self.ensure()
        nonce = f"{self.worker_id}.{next(self._nonces)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[nonce] = fut
        try:
            if not await self.send(worker, dict(msg, reply_to=self.worker_id, nonce=nonce)):
                return None
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return None
        finally:
            self._replies.pop(nonce, None)

    async def alive(self, worker: str) -> bool:
        """Whether ``worker``'s heartbeat is fresh.

        Right after this node (re)connected, every worker is presumed alive for one heartbeat
        TTL: after a Redis restart the others need a moment to beat again.
        """
        if worker == self.worker_id:
            return True
        if self.loop is not None and self.loop.time() - self.up_since < self.alive_ttl:
            return True
        try:
            return bool(await self.client.exists(self.keys.alive(worker)))
        except RedisError:
            raise BackendUnavailable() from None

    async def aclose(self) -> None:
        """Stop (at worker shutdown): the heartbeat key goes at once."""
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
        if self._client is not None:
            try:
                await self._client.delete(self.keys.alive(self.worker_id))
                await self._client.aclose()
            except Exception:
                pass


class RedisHealth:
    """A readiness check: PING the Redis this node uses; raises :class:`BackendUnavailable`
    when it does not answer. Every Redis part of a node shares this one object."""

    name = "redis"

    def __init__(self, node: RedisNode) -> None:
        self.node = node

    async def __call__(self) -> None:
        try:
            await self.node.client.ping()
        except (RedisError, OSError):
            raise BackendUnavailable("a readiness check") from None
