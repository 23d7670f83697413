"""The proxy's legacy backend sessions: one per front principal and client-capability set.

The backend (tests/servers/proxy_sessions.py, 2025-11-25 only, over stdio: one process per
session) names the session that served each call and the capabilities it declared at
initialize. Two principals never share a session; a principal's sessions differ by the
capabilities its clients have; the pool is bounded (the least recently used idle session
makes room, a full pool of busy sessions refuses with one clear error) and idle sessions
expire.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcpkit.auth.server import Principal
from mcpkit.protocol import codec
from mcpkit.proxy import ProxyServer, proxy
from mcpkit.transports import Envelope
from tests.helpers.aio import run
from tests.helpers.paths import SERVERS, serve_argv

SESSIONS = SERVERS / "proxy_sessions.py"
ALL = {"elicitation": {}, "sampling": {}, "roots": {}}
ALICE = Principal("alice", "c", frozenset(), issuer="https://as")
BOB = Principal("bob", "c", frozenset(), issuer="https://as")
CAROL = Principal("carol", "c", frozenset(), issuer="https://as")
_ids = iter(range(1, 10_000))


async def call(front: ProxyServer, who: Principal | None, caps: dict[str, Any], tool: str,
               **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {},
                              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                        "io.modelcontextprotocol/clientCapabilities": caps}}
    params.update(extra)
    req = codec.decode(json.dumps({"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
                                   "params": params}).encode())
    assert isinstance(req, codec.Request)
    reply = await front.serve(req, Envelope(principal=who))
    return dict(json.loads(reply.body))


async def whoami(front: ProxyServer, who: Principal | None, caps: dict[str, Any]) -> dict[str, Any]:
    out = await call(front, who, caps, "whoami")
    assert "result" in out, out
    return dict(out["result"]["structuredContent"])


@pytest.fixture()
def front() -> Any:
    made: list[ProxyServer] = []

    def make(**kw: Any) -> ProxyServer:
        server = proxy(serve_argv(SESSIONS), mode="legacy", **kw)  # the backend refuses 2026-07-28
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def test_each_principal_and_capability_set_has_its_own_backend_session(front: Any) -> None:
    server = front()
    assert server.backend.era == "legacy"

    async def go() -> None:
        own = await whoami(server, None, ALL)  # no principal, everything: the proxy's own session
        a1 = await whoami(server, ALICE, {"elicitation": {}})
        a2 = await whoami(server, ALICE, {"elicitation": {}})
        b1 = await whoami(server, BOB, {"elicitation": {}})
        a_plain = await whoami(server, ALICE, {})
        assert a1["session"] == a2["session"] and a2["calls"] == a1["calls"] + 1  # alice's, reused
        sessions = {own["session"], a1["session"], b1["session"], a_plain["session"]}
        assert len(sessions) == 4  # never another principal's, never other capabilities'
        assert own["capabilities"] == ["elicitation", "roots", "sampling"]
        assert a1["capabilities"] == b1["capabilities"] == ["elicitation"]
        assert a_plain["capabilities"] == []
        assert len(server.backend.pool.sessions) == 3

    run(go(), 90)


def test_a_backend_question_reaches_only_its_principal(front: Any) -> None:
    server = front()

    async def go() -> None:
        asked = await call(server, ALICE, {"elicitation": {}}, "ask")
        result = asked["result"]
        assert result["resultType"] == "input_required"
        assert [q["method"] for q in result["inputRequests"].values()] == ["elicitation/create"]
        state, key = result["requestState"], next(iter(result["inputRequests"]))
        answer = {key: {"action": "accept", "content": {"name": "Alice"}}}
        stolen = await call(server, BOB, {"elicitation": {}}, "ask", requestState=state, inputResponses=answer)
        assert "error" in stolen  # bob cannot answer alice's question (nor read her state)
        done = await call(server, ALICE, {"elicitation": {}}, "ask", requestState=state, inputResponses=answer)
        assert done["result"]["content"][0]["text"] == "accept:Alice"

    run(go(), 90)


def test_the_pool_is_bounded_and_fails_closed_when_every_session_is_busy(front: Any) -> None:
    server = front(max_sessions=2)

    async def go() -> None:
        a = await whoami(server, ALICE, {})
        await whoami(server, BOB, {})
        await whoami(server, CAROL, {})  # the pool is full: alice's idle session made room
        assert {k[0] for k in server.backend.pool.sessions} == {BOB.key, CAROL.key}
        again = await whoami(server, ALICE, {})
        assert again["session"] != a["session"] and again["calls"] == 1  # a new session
        # Two sessions parked on a question (busy): a third caller is refused, nobody's is lent.
        for who in (ALICE, BOB):
            parked = await call(server, who, {"elicitation": {}}, "ask")
            assert parked["result"]["resultType"] == "input_required"
        refused = await call(server, CAROL, {"elicitation": {}}, "whoami")
        assert refused["error"]["code"] == -32603
        assert "all 2 backend sessions are in use" in refused["error"]["message"]

    run(go(), 120)


def test_idle_sessions_expire(front: Any) -> None:
    server = front(session_idle_ttl=0.5)

    async def go() -> None:
        await whoami(server, ALICE, {})
        assert len(server.backend.pool.sessions) == 1
        await asyncio.sleep(0.8)
        await whoami(server, BOB, {})
        assert [k[0] for k in server.backend.pool.sessions] == [BOB.key]

    run(go(), 90)


def test_pool_options_are_checked() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        proxy(serve_argv(SESSIONS), max_sessions=0)
