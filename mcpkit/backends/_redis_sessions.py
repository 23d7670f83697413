"""Legacy (2025-11-25) sessions shared by every worker: records in Redis, events by pub/sub.

A session's record (negotiated version, client capabilities and info, log level,
subscriptions, owner) is a hash and a set that expire after the idle timeout and is refreshed
on every use (and by the worker holding the session's GET stream while it is open). Any
worker can serve a POST: it loads the record, and when the request changed it (log level,
subscriptions) saves what changed and tells the other workers before it answers. The session
channel also carries ends (DELETE), the claim of the GET stream (the newest wins,
wherever it is) and ``notifications/cancelled``. A client's answer to a server-to-client
request goes to the worker that asked: its id names that worker.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from redis.exceptions import RedisError

from ..transports import SessionEvents
from ._redis_node import BackendUnavailable, RedisNode

log = logging.getLogger("mcpkit.backends.redis")

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class RedisSessionStore:
    """The :class:`~mcpkit.transports._http_legacy.SessionStore` of every worker of one Redis."""

    def __init__(self, node: RedisNode) -> None:
        self.node = node
        self.health = node.health  # GET /readyz: PING this Redis
        self.events: SessionEvents | None = None
        node.on_session = self._on_session
        node.handlers["session_response"] = self._on_response

    @property
    def worker_id(self) -> str:
        return self.node.worker_id

    def bind(self, events: SessionEvents) -> None:
        self.events = events

    # ------------------------------------------------------------------ records
    # A record is a hash (one JSON value per field) and a set of subscribed URIs, so that two
    # workers changing different parts of one session at once (two resources/subscribe sent
    # in parallel, say) both win: a save writes only what its request changed.
    async def create(self, sid: str, state: dict[str, Any], idle_timeout: float) -> None:
        await self.node.ensure("a new session")
        await self._write(sid, None, state, idle_timeout)

    async def load(self, sid: str, idle_timeout: float) -> dict[str, Any] | None:
        await self.node.ensure("this session")
        key, subs = self.node.keys.session(sid), self.node.keys.session_subs(sid)
        try:
            pipe = self.node.client.pipeline(transaction=False)
            pipe.hgetall(key)
            pipe.smembers(subs)
            pipe.pexpire(key, _ms(idle_timeout))
            pipe.pexpire(subs, _ms(idle_timeout))
            fields, members, _, _ = await pipe.execute()
        except RedisError:
            raise BackendUnavailable("this session") from None
        if not fields:
            return None
        state: dict[str, Any] = {k.decode(): _decode(v) for k, v in fields.items()}
        state["subscriptions"] = sorted(m.decode() for m in members)
        return state

    async def save(self, sid: str, before: dict[str, Any] | None, after: dict[str, Any], idle_timeout: float) -> None:
        diff = await self._write(sid, before, after, idle_timeout)
        await self.node.publish(self.node.keys.sessions, {"op": "state", "sid": sid, "diff": diff, "from": self.worker_id})

    async def _write(self, sid: str, before: dict[str, Any] | None, after: dict[str, Any],
                     idle_timeout: float) -> dict[str, Any]:
        diff = state_diff(before, after)
        key, subs = self.node.keys.session(sid), self.node.keys.session_subs(sid)
        try:
            pipe = self.node.client.pipeline(transaction=True)
            if diff["fields"]:
                pipe.hset(key, mapping={k: _encode(v) for k, v in diff["fields"].items()})
            if diff["added"]:
                pipe.sadd(subs, *diff["added"])
            if diff["removed"]:
                pipe.srem(subs, *diff["removed"])
            pipe.pexpire(key, _ms(idle_timeout))
            pipe.pexpire(subs, _ms(idle_timeout))
            await pipe.execute()
        except RedisError:
            raise BackendUnavailable("this session") from None
        return diff

    async def touch(self, sid: str, idle_timeout: float) -> None:
        try:
            pipe = self.node.client.pipeline(transaction=False)
            pipe.pexpire(self.node.keys.session(sid), _ms(idle_timeout))
            pipe.pexpire(self.node.keys.session_subs(sid), _ms(idle_timeout))
            await pipe.execute()
        except RedisError:
            pass  # the stream's owner retries at the next tick

    async def delete(self, sid: str) -> bool:
        try:
            gone = await self.node.client.delete(self.node.keys.session(sid), self.node.keys.session_subs(sid))
        except RedisError:
            raise BackendUnavailable("this session") from None
        if gone:
            await self.node.publish(self.node.keys.sessions, {"op": "end", "sid": sid, "from": self.worker_id})
        return bool(gone)

    # ------------------------------------------------------------------ events
    async def claim_stream(self, sid: str) -> None:
        """This worker now holds the session's GET stream: others end theirs."""
        await self.node.publish(self.node.keys.sessions, {"op": "stream", "sid": sid, "from": self.worker_id})

    async def broadcast_cancel(self, sid: str, body: bytes) -> None:
        await self.node.publish(self.node.keys.sessions, {"op": "cancel", "sid": sid, "body": body.decode(),
                                                          "from": self.worker_id})

    async def forward_response(self, worker: str, sid: str, body: bytes) -> bool:
        """A client's answer to a request ``worker`` sent: False when that worker is gone."""
        return await self.node.send(worker, {"t": "session_response", "sid": sid, "body": body.decode()})

    def _on_session(self, msg: dict[str, Any]) -> None:
        events = self.events
        if events is None or msg.get("from") == self.worker_id:
            return
        op, sid = msg.get("op"), msg.get("sid", "")
        if op == "state":
            events.session_changed(sid, msg["diff"])
        elif op == "end":
            events.session_ended(sid)
        elif op == "stream":
            events.stream_claimed(sid)
        elif op == "cancel":
            events.session_notification(sid, msg["body"].encode())

    async def _on_response(self, msg: dict[str, Any]) -> None:
        if self.events is not None:
            self.events.session_response(msg["sid"], msg["body"].encode())


def state_diff(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """What a request changed: fields (all but subscriptions) and subscriptions added/removed."""
    old = before or {}
    fields = {k: v for k, v in after.items() if k != "subscriptions" and (before is None or old.get(k) != v)}
    was, now = set(old.get("subscriptions") or ()), set(after.get("subscriptions") or ())
    return {"fields": fields, "added": sorted(now - was), "removed": sorted(was - now)}


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
