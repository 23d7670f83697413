"""Per-operation scopes beyond tools/call (issue 18, items 5 and 9).

A protected server (``ResourceServerAuth`` with real signed JWTs from the test issuer) behind
the ASGI app: ``completion/complete`` needs the scopes of the prompt or resource it refers to
and answers a forbidden reference exactly like an unknown one (both eras); subscriptions
(``subscriptions/listen`` resource URIs, legacy ``resources/subscribe``) are refused like a
read of the resource; resource updates under a subscribed URI never reach a caller who may
not read them; ``resources/read`` checks and serves the same template.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc")

from mcpkit import Server
from mcpkit.auth.server import JWTVerifier, Principal, ResourceServerAuth
from mcpkit.protocol import codec
from tests.helpers.issuer import ISSUER, TestIssuer
from tests.helpers.messages import JSON_ACCEPT, LEGACY, META_CAPS, META_VERSION, MODERN, body, headers_for, init_msg, note
from tests.helpers.servers import ASGI_URL, asgi_client


def make_server(*, hidden: bool = True) -> Server:
    """A server whose admin prompt and secret template exist only when ``hidden``."""
    server = Server("scoped", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.prompt()
    def greeting(name: str) -> str:
        return f"hello {name}"

    @server.completion(prompt="greeting")
    def names(argument: str, value: str, context: dict) -> list[str]:
        return ["alice", "bob"]

    @server.resource("public://{name}")
    def public(name: str) -> str:
        return name

    if hidden:
        @server.prompt(scopes=["mcp:admin"])
        def admin_prompt(target: str) -> str:
            return f"reset {target}"

        @server.completion(prompt="admin_prompt")
        def targets(argument: str, value: str, context: dict) -> list[str]:
            return ["prod-db", "billing"]

        @server.resource("secret://{key}", scopes=["vault:read"])
        def secret(key: str) -> str:
            return "gold"

        @server.completion(resource="secret://{key}")
        def keys(argument: str, value: str, context: dict) -> list[str]:
            return ["root-key"]

    # Item 9: the first template takes the lesser scope but only numeric ids; the second,
    # admin-only, takes any name. "items://abc" is served by the second: it needs mcp:admin.
    @server.resource("items://{id}", scopes=["mcp:tools"])
    def item(id: int) -> str:
        return f"item {id}"

    @server.resource("items://{name}", scopes=["mcp:admin"])
    def admin_item(name: str) -> str:
        return f"admin data for {name}"

    return server


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


def _client(issuer: TestIssuer, server: Server) -> Any:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), resource=ASGI_URL)
    return asgi_client(server.http_app(auth=auth))


@pytest.fixture(scope="module")
def http(issuer: TestIssuer) -> Iterator[httpx.Client]:
    with _client(issuer, make_server()) as c:
        yield c


@pytest.fixture(scope="module")
def plain(issuer: TestIssuer) -> Iterator[httpx.Client]:
    """The same server without the hidden prompt and template."""
    with _client(issuer, make_server(hidden=False)) as c:
        yield c


def post(http: httpx.Client, msg: dict, token: str) -> httpx.Response:
    return http.post(ASGI_URL, json=msg, headers=headers_for(msg) | {"Authorization": f"Bearer {token}"})


def complete_prompt(name: str) -> dict:
    return body("completion/complete", {"ref": {"type": "ref/prompt", "name": name},
                                        "argument": {"name": "target", "value": ""}})


def complete_resource(uri: str) -> dict:
    return body("completion/complete", {"ref": {"type": "ref/resource", "uri": uri},
                                        "argument": {"name": "key", "value": ""}})


# ====================================================================== item 5: completion (2026-07-28)
def test_completion_of_a_forbidden_prompt_is_answered_like_an_unknown_one(
        http: httpx.Client, plain: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)  # scope mcp:tools only
    hidden = post(http, complete_prompt("admin_prompt"), token)
    unknown = post(plain, complete_prompt("admin_prompt"), token)
    assert unknown.json()["error"]["code"] == -32602
    assert (hidden.status_code, hidden.content) == (unknown.status_code, unknown.content)
    assert "prod-db" not in hidden.text
    # With the prompt's scope, completion works.
    admin = issuer.token(ASGI_URL, scope="mcp:tools mcp:admin")
    assert post(http, complete_prompt("admin_prompt"), admin).json()["result"]["completion"]["values"] == \
        ["prod-db", "billing"]
    # An unscoped prompt completes for everyone.
    ok = post(http, body("completion/complete", {"ref": {"type": "ref/prompt", "name": "greeting"},
                                                 "argument": {"name": "name", "value": ""}}), token)
    assert ok.json()["result"]["completion"]["values"] == ["alice", "bob"]


def test_completion_of_a_forbidden_template_is_answered_like_an_unknown_one(
        http: httpx.Client, plain: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)
    hidden = post(http, complete_resource("secret://{key}"), token)
    unknown = post(plain, complete_resource("secret://{key}"), token)
    assert unknown.json()["error"]["code"] == -32602
    assert (hidden.status_code, hidden.content) == (unknown.status_code, unknown.content)
    vault = issuer.token(ASGI_URL, scope="mcp:tools vault:read")
    assert post(http, complete_resource("secret://{key}"), vault).json()["result"]["completion"]["values"] == ["root-key"]


# ====================================================================== item 5: completion (2025-11-25)
def _session(http: httpx.Client, token: str) -> dict[str, str]:
    auth = {"Authorization": f"Bearer {token}"}
    resp = http.post(ASGI_URL, json=init_msg(caps={}), headers=JSON_ACCEPT | auth)
    assert resp.status_code == 200, resp.text
    h = JSON_ACCEPT | auth | {"Mcp-Session-Id": resp.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    assert http.post(ASGI_URL, json=note("notifications/initialized"), headers=h).status_code == 202
    return h


def _legacy(msg: dict) -> dict:
    msg = dict(msg)
    msg["params"] = {k: v for k, v in msg["params"].items() if k != "_meta"}
    return msg


def test_legacy_completion_of_forbidden_references_is_answered_like_unknown_ones(
        http: httpx.Client, plain: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)
    h_hidden, h_plain = _session(http, token), _session(plain, token)
    for msg in (complete_prompt("admin_prompt"), complete_resource("secret://{key}")):
        hidden = http.post(ASGI_URL, json=_legacy(msg), headers=h_hidden)
        unknown = plain.post(ASGI_URL, json=_legacy(msg), headers=h_plain)
        assert unknown.json()["error"]["code"] == -32602, unknown.text
        assert (hidden.status_code, hidden.content) == (unknown.status_code, unknown.content)
    admin = _session(http, issuer.token(ASGI_URL, scope="mcp:tools mcp:admin"))
    resp = http.post(ASGI_URL, json=_legacy(complete_prompt("admin_prompt")), headers=admin)
    assert resp.json()["result"]["completion"]["values"] == ["prod-db", "billing"]


# ====================================================================== item 5: subscriptions
def _scope_challenge(resp: httpx.Response) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', resp.headers["www-authenticate"]))


def test_listen_to_a_forbidden_resource_is_refused_like_a_read(http: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)
    read = post(http, body("resources/read", {"uri": "secret://root"}), token)
    listen = body("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["public://a", "secret://root"]}})
    server = make_server()
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), resource=ASGI_URL)

    async def run() -> httpx.Response | None:
        # A granted listen is an endless stream: bounded here, and ended if it was granted.
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=server.http_app(auth=auth))) as client:
            try:
                return await asyncio.wait_for(client.post(ASGI_URL, json=listen, headers=headers_for(listen) | {
                    "Authorization": f"Bearer {token}"}), 3)
            except TimeoutError:
                server.close_listeners()
                return None

    resp = asyncio.run(run())
    assert resp is not None, "the listen was granted: its stream stayed open"
    assert read.status_code == resp.status_code == 403
    assert _scope_challenge(resp)["error"] == "insufficient_scope"
    assert "vault:read" in _scope_challenge(resp)["scope"].split()
    assert resp.json()["error"] == read.json()["error"]


def test_legacy_subscribe_to_a_forbidden_resource_is_refused_like_a_read(http: httpx.Client, issuer: TestIssuer) -> None:
    h = _session(http, issuer.token(ASGI_URL))
    sub = {"jsonrpc": "2.0", "id": 7, "method": "resources/subscribe", "params": {"uri": "secret://root"}}
    read = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "secret://root"}}
    resp, read_resp = http.post(ASGI_URL, json=sub, headers=h), http.post(ASGI_URL, json=read, headers=h)
    assert resp.status_code == read_resp.status_code == 403
    assert _scope_challenge(resp)["error"] == "insufficient_scope"
    assert resp.json() == read_resp.json()
    ok = {"jsonrpc": "2.0", "id": 8, "method": "resources/subscribe", "params": {"uri": "public://a"}}
    assert http.post(ASGI_URL, json=ok, headers=h).json()["result"] == {}


def _principal(*scopes: str) -> Principal:
    return Principal(subject="alice", client_id="app-1", scopes=frozenset(scopes), issuer=ISSUER)


def test_listen_stream_drops_updates_of_resources_the_caller_may_not_read() -> None:
    server = make_server()

    async def run() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []

        async def emit(method: str, params: dict[str, Any]) -> None:
            got.append({"method": method, **params})

        # A subscription to a parent URI (it needs no scope of its own) covers what is under it.
        msg = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
               "params": {"_meta": {META_VERSION: MODERN, META_CAPS: {}},
                          "notifications": {"resourceSubscriptions": ["secret://", "public://"]}}}
        req = codec.decode(codec.encode_request(1, msg["method"], msg["params"]))
        assert type(req) is codec.Request
        checked = server.check(req)
        task = asyncio.ensure_future(server.run_checked(req, checked, emit, auth=_principal("mcp:tools")))
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.01)
        server.notify_resource_updated("secret://root")
        server.notify_resource_updated("public://a")
        await asyncio.sleep(0.1)
        server.close_listeners()
        await asyncio.wait_for(task, 5)
        return got

    got = asyncio.run(run())
    updated = [m["uri"] for m in got if m["method"] == "notifications/resources/updated"]
    assert updated == ["public://a"]


def test_legacy_session_drops_updates_of_resources_the_caller_may_not_read() -> None:
    server = make_server()

    async def run() -> list[bytes]:
        sent: list[bytes] = []

        async def send(data: bytes) -> None:
            sent.append(data)

        session = server.open_legacy_session(send=send)
        auth = _principal("mcp:tools")
        init = codec.decode(codec.encode_request(1, "initialize", init_msg(caps={})["params"]))
        assert type(init) is codec.Request
        assert (await session.handle(init, auth=auth)).error_code is None
        for uri in ("secret://", "public://"):
            sub = codec.decode(codec.encode_request(2, "resources/subscribe", {"uri": uri}))
            assert type(sub) is codec.Request
            assert (await session.handle(sub, auth=auth)).error_code is None
        server.notify_resource_updated("secret://root")
        server.notify_resource_updated("public://a")
        await asyncio.sleep(0.1)
        session.close()
        return sent

    sent = b"".join(asyncio.run(run()))
    assert b"public://a" in sent and b"secret://root" not in sent


# ====================================================================== item 9: one template, checked and served
def test_read_checks_the_scopes_of_the_template_it_serves(http: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)  # mcp:tools: enough for items://{id}, not for the admin template
    numeric = post(http, body("resources/read", {"uri": "items://5"}), token)
    assert numeric.status_code == 200 and numeric.json()["result"]["contents"][0]["text"] == "item 5"
    named = post(http, body("resources/read", {"uri": "items://abc"}), token)
    assert named.status_code == 403, named.text
    assert "admin data" not in named.text
    assert "mcp:admin" in _scope_challenge(named)["scope"].split()
    admin = issuer.token(ASGI_URL, scope="mcp:tools mcp:admin")
    served = post(http, body("resources/read", {"uri": "items://abc"}), admin)
    assert served.json()["result"]["contents"][0]["text"] == "admin data for abc"


def test_required_scopes_and_the_handler_resolve_the_same_template() -> None:
    server = make_server()
    assert server.required_scopes("resources/read", {"uri": "items://abc"}) == {"mcp:admin"}
    assert server.required_scopes("resources/read", {"uri": "items://5"}) == {"mcp:tools"}
    assert server.required_scopes("resources/subscribe", {"uri": "secret://x"}) == {"vault:read"}
    listen = {"notifications": {"resourceSubscriptions": ["secret://x", "items://abc", 5]}}
    assert server.required_scopes("subscriptions/listen", listen) == {"vault:read", "mcp:admin"}
