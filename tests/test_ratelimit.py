"""Rate limits: token buckets per caller, per method or tool, in process and through Redis.

In process with an injected clock (exact budgets and refill), through a real redis-server
with two nodes (two workers) bursting concurrently for two principals (each gets exactly
its budget), and from the command line over HTTP (``mcpkit serve --http --rate-limit 5/s``)
and stdio.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, Context, MCPError, Server
from mcpkit.server.ratelimit import (
    RATE_LIMITED,
    MemoryBuckets,
    RateLimited,
    RateLimits,
    default_key,
    parse_rule,
    peer_address,
)
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit, served
from tests.helpers.messages import headers_for
from tests.helpers.paths import DEMO
from tests.helpers.redis import RedisServer
from tests.helpers.wire import HttpWire


def test_rules_parse() -> None:
    r = parse_rule("100/s")
    assert (r.method, r.name, r.capacity, r.period) == (None, None, 100, 1.0)
    r = parse_rule("tools/call:10/m")
    assert (r.method, r.name, r.capacity, r.period) == ("tools/call", None, 10, 60.0)
    r = parse_rule("tools/call:search:5/10s")
    assert (r.method, r.name, r.capacity, r.period) == ("tools/call", "search", 5, 10.0)
    assert parse_rule("prompts/get:greet:1/h").per_second == pytest.approx(1 / 3600)
    for bad in ("", "100", "100/x", "0/s", "-1/s", "tools/list:x:1/s", ":1/s", "ten/s"):
        with pytest.raises(ValueError):
            parse_rule(bad)
    with pytest.raises(ValueError):
        RateLimits([])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def build(rules: list[str], clock: Clock) -> Server:
    server = Server("rl")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def other() -> str:
        return "ok"

    RateLimits(rules, store=MemoryBuckets(clock=clock)).install(server)
    return server


def test_a_tool_limit_refuses_over_budget_with_a_typed_error_and_refills() -> None:
    clock = Clock()
    server = build(["tools/call:add:3/s"], clock)

    async def go() -> None:
        async with Client(server) as client:
            for _ in range(3):
                assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
            with pytest.raises(MCPError) as info:
                await client.call_tool("add", {"a": 1, "b": 2})
            assert info.value.code == RATE_LIMITED
            assert info.value.data == {"retryAfter": 1, "limit": "tools/call:add:3/s"}
            assert not (await client.call_tool("other", {})).isError  # not this rule
            await client.list_tools()  # nor other methods
            clock.now += 1 / 3  # one token back
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(MCPError):
                await client.call_tool("add", {"a": 1, "b": 2})

    run(go())


def test_every_method_rule_counts_every_request() -> None:
    clock = Clock()
    server = build(["2/m"], clock)

    async def go() -> None:
        async with Client(server) as client:
            await client.list_tools()
            await client.call_tool("other", {})
            with pytest.raises(MCPError) as info:
                await client.list_tools()
            assert info.value.code == RATE_LIMITED and info.value.data["retryAfter"] == 30

    run(go())


def test_callers_have_their_own_buckets() -> None:
    buckets = MemoryBuckets(clock=Clock())
    assert buckets.take_now("a", 1, 1) == 0 and buckets.take_now("a", 1, 1) > 0
    assert buckets.take_now("b", 1, 1) == 0  # another caller
    small = MemoryBuckets(max_keys=2, clock=Clock())
    for key in "xyz":
        small.take_now(key, 5, 1)
    assert len(small._buckets) == 2

    class Ctx:
        principal: str | None = None
        peer: str | None = None

    ctx: Any = Ctx()
    assert default_key(ctx) == "anonymous"
    token = peer_address.set("10.0.0.7")
    try:
        assert default_key(ctx) == "a:10.0.0.7"
        ctx.principal = "alice"
        assert default_key(ctx) == "p:alice"
    finally:
        peer_address.reset(token)


def test_the_error_says_when_to_retry() -> None:
    exc = RateLimited(0.2, "5/s")
    assert exc.code == RATE_LIMITED and exc.data == {"retryAfter": 1, "limit": "5/s"}
    assert exc.retry_after == 0.2 and "retry after 1 s" in exc.message


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.close()


def test_two_workers_sharing_redis_give_each_principal_exactly_its_budget(redis: RedisServer) -> None:
    from mcpkit.backends.redis import RedisBackend

    async def go() -> None:
        a, b = RedisBackend(redis.url, prefix="rltest"), RedisBackend(redis.url, prefix="rltest")
        try:
            limits = [RateLimits(["tools/call:10/m"], store=w.rate_buckets, key=lambda ctx: ctx.principal)
                      for w in (a, b)]

            async def one(limit: RateLimits, who: str) -> bool:
                ctx: Any = Context(Server("x"), 1, "tools/call", {}, None)  # type: ignore[arg-type]
                ctx.principal = who

                async def ok(ctx: Any, params: Any) -> str:
                    return "ok"

                try:
                    await limit(ctx, None, ok)
                    return True
                except RateLimited:
                    return False

            # 30 concurrent requests per principal, alternating between the two workers.
            calls = [one(limits[i % 2], who) for i in range(30) for who in ("alice", "bob")]
            results = await asyncio.gather(*calls)
            alice = sum(r for r, (i, who) in zip(results, [(i, w) for i in range(30) for w in ("alice", "bob")],
                                                 strict=True) if who == "alice")
            assert alice == 10 and sum(results) == 20
        finally:
            await a.aclose()
            await b.aclose()

    run(go())


def test_redis_down_refuses_rate_limited_work(redis: RedisServer) -> None:
    from mcpkit.backends.redis import BackendUnavailable, RedisBackend

    async def go() -> None:
        backend = RedisBackend(redis.url, prefix="rltest2")
        redis.stop()
        try:
            with pytest.raises(BackendUnavailable):
                await backend.rate_buckets.take("k", 5, 1)
        finally:
            redis.start()
            await backend.aclose()

    run(go())


def test_cli_rate_limit_over_http_refuses_with_json_rpc_errors_and_keeps_serving() -> None:
    with served("--rate-limit", "5/s", DEMO) as srv, httpx.Client(timeout=10, trust_env=False) as http:
        wire = HttpWire(http, srv.url, client="test_ratelimit")
        replies = [wire.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}) for _ in range(20)]
        refused = [(status, r) for status, r in replies if "error" in r]
        assert len(refused) >= 10, replies
        for status, r in refused:
            assert status == 429, (status, r)
            assert r["error"]["code"] == RATE_LIMITED and r["error"]["data"]["retryAfter"] >= 1
        msg = wire.message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        raw = http.post(srv.url, content=json.dumps(msg).encode(), headers=headers_for(msg))
        if raw.status_code == 429:  # (unless the bucket refilled meanwhile)
            assert int(raw.headers["retry-after"]) >= 1
        import time

        time.sleep(1.1)
        status, reply = wire.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert "result" in reply, reply


def test_cli_rate_limit_over_stdio_and_a_bad_rule() -> None:
    async def go() -> None:
        argv = [sys.executable, "-m", "mcpkit", "serve", "--rate-limit", "tools/call:add:2/m", str(DEMO)]
        async with Client(argv) as client:
            await client.call_tool("add", {"a": 1, "b": 1})
            await client.call_tool("add", {"a": 1, "b": 1})
            with pytest.raises(MCPError) as info:
                await client.call_tool("add", {"a": 1, "b": 1})
            assert info.value.code == RATE_LIMITED

    run(go())
    out = mcpkit("serve", "--rate-limit", "lots", DEMO)
    assert out.returncode == 2 and out.stderr.strip().startswith("mcpkit serve: --rate-limit:"), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
