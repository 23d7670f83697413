"""Legacy (2025-11-25) sessions are capped per client, and unused ones expire soon (issue 18, item 21).

The session cap used to be global: one anonymous client could open every slot and keep it
for the whole idle timeout by only sending ``initialize``. Now each caller (the authenticated
principal, else the peer address) has its own quota (``max_sessions_per_client``, 429 +
``Retry-After`` beyond it), the global ``max_sessions`` stays as a backstop (503 +
``Retry-After``), and a session that has served no request since ``initialize``
(``notifications/initialized`` does not count) expires after ``session_unused_timeout``.
Real uvicorn in subprocesses; a second client binds 127.0.0.2 to be another peer.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("joserfc")
pytest.importorskip("uvicorn")

from tests.helpers.issuer import ISSUER, TestIssuer
from tests.helpers.legacy import LegacyHttp
from tests.helpers.messages import JSON_ACCEPT, init_msg, req
from tests.helpers.servers import running_server

SERVER = '''\
import sys

from mcpkit import Server
from mcpkit.auth.server import JWTVerifier, ResourceServerAuth

port, protected, max_sessions, per_client, unused = sys.argv[1:6]
auth = ResourceServerAuth(JWTVerifier({issuer!r}, jwks={jwks!r})) if protected == "auth" else None
server = Server("sessions", "1.0.0", auth=auth)


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


server.run("http", port=int(port), max_sessions=int(max_sessions), max_sessions_per_client=int(per_client),
           session_unused_timeout=float(unused))
'''


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture(scope="module")
def server_file(tmp_path_factory: pytest.TempPathFactory, issuer: TestIssuer) -> Path:
    path = tmp_path_factory.mktemp("sessions") / "sessions_server.py"
    path.write_text(SERVER.format(issuer=ISSUER, jwks=issuer.jwks()))
    return path


@contextmanager
def serving(server_file: Path, *, protected: bool = False, max_sessions: int = 100, per_client: int = 16,
            unused: float = 30.0) -> Iterator[str]:
    args = ["auth" if protected else "open", str(max_sessions), str(per_client), str(unused)]
    with running_server(lambda port: [sys.executable, str(server_file), str(port), *args],
                        cwd=server_file.parent) as url:
        yield url


@contextmanager
def peer(address: str = "127.0.0.1", token: str | None = None) -> Iterator[httpx.Client]:
    """An HTTP client whose connections come from ``address`` (another loopback address is
    another peer to the server), sending ``token`` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), headers=headers, timeout=15,
                      trust_env=False) as c:
        yield c


def open_used(url: str, client: httpx.Client) -> LegacyHttp:
    """A session that has served a request (a ping)."""
    s = LegacyHttp(url, client)
    s.initialize()
    assert s.post(req("first", "ping")).status_code == 200
    return s


def assert_refused(resp: httpx.Response, status: int, words: str) -> None:
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert "mcp-session-id" not in resp.headers
    assert int(resp.headers["retry-after"]) >= 1, resp.headers
    error = resp.json()["error"]
    assert resp.json()["id"] == init_msg()["id"] and words in error["message"], resp.text


def test_one_anonymous_peer_is_capped_while_another_peer_still_gets_a_session(server_file: Path) -> None:
    with serving(server_file, max_sessions=10, per_client=3) as url, peer() as one, peer("127.0.0.2") as two:
        sessions = [open_used(url, one) for _ in range(3)]
        resp = one.post(url, json=init_msg(), headers=JSON_ACCEPT)
        assert_refused(resp, 429, "too many open sessions for this client")
        # The global cap has room: another peer address still gets a session.
        other = LegacyHttp(url, two)
        other.initialize()
        other.assert_alive()
        for s in sessions:
            s.assert_alive()  # the capped client's sessions are untouched
        # Ending one of its sessions gives the client a slot again.
        assert sessions[0].delete().status_code == 200
        open_used(url, one).assert_alive()


def test_two_principals_each_get_their_own_quota(server_file: Path, issuer: TestIssuer) -> None:
    with serving(server_file, protected=True, per_client=2) as url:
        alice, bob = (issuer.token(url, sub=name) for name in ("alice", "bob"))
        with peer(token=alice) as as_alice, peer(token=bob) as as_bob:
            for _ in range(2):
                open_used(url, as_alice)
            assert_refused(as_alice.post(url, json=init_msg(), headers=JSON_ACCEPT), 429,
                           "too many open sessions for this client")
            # Same peer address, another principal: its own quota.
            for _ in range(2):
                open_used(url, as_bob).assert_alive()
            assert_refused(as_bob.post(url, json=init_msg(), headers=JSON_ACCEPT), 429,
                           "too many open sessions for this client")


def test_an_initialize_only_session_expires_soon_and_frees_its_slot(server_file: Path) -> None:
    with serving(server_file, per_client=2, unused=1.0) as url, peer() as http:
        idle = LegacyHttp(url, http)
        idle.initialize()  # initialize and notifications/initialized, then nothing
        used = open_used(url, http)
        assert http.post(url, json=init_msg(), headers=JSON_ACCEPT).status_code == 429
        time.sleep(1.6)
        # The unused session has expired and freed its slot; the one in use survives.
        fresh = LegacyHttp(url, http)
        fresh.initialize()
        fresh.assert_alive()
        used.assert_alive()
        resp = idle.post(req(1, "ping"))
        assert resp.status_code == 404 and "expired" in resp.json()["error"]["message"], resp.text


def test_the_global_cap_is_still_a_backstop(server_file: Path) -> None:
    with serving(server_file, max_sessions=2, per_client=16) as url, peer() as one, peer("127.0.0.2") as two:
        kept = [open_used(url, one), open_used(url, two)]
        assert_refused(two.post(url, json=init_msg(), headers=JSON_ACCEPT), 503, "too many open sessions")
        for s in kept:
            s.assert_alive()


def test_an_unused_shared_session_expires_soon_on_every_worker() -> None:
    """With the Redis session store the record of an unused session lives only as long as the
    grace too (a notification does not extend it); one that served a request keeps the idle
    timeout, whichever worker served it."""
    from tests.helpers.paths import SERVERS
    from tests.helpers.redis import RedisServer, workers_argv
    from tests.helpers.servers import ServerProcess

    redis = RedisServer()
    redis.start()
    procs = [ServerProcess(workers_argv(SERVERS / "scale_server.py", workers=1, redis_url=redis.url,
                                        session_unused_timeout=1.0)) for _ in range(2)]
    try:
        for p in procs:
            assert p.wait_ready(), p.output()
        a, b = (p.url for p in procs)
        with peer() as http:
            idle, used = LegacyHttp(a, http), LegacyHttp(a, http)
            idle.initialize()
            used.initialize()
            idle.url = used.url = b  # continued on the other worker
            assert used.post(req(1, "tools/list")).status_code == 200
            note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
            assert idle.post(note).status_code == 202
            time.sleep(1.6)
            for url in (a, b):
                idle.url = used.url = url
                resp = idle.post(req(2, "ping"))
                assert resp.status_code == 404, (url, resp.status_code, resp.text)
                assert used.post(req(3, "ping")).status_code == 200, url
    finally:
        for p in procs:
            p.stop()
        redis.close()
