"""``GET /healthz`` and ``GET /readyz``: real ``mcpkit serve --http`` processes, a real
redis-server stopped and started under them, a protected server probed without a token.
Also where the caller's address comes from (``ctx.peer``: the socket, or a trusted proxy)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.server.ratelimit import RATE_LIMITED
from mcpkit.transports.http import HttpApp
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.redis import RedisServer
from tests.helpers.servers import asgi_client, free_port, running_server
from tests.helpers.wire import HttpWire

OPS = SERVERS / "ops_server.py"


def serve(*args: str | Path) -> Any:
    return lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), *map(str, args)]


def base(url: str) -> str:
    return url.rsplit("/", 1)[0]


def wait_for(fn: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_probes_follow_redis_and_the_readiness_checks(redis: RedisServer, tmp_path: Path) -> None:
    flag = tmp_path / "not-ready"
    env = subprocess_env(OPS_NOT_READY=str(flag))
    with running_server(serve("--redis", redis.url, OPS), env=env) as url, \
            httpx.Client(base_url=base(url), timeout=10, trust_env=False) as http:
        alive = http.get("/healthz")
        assert alive.status_code == 200 and alive.json() == {"status": "ok"}
        assert alive.headers["content-type"] == "application/json" and alive.headers["cache-control"] == "no-store"
        assert http.get("/readyz").json() == {"status": "ready"}
        # A kubelet probes the pod's IP: a Host no allow-list names is fine here (not on /mcp).
        assert http.get("/readyz", headers={"host": "10.1.2.3:8080"}).status_code == 200
        assert http.post(url, json={}, headers={"host": "10.1.2.3:8080"}).status_code == 403
        head = http.head("/healthz")
        assert head.status_code == 200 and head.content == b""
        assert http.post("/healthz").status_code == 405
        assert http.get("/healthz", headers={"origin": "https://evil.example"}).status_code == 403

        redis.stop()
        try:
            down = wait_for(lambda: (r := http.get("/readyz")).status_code == 503 and r)
            assert down, "readyz stayed 200 with Redis down"
            assert down.json() == {"status": "unavailable", "failed": {"redis": "BackendUnavailable"}}
            assert "127.0.0.1" not in down.text  # the class only: details go to the log
            assert http.get("/healthz").status_code == 200  # alive all the same
        finally:
            redis.start()
        assert wait_for(lambda: http.get("/readyz").status_code == 200)

        flag.write_text("")
        refused = http.get("/readyz")
        assert refused.status_code == 503 and refused.json()["failed"] == {"flag": "False"}
        flag.unlink()
        assert http.get("/readyz").status_code == 200


def test_a_protected_server_answers_healthz_without_a_token() -> None:
    issuer = f"http://127.0.0.1:{free_port()}"  # nothing listens there: tokens cannot even be checked
    with running_server(serve("--auth-issuer", issuer, OPS)) as url, \
            httpx.Client(timeout=10, trust_env=False) as http:
        assert http.post(url, json={}).status_code == 401
        alive = http.get(base(url) + "/healthz")
        assert alive.status_code == 200 and alive.json() == {"status": "ok"}
        assert http.get(base(url) + "/readyz").status_code == 200


def test_probes_are_not_rate_limited_and_their_paths_are_configurable() -> None:
    with running_server(serve("--rate-limit", "1/m", "--healthz", "/live", "--readyz", "", OPS)) as url, \
            httpx.Client(timeout=10, trust_env=False) as http:
        wire = HttpWire(http, url, client="test_health")
        assert "result" in wire.call("tools/list", {})[1]
        assert wire.call("tools/list", {})[1]["error"]["code"] == RATE_LIMITED
        assert all(http.get(base(url) + "/live").status_code == 200 for _ in range(20))
        assert http.get(base(url) + "/healthz").status_code == 404
        assert http.get(base(url) + "/readyz").status_code == 404


def test_probe_paths_are_checked_and_readiness_checks_of_every_kind() -> None:
    server = Server("probes")
    for bad in ({"healthz": "live"}, {"readyz": "/mcp"}, {"healthz": "/x", "readyz": "/x"}):
        with pytest.raises(ValueError):
            HttpApp(server, **bad)

    state = {"ok": True}

    @server.readiness_check()
    async def database() -> None:
        if not state["ok"]:
            raise ConnectionError("db at 10.0.0.9 refused")

    def slow() -> Any:
        import asyncio

        return asyncio.sleep(5)

    with pytest.raises(ValueError):
        server.readiness_check(lambda: True, name="database")  # a name is taken once
    with asgi_client(HttpApp(server, healthz=None)) as http:
        assert http.get("/healthz").status_code == 404
        assert http.get("/readyz").status_code == 200
        state["ok"] = False
        assert http.get("/readyz").json()["failed"] == {"database": "ConnectionError"}
        state["ok"] = True
        import mcpkit.server._operate as operate

        server.readiness_check(slow, name="slow")
        old, operate.READINESS_TIMEOUT = operate.READINESS_TIMEOUT, 0.2
        try:
            assert http.get("/readyz").json()["failed"] == {"slow": "timeout"}
        finally:
            operate.READINESS_TIMEOUT = old


# ---------------------------------------------------------------------- the caller's address
def test_anonymous_callers_are_limited_per_peer_address_without_any_wrapper() -> None:
    with running_server(serve("--rate-limit", "tools/call:2/m", OPS)) as url:
        with httpx.Client(timeout=10, trust_env=False) as one, \
                httpx.Client(timeout=10, trust_env=False,
                             transport=httpx.HTTPTransport(local_address="127.0.0.2")) as two:
            a, b = HttpWire(one, url, client="a"), HttpWire(two, url, client="b")
            assert a.call("tools/call", {"name": "whoami", "arguments": {}})[1]["result"]["structuredContent"][
                "peer"] == "127.0.0.1"
            assert "result" in a.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})[1]
            status, refused = a.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            assert status == 429 and refused["error"]["code"] == RATE_LIMITED
            ok = b.call("tools/call", {"name": "whoami", "arguments": {}})[1]  # another address, its own bucket
            assert ok["result"]["structuredContent"]["peer"] == "127.0.0.2"


def test_forwarded_for_is_believed_only_from_a_trusted_proxy() -> None:
    call = {"name": "whoami", "arguments": {}}
    forged = {"x-forwarded-for": "203.0.113.9"}
    with running_server(serve(OPS)) as url, httpx.Client(timeout=10, trust_env=False) as http:
        wire = HttpWire(http, url, client="t")
        assert wire.call("tools/call", call, headers=forged)[1]["result"]["structuredContent"]["peer"] == "127.0.0.1"
    with running_server(serve("--trust-proxy", "127.0.0.0/8", OPS)) as url, \
            httpx.Client(timeout=10, trust_env=False) as http:
        wire = HttpWire(http, url, client="t")
        chain = {"x-forwarded-for": "198.51.100.1, 203.0.113.9, 127.0.0.5"}
        assert wire.call("tools/call", call, headers=chain)[1]["result"]["structuredContent"]["peer"] == "203.0.113.9"
        assert wire.call("tools/call", call)[1]["result"]["structuredContent"]["peer"] == "127.0.0.1"


def test_trusted_proxies_walk_the_chain_and_fail_closed() -> None:
    from mcpkit.transports._peer import TrustedProxies

    tp = TrustedProxies(["10.0.0.0/8", "fd00::1"])
    h = lambda v: [(b"x-forwarded-for", v.encode())]
    assert tp.peer("192.0.2.1", h("203.0.113.9")) == "192.0.2.1"  # not from a trusted proxy: ignored
    assert tp.peer("10.0.0.2", h("203.0.113.9")) == "203.0.113.9"
    assert tp.peer("10.0.0.2", h("203.0.113.9, 10.0.0.3")) == "203.0.113.9"
    assert tp.peer("10.0.0.2", [(b"x-forwarded-for", b"1.1.1.1"), (b"x-forwarded-for", b"203.0.113.9")]) == "203.0.113.9"
    assert tp.peer("10.0.0.2", h("203.0.113.9, not-an-ip")) == "10.0.0.2"  # garbage: the last trusted hop
    assert tp.peer("10.0.0.2", h("10.0.0.4")) == "10.0.0.4"  # all trusted: the left-most
    assert tp.peer("fd00::1", h("2001:db8::7")) == "2001:db8::7"
    assert tp.peer("10.0.0.2", []) == "10.0.0.2"
    assert tp.peer(None, h("203.0.113.9")) is None
    for bad in (["proxy.example"], []):
        with pytest.raises(ValueError):
            TrustedProxies(bad)


def test_peer_aware_is_a_deprecated_no_op() -> None:
    from mcpkit.server.ratelimit import peer_aware

    app = object()
    with pytest.warns(DeprecationWarning):
        assert peer_aware(app) is app


def test_a_legacy_session_carries_the_address_that_opened_it() -> None:
    from tests.helpers.messages import LEGACY, init_msg, note, req, single_reply

    def whoami(http: httpx.Client, url: str) -> Any:
        accept = {"accept": "application/json, text/event-stream"}
        opened = http.post(url, json=init_msg(LEGACY), headers=accept)
        sid = opened.headers["mcp-session-id"]
        session = accept | {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
        assert http.post(url, json=note("notifications/initialized"), headers=session).status_code == 202
        answer = http.post(url, json=req(2, "tools/call", {"name": "whoami", "arguments": {}}), headers=session)
        reply, _ = single_reply(answer.headers["content-type"], answer.text)
        return reply["result"]["structuredContent"]["peer"]

    with running_server(serve(OPS)) as url:
        with httpx.Client(timeout=10, trust_env=False) as one, \
                httpx.Client(timeout=10, trust_env=False,
                             transport=httpx.HTTPTransport(local_address="127.0.0.2")) as two:
            assert whoami(one, url) == "127.0.0.1"
            assert whoami(two, url) == "127.0.0.2"


def test_probe_and_proxy_flags_are_for_http_and_checked() -> None:
    from tests.helpers.cli import mcpkit

    out = mcpkit("serve", "--trust-proxy", "10.0.0.1", OPS)
    assert out.returncode == 2 and "--trust-proxy is for Streamable HTTP: add --http" in out.stderr
    out = mcpkit("serve", "--http", "--port", str(free_port()), "--trust-proxy", "proxy.example", OPS)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == ("mcpkit serve: trusted proxy 'proxy.example' is not an IP address "
                                                   "or network (e.g. 10.0.0.5, 10.0.0.0/8, fd00::/8)"), out.stderr
    out = mcpkit("serve", "--http", "--port", str(free_port()), "--readyz", "/mcp", OPS)
    assert out.returncode == 2 and out.stderr.strip().endswith("the ready probe path /mcp is the MCP endpoint's path")
