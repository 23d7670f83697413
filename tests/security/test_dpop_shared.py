"""DPoP replay protection and nonces across workers sharing a Redis backend (issue 18, item 10).

Two real uvicorn processes (tests/servers/token_server.py) serve one protected resource
(the same canonical URL), each backed by its own ``RedisBackend`` on one real redis-server:
a proof used at one is refused at the other, and a nonce issued by one is accepted by the
other. With Redis unreachable, a proof is refused (503), never accepted unchecked.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("joserfc")
pytest.importorskip("redis")

from tests.helpers.issuer import DPoPKey, HttpIssuer, http_issuer
from tests.helpers.messages import body, headers_for
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.redis import RedisServer
from tests.helpers.servers import running_server

TOKEN_SERVER = SERVERS / "token_server.py"


def _argv(port: int) -> list[str]:
    return [sys.executable, str(TOKEN_SERVER), str(port)]



@pytest.fixture(scope="module")
def issuer() -> Iterator[HttpIssuer]:
    with http_issuer() as iss:
        yield iss


@contextlib.contextmanager
def two_workers(issuer: HttpIssuer, redis: RedisServer, **env: str) -> Iterator[tuple[str, str, str]]:
    """Worker A and worker B of one resource (A's URL is the canonical one); yields (resource, url A, url B)."""
    common = {"TOKEN_ISSUER": issuer.issuer, "TOKEN_REDIS": redis.url, **env}
    with running_server(_argv, env=subprocess_env(**common)) as a:
        with running_server(_argv, env=subprocess_env(TOKEN_RESOURCE=a, **common)) as b:
            yield a, a, b


def post(url: str, token: str, proof: str) -> httpx.Response:
    msg = body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    headers = headers_for(msg) | {"Authorization": f"DPoP {token}", "DPoP": proof}
    return httpx.post(url, json=msg, headers=headers, timeout=10.0, trust_env=False)


def error_of(resp: httpx.Response) -> str | None:
    m = re.search(r'error="([^"]*)"', resp.headers.get("www-authenticate", ""))
    return m.group(1) if m else None


def test_a_proof_used_at_one_worker_is_refused_at_another(issuer: HttpIssuer, redis: RedisServer) -> None:
    key = DPoPKey()
    with two_workers(issuer, redis) as (resource, a, b):
        token = issuer.token(resource, cnf={"jkt": key.jkt})
        proof = key.proof("POST", resource, token)
        first = post(a, token, proof)
        assert first.status_code == 200, first.text
        again = post(b, token, proof)
        assert again.status_code == 401, again.text
        assert error_of(again) == "invalid_dpop_proof" and "already used" in again.headers["www-authenticate"]
        assert again.json()["error"]["data"] == {"error": "invalid_dpop_proof"}
        # And the other way round, and on the same worker.
        other = key.proof("POST", resource, token)
        assert post(b, token, other).status_code == 200
        assert post(a, token, other).status_code == 401
        assert post(b, token, other).status_code == 401
        # Fresh proofs pass at both.
        assert post(a, token, key.proof("POST", resource, token)).status_code == 200
        assert post(b, token, key.proof("POST", resource, token)).status_code == 200


def test_a_nonce_issued_by_one_worker_is_accepted_by_another(issuer: HttpIssuer, redis: RedisServer) -> None:
    key = DPoPKey()
    with two_workers(issuer, redis, TOKEN_DPOP_NONCE="1") as (resource, a, b):
        token = issuer.token(resource, cnf={"jkt": key.jkt})
        asked = post(a, token, key.proof("POST", resource, token))
        assert asked.status_code == 401 and error_of(asked) == "use_dpop_nonce", asked.text
        nonce = asked.headers["dpop-nonce"]
        served = post(b, token, key.proof("POST", resource, token, nonce=nonce))
        assert served.status_code == 200, (served.text, served.headers.get("www-authenticate"))
        # B's nonces work at A as well.
        asked = post(b, token, key.proof("POST", resource, token))
        assert error_of(asked) == "use_dpop_nonce"
        served = post(a, token, key.proof("POST", resource, token, nonce=asked.headers["dpop-nonce"]))
        assert served.status_code == 200, served.text


def test_redis_down_refuses_proofs_and_recovers(issuer: HttpIssuer, redis: RedisServer) -> None:
    key = DPoPKey()
    with two_workers(issuer, redis) as (resource, a, _b):
        token = issuer.token(resource, cnf={"jkt": key.jkt})
        assert post(a, token, key.proof("POST", resource, token)).status_code == 200
        redis.stop()
        try:
            resp = post(a, token, key.proof("POST", resource, token))
            # The replay check cannot be made: refused for now (never accepted unchecked, never a 500).
            assert resp.status_code == 503, resp.text
            assert resp.json()["error"]["code"] == -32603
        finally:
            redis.start()
        for _ in range(50):
            resp = post(a, token, key.proof("POST", resource, token))
            if resp.status_code == 200:
                break
            time.sleep(0.1)
        assert resp.status_code == 200, resp.text
