"""Issue 18, item 4: the client's cache never hands one user's private results to another.

A real protected MCP server (mcpkit's HTTP app on uvicorn, on 127.0.0.1, checking JWTs from
the local test issuer) answers ``resources/read`` of ``me://profile`` with the caller's own
name, ``cacheScope: "private"`` and a long ``ttlMs``. One Client serves two users in turn,
switching credentials through a ``header_provider``, a custom ``Auth`` hook, or the cookie
jar of its ``httpx`` client; each must see only their own profile. Where the client cannot
see the credentials (an ``httpx`` client's own ``auth=`` flow, a hook that writes into the
request body), private results are not cached at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Context, Server
from mcpkit.auth.server import JWTVerifier, ResourceServerAuth
from mcpkit.client import Auth, Client, EraCache, OutgoingRequest, Response
from tests.helpers.issuer import ISSUER, DPoPKey, TestIssuer
from tests.helpers.oidc import ThreadedServer
from tests.helpers.servers import free_port

TTL = 600_000


class Protected:
    """The server, and who it answered (so a test can tell a cache hit from a fetch)."""

    def __init__(self) -> None:
        self.issuer = TestIssuer()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.reads: list[str] = []
        server = Server("per-user", "1.0.0")

        @server.resource("me://profile", ttl_ms=TTL, cache_scope="private")
        def profile(ctx: Context) -> str:
            who = ctx.auth.subject if ctx.auth is not None else "nobody"
            self.reads.append(who)
            return f"profile of {who}"

        @server.resource("pub://motd", ttl_ms=TTL, cache_scope="public")
        def motd() -> str:
            self.reads.append("motd")
            return "hello everyone"

        verifier = JWTVerifier(ISSUER, http_client=self.issuer.http())
        app = server.http_app(auth=ResourceServerAuth(verifier, resource=self.url))
        self.thread = ThreadedServer(app, port)
        assert self.thread.server.started, "uvicorn did not start"
        self.tokens = {user: self.issuer.token(self.url, sub=user) for user in ("alice", "bob")}

    def bearer(self, user: str) -> str:
        return f"Bearer {self.tokens[user]}"


@pytest.fixture(scope="module")
def srv() -> Iterator[Protected]:
    s = Protected()
    yield s
    s.thread.stop()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def profile(client: Client) -> str:
    result = await client.read_resource("me://profile")
    return result.contents[0].text  # type: ignore[union-attr]


def test_header_provider_switching_users_each_see_their_own(srv: Protected) -> None:
    user = {"now": "alice"}

    async def main() -> list[str]:
        async with Client(srv.url, header_provider=lambda: {"Authorization": srv.bearer(user["now"])},
                          mode="modern", era_cache=EraCache()) as client:
            seen = [await profile(client)]
            user["now"] = "bob"
            seen.append(await profile(client))
            user["now"] = "alice"
            before = len(srv.reads)
            seen.append(await profile(client))  # alice's own entry: still served from the cache
            assert len(srv.reads) == before
            user["now"] = "bob"
            seen.append(await profile(client))
            assert len(srv.reads) == before
            return seen

    assert run(main()) == ["profile of alice", "profile of bob", "profile of alice", "profile of bob"]


class SwitchingAuth(Auth):
    """A custom hook (no ``cache_context()`` override) whose user changes between requests."""

    def __init__(self, srv: Protected) -> None:
        self.srv = srv
        self.user = "alice"

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        request.headers["Authorization"] = self.srv.bearer(self.user)
        yield request


def test_custom_auth_hook_switching_users_each_see_their_own(srv: Protected) -> None:
    hook = SwitchingAuth(srv)

    async def main() -> list[str]:
        async with Client(srv.url, auth=hook, mode="modern", era_cache=EraCache()) as client:
            seen = [await profile(client)]
            hook.user = "bob"
            seen.append(await profile(client))
            before = len(srv.reads)
            hook.user = "alice"
            seen.append(await profile(client))
            assert len(srv.reads) == before  # cached, in alice's partition
            return seen

    assert run(main()) == ["profile of alice", "profile of bob", "profile of alice"]


def test_cookie_jar_is_part_of_the_partition(srv: Protected) -> None:
    """The same token, another session cookie: a private entry is not reused."""

    async def main() -> int:
        async with httpx.AsyncClient(cookies={"session": "one"}) as http, \
                Client(srv.url, http_client=http, bearer_token=srv.tokens["alice"], mode="modern",
                       era_cache=EraCache()) as client:
            await profile(client)
            before = len(srv.reads)
            await profile(client)
            assert len(srv.reads) == before  # same credentials: a hit
            http.cookies.set("session", "two")
            await profile(client)
            return len(srv.reads) - before

    assert run(main()) == 1


class HttpxSwitchingAuth(httpx.Auth):
    """Credentials added by the httpx client itself, after mcpkit built the request."""

    def __init__(self, srv: Protected) -> None:
        self.srv = srv
        self.user = "alice"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self.srv.bearer(self.user)
        yield request


def test_invisible_credentials_mean_private_results_are_not_cached(srv: Protected) -> None:
    flow = HttpxSwitchingAuth(srv)

    async def main() -> tuple[list[str], int, int]:
        async with httpx.AsyncClient(auth=flow) as http, \
                Client(srv.url, http_client=http, mode="modern", era_cache=EraCache()) as client:
            start = len(srv.reads)
            seen = [await profile(client), await profile(client)]
            flow.user = "bob"
            seen.append(await profile(client))
            private_reads = len(srv.reads) - start
            await client.read_resource("pub://motd")
            await client.read_resource("pub://motd")  # public results are still shared and cached
            return seen, private_reads, srv.reads[start:].count("motd")

    seen, private_reads, motd_reads = run(main())
    assert seen == ["profile of alice", "profile of alice", "profile of bob"]
    assert private_reads == 3  # every private read went to the server
    assert motd_reads == 1


class BodyCredentialAuth(Auth):
    """A hook that puts something into the request body: no header shows it."""

    def __init__(self, srv: Protected) -> None:
        self.srv = srv

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        request.headers["Authorization"] = self.srv.bearer("alice")
        request.params = {**(request.params or {}), "_meta": {"io.example/tenant": "t1"}}
        yield request


def test_a_hook_that_changes_the_body_makes_private_results_uncacheable(srv: Protected) -> None:
    async def main() -> int:
        async with Client(srv.url, auth=BodyCredentialAuth(srv), mode="modern", era_cache=EraCache()) as client:
            start = len(srv.reads)
            await profile(client)
            await profile(client)
            return len(srv.reads) - start

    assert run(main()) == 2


def test_partition_is_a_keyed_hash_of_the_credentials() -> None:
    """DPoP: the key's thumbprint counts, not the per-request proof; no secret in clear."""
    from mcpkit.client._credentials import partition

    key, other = DPoPKey(), DPoPKey()
    token = "tok-" + "s3cret" * 4

    def with_proof(k: DPoPKey, tok: str = token) -> str | None:
        return partition([("Authorization", f"DPoP {tok}"), ("DPoP", k.proof("POST", "http://h/mcp", tok)),
                          ("Content-Type", "application/json"), ("Mcp-Method", "resources/read")])

    first = with_proof(key)
    assert first is not None and first == with_proof(key)  # two proofs of one key: one partition
    assert first != with_proof(other)
    assert first != with_proof(key, token + "x")
    assert token not in first and "s3cret" not in first
    assert partition([("Cookie", "a=1")]) != partition([("Cookie", "a=2")])
    assert partition([("X-Api-Key", "k1")]) != partition([("X-Api-Key", "k2")])
    assert partition([("DPoP", "not a proof")]) is None  # unreadable: unknown, so not cached
