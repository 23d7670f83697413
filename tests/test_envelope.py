"""One envelope, one call: an HTTP POST reaches the server through exactly one call.

The seam between ``mcpkit.transports`` and the server is the ``Dispatcher`` protocol. The
app here serves a counting wrapper of a real :class:`mcpkit.Server`, so every call the HTTP
transport makes into the server is seen; a profiler then counts the calls that cross from
transport code into server code (the hops over the seam) while one POST is answered.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import httpx
import pytest

from mcpkit import Server
from mcpkit.auth.server import Principal, ResourceServerAuth
from mcpkit.transports.http import HttpApp

from .helpers.aio import run

V = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}
URL = "http://127.0.0.1:8000/mcp"


class Counting:
    """A Dispatcher that forwards to a server and counts each call made through it."""

    def __init__(self, server: Server) -> None:
        self.inner = server
        self.calls: Counter[str] = Counter()
        self.serving = server.serving

    def serve(self, req: Any, envelope: Any) -> Any:
        self.calls["serve"] += 1
        return self.inner.serve(req, envelope)

    def required_scopes(self, method: str, params: Any) -> Any:
        self.calls["required_scopes"] += 1
        return self.inner.required_scopes(method, params)

    def open_legacy_session(self, **kw: Any) -> Any:
        self.calls["open_legacy_session"] += 1
        return self.inner.open_legacy_session(**kw)

    def close_listeners(self) -> None:
        self.calls["close_listeners"] += 1
        self.inner.close_listeners()

    def running(self) -> Any:
        self.calls["running"] += 1
        return self.inner.running()

    async def readiness(self, timeout: float = 2.0) -> dict[str, str]:
        self.calls["readiness"] += 1
        return await self.inner.readiness(timeout)


class _Verifier:
    """Tokens are ``scope1+scope2``: the principal holds those scopes."""

    async def verify(self, token: str, request: Any) -> Principal | None:
        return Principal(subject="alice", client_id="c", scopes=frozenset(token.split("+")), issuer="https://as")


def _server(auth: Any = None) -> Server:
    server = Server("envelope", auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool(scopes=["admin"])
    def wipe() -> str:
        return "wiped"

    return server


def _call(name: str, arguments: dict[str, Any], rid: int = 1) -> tuple[dict[str, Any], dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"_meta": META, "name": name, "arguments": arguments}}
    headers = {"MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": name,
               "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return body, headers


async def _post(app: Any, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport) as client:
        return await client.post(URL, content=json.dumps(body), headers=headers)


def test_a_post_makes_one_server_call() -> None:
    counting = Counting(_server())
    app = HttpApp(counting)
    resp = run(_post(app, *_call("echo", {"text": "hi"})))
    assert resp.status_code == 200
    assert resp.json()["result"]["content"][0]["text"] == "hi"
    assert counting.calls == {"serve": 1}


def test_a_rejected_post_makes_one_server_call_too() -> None:
    counting = Counting(_server())
    app = HttpApp(counting)
    body, headers = _call("echo", {"text": "hi"})
    headers["Mcp-Name"] = "other"  # the header disagrees with the body
    resp = run(_post(app, body, headers))
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32020
    # A header error outranks a version error: the order of the rules holds inside the one call.
    body["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    resp = run(_post(app, body, {**headers, "MCP-Protocol-Version": "1999-01-01"}))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == -32020
    assert counting.calls == {"serve": 2}


def _protected() -> tuple[Counting, HttpApp]:
    auth = ResourceServerAuth(_Verifier(), resource=URL, authorization_servers=["https://as"], scopes=["mcp"])
    counting = Counting(_server(auth))
    return counting, HttpApp(counting)


def test_an_authenticated_post_makes_one_server_call() -> None:
    counting, app = _protected()
    body, headers = _call("wipe", {})
    resp = run(_post(app, body, {**headers, "Authorization": "Bearer mcp+admin"}))
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["content"][0]["text"] == "wiped"
    assert counting.calls == {"serve": 1}


def test_missing_scopes_are_refused_from_the_one_call() -> None:
    counting, app = _protected()
    body, headers = _call("wipe", {})
    resp = run(_post(app, body, {**headers, "Authorization": "Bearer mcp"}))
    assert resp.status_code == 403
    challenge = resp.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp admin"' in challenge
    assert resp.json()["id"] == 1
    assert counting.calls == {"serve": 1}


def test_a_401_asks_only_for_the_scopes() -> None:
    counting, app = _protected()
    body, headers = _call("wipe", {})
    resp = run(_post(app, body, headers))
    assert resp.status_code == 401
    assert 'scope="mcp admin"' in resp.headers["www-authenticate"]
    assert counting.calls == {"required_scopes": 1}


def _layer(module: str) -> str | None:
    if module.startswith("mcpkit.server.auth"):
        return "auth"  # the Authenticator: the transport's own seam, not the Dispatcher
    for layer in ("transports", "server", "protocol"):
        if module.startswith(f"mcpkit.{layer}"):
            return layer
    return None


@pytest.mark.parametrize("protected", [False, True])
def test_hops_over_the_seam(protected: bool) -> None:
    """Calls from transport code into server code while one POST is answered: one,
    ``Server.serve``, whose coroutine (``dispatch``) the transport then awaits; nothing in
    the server calls back into the transport. (The inbound check in ``protocol`` asks the
    server two pure lookups it is handed: a tool's header annotations, the scopes.)"""
    auth = None
    if protected:
        auth = ResourceServerAuth(_Verifier(), resource=URL, authorization_servers=["https://as"], scopes=["mcp"])
    app = HttpApp(_server(auth))
    body, headers = _call("echo", {"text": "hi"})
    if protected:
        headers["Authorization"] = "Bearer mcp"
    hops: dict[tuple[str | None, str | None, bool], list[str]] = {}
    started: set[Any] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        resumable = bool(frame.f_code.co_flags & 0x380)  # a coroutine or generator: its first entry only
        if resumable:
            if frame in started:
                return
            started.add(frame)
        callee = _layer(frame.f_globals.get("__name__", ""))
        caller = _layer(frame.f_back.f_globals.get("__name__", ""))
        if callee != caller:
            hops.setdefault((caller, callee, resumable), []).append(frame.f_code.co_qualname)

    async def once() -> httpx.Response:
        sys.setprofile(profile)
        try:
            return await _post(app, body, headers)
        finally:
            sys.setprofile(None)

    resp = run(once())
    assert resp.status_code == 200, resp.text
    assert hops[("transports", "server", False)] == ["Server.serve"], hops
    assert hops[("transports", "server", True)] == ["dispatch"], hops
    assert not [k for k in hops if k[0] == "server" and k[1] == "transports"], hops
    assert sorted(hops[("protocol", "server", False)]) == (
        ["Server.required_scopes", "Server.tool_header_map"] if protected else ["Server.tool_header_map"]), hops
