"""The resource server against a real authorization server: npm ``oidc-provider`` (a certified
OpenID provider) issues ES256 JWT access tokens for our MCP endpoint (resource indicators);
an mcpkit server protected by ``ResourceServerAuth(issuer=...)`` runs on real uvicorn and
finds the provider's keys through its discovery metadata.

- client-credentials tokens (Bearer and DPoP-bound) from the provider are served; tokens
  for another resource are refused; the challenge leads a client to the provider;
- the official Python SDK's OAuth client (``mcp``, in its own venv) discovers the metadata
  from the 401, registers itself, logs in through the provider's pages (driven headlessly),
  and calls a tool, on both eras.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc")
pytest.importorskip("uvicorn")

from mcpkit import Context, Server
from mcpkit.auth.server import ResourceServerAuth
from tests.helpers.issuer import DPoPKey
from tests.helpers.messages import body, headers_for
from tests.helpers.oidc import Provider, ThreadedServer, install
from tests.helpers.paths import ROOT
from tests.helpers.peers import install_peers, no_peer_error, run_peer_json
from tests.helpers.servers import free_port


def protected_server() -> Server:
    server = Server("oidc-protected", "1.0.0")

    @server.tool()
    def whoami(ctx: Context) -> dict:
        a = ctx.auth
        return {"sub": a.subject, "client": a.client_id, "scopes": sorted(a.scopes), "bound": a.jkt is not None}

    @server.tool(scopes=["mcp:admin"])
    def reset() -> str:
        return "never: the provider does not grant mcp:admin"

    return server


class Stack:
    def __init__(self, nonce: bool = False) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.provider = Provider(install(), self.url, nonce=nonce)
        self.auth = ResourceServerAuth(issuer=self.provider.issuer, scopes=["mcp:tools"])
        self.http = ThreadedServer(protected_server().http_app(auth=self.auth), port)

    def stop(self) -> None:
        self.http.stop()
        self.provider.stop()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    s = Stack()
    try:
        yield s
    finally:
        s.stop()


def call(url: str, token: str | None, name: str = "whoami", scheme: str = "Bearer", **extra: str) -> httpx.Response:
    msg = body("tools/call", {"name": name, "arguments": {}})
    h = headers_for(msg) | extra
    if token:
        h["Authorization"] = f"{scheme} {token}"
    return httpx.post(url, json=msg, headers=h, timeout=10)


def result(resp: httpx.Response) -> Any:
    assert resp.status_code == 200, (resp.status_code, resp.text, resp.headers.get("www-authenticate"))
    return resp.json()["result"]["structuredContent"]


def test_challenge_and_metadata_lead_to_the_provider(stack: Stack) -> None:
    resp = call(stack.url, None)
    assert resp.status_code == 401
    challenge = resp.headers["www-authenticate"]
    meta_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
    assert meta_url == stack.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert 'scope="mcp:tools"' in challenge
    doc = httpx.get(meta_url).json()
    assert doc["resource"] == stack.url and doc["authorization_servers"] == [stack.provider.issuer]
    assert httpx.get(f"{doc['authorization_servers'][0]}/.well-known/openid-configuration").status_code == 200


def test_client_credentials_token_from_the_provider_is_served(stack: Stack) -> None:
    tokens = stack.provider.client_credentials(stack.url)
    assert tokens["token_type"].lower() == "bearer" and tokens["access_token"].count(".") == 2
    assert result(call(stack.url, tokens["access_token"])) == {"sub": "cc-client", "client": "cc-client", "scopes": ["mcp:tools"],
                                                               "bound": False}
    # A scope the provider does not grant: 403 naming it.
    resp = call(stack.url, tokens["access_token"], "reset")
    assert resp.status_code == 403 and 'scope="mcp:tools mcp:admin"' in resp.headers["www-authenticate"]


def test_provider_token_altered_or_for_another_server_is_refused(stack: Stack) -> None:
    token = stack.provider.client_credentials(stack.url)["access_token"]
    head, payload, sig = token.split(".")
    forged = ".".join([head, payload, sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")])
    assert call(stack.url, forged).status_code == 401
    # The same provider, another MCP server: the audience does not match.
    other_port = free_port()
    other = ThreadedServer(protected_server().http_app(auth=ResourceServerAuth(issuer=stack.provider.issuer)), other_port)
    try:
        resp = call(f"http://127.0.0.1:{other_port}/mcp", token)
        assert resp.status_code == 401 and "audience" in resp.headers["www-authenticate"]
    finally:
        other.stop()
    assert result(call(stack.url, token))["client"] == "cc-client"


def test_dpop_bound_token_from_the_provider(stack: Stack) -> None:
    key = DPoPKey()
    tokens = stack.provider.client_credentials(stack.url, dpop=key.proof("POST", f"{stack.provider.issuer}/token", None))
    assert tokens["token_type"] == "DPoP"
    token = tokens["access_token"]
    assert result(call(stack.url, token, scheme="DPoP", DPoP=key.proof("POST", stack.url, token)))["bound"] is True
    # Stolen without its key: as Bearer, or with a proof from another key, or replayed.
    assert call(stack.url, token).status_code == 401
    assert call(stack.url, token, scheme="DPoP", DPoP=DPoPKey().proof("POST", stack.url, token)).status_code == 401
    proof = key.proof("POST", stack.url, token)
    assert call(stack.url, token, scheme="DPoP", DPoP=proof).status_code == 200
    assert call(stack.url, token, scheme="DPoP", DPoP=proof).status_code == 401


# ====================================================================== the official SDK
@pytest.fixture(scope="module")
def peer_python() -> str:
    return install_peers([], ("PEER_PYTHON",), "the official MCP Python SDK")["PEER_PYTHON"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_official_sdk_oauth_client_calls_a_tool(stack: Stack, peer_python: str, mode: str) -> None:
    out = run_peer_json([peer_python, str(ROOT / "tests" / "interop" / "sdk_oauth_peer.py"), stack.url, mode, "alice"],
                        cwd=ROOT / "tests" / "interop", timeout=120)
    no_peer_error(out, f"the SDK's OAuth client ({mode})")
    assert out["authorizationUrl"]["resource"] == stack.url
    assert out["authorizationUrl"]["code_challenge_method"] == "S256"
    assert "reset" not in out["tools"] and "whoami" in out["tools"]
    who = out["whoami"]["structuredContent"]
    assert who["sub"] == "alice" and who["scopes"] == ["mcp:tools"] and who["client"]


# ====================================================================== the command-line options
@pytest.mark.parametrize("scope", ["mcp:tools", "mcp:admin"])
def test_demo_protected_by_the_cli_options(scope: str) -> None:
    """``mcpkit serve --http --port P --auth-issuer ISSUER --auth-scope S examples/demo.py``: 401 with the challenge, the metadata, a provider
    token served; 403 when the server-wide scope is one the provider does not grant."""
    import subprocess
    import sys
    import time

    from tests.helpers.paths import subprocess_env

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    provider = Provider(install(), url)
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                             "--auth-issuer", provider.issuer, "--auth-scope", scope,
                             str(ROOT / "examples" / "demo.py")], env=subprocess_env(), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while True:
            try:
                resp = call(url, None, "add")
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        assert resp.status_code == 401
        challenge = resp.headers["www-authenticate"]
        meta = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{meta}"' in challenge and f'scope="{scope}"' in challenge
        doc = httpx.get(meta).json()
        assert doc["resource"] == url and doc["authorization_servers"] == [provider.issuer]
        token = provider.client_credentials(url)["access_token"]
        msg = body("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        resp = httpx.post(url, json=msg, headers=headers_for(msg) | {"Authorization": f"Bearer {token}"})
        if scope == "mcp:tools":
            assert resp.status_code == 200 and resp.json()["result"]["structuredContent"] == {"result": 5}
            assert call(url, token + "x", "add").status_code == 401
        else:
            assert resp.status_code == 403
            assert 'error="insufficient_scope"' in resp.headers["www-authenticate"]
    finally:
        proc.terminate()
        proc.wait(5)
        provider.stop()


# ====================================================================== mcpkit's own OAuth client
def _headless_person(login: str = "alice") -> Any:
    """An authorizer that logs in and consents on the provider's own pages, over HTTP."""
    import html
    from urllib.parse import urljoin

    async def authorize(url: str, redirect_uri: str) -> str:
        async with httpx.AsyncClient(follow_redirects=False, timeout=10) as browser:
            resp = await browser.get(url)
            for _ in range(20):
                here = str(resp.request.url)
                if resp.status_code in (302, 303) and "location" in resp.headers:
                    target = urljoin(here, resp.headers["location"])
                    if target.startswith(redirect_uri):
                        return target
                    resp = await browser.get(target)
                    continue
                form = re.search(r'<form[^>]*action="([^"]+)"', resp.text)
                prompt = re.search(r'name="prompt" value="(\w+)"', resp.text)
                assert resp.status_code == 200 and form and prompt, (resp.status_code, here, resp.text[:300])
                data = {"prompt": prompt.group(1)}
                if data["prompt"] == "login":
                    data |= {"login": login, "password": "any"}
                resp = await browser.post(urljoin(here, html.unescape(form.group(1))), data=data)
        raise AssertionError("too many steps")

    return authorize


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("grant", ["authorization_code", "client_credentials"])
def test_mcpkit_oauth_client_end_to_end(stack: Stack, mode: str, grant: str) -> None:
    """mcpkit's Client with its OAuth (the oauth-client branch; skipped until it is merged):
    PKCE login (or client credentials), DPoP-bound tokens, both eras, on our protected server."""
    auth_mod = pytest.importorskip("mcpkit.auth")
    if not hasattr(auth_mod, "OAuth"):
        pytest.skip("mcpkit.auth.OAuth (the OAuth client) is not on this branch yet")
    import asyncio

    from mcpkit import Client

    if grant == "client_credentials":
        registration = auth_mod.Registration(client_id="cc-client", client_secret="cc-secret",
                                             issuer=stack.provider.issuer)  # a secret is bound to its issuer
        oauth = auth_mod.OAuth(stack.url, auth_mod.ClientCredentials(), registration=registration, scope="mcp:tools")
    else:
        grant = auth_mod.AuthorizationCode(_headless_person(), redirect_uri="http://127.0.0.1:8765/callback")
        oauth = auth_mod.OAuth(stack.url, grant, storage=auth_mod.InMemoryTokenStorage())

    async def go() -> Any:
        async with Client(stack.url, mode=mode, auth=oauth, cache=False) as client:
            names = [t.name for t in await client.list_tools()]
            assert "whoami" in names and "reset" not in names
            return (await client.call_tool("whoami", {})).structuredContent

    who = asyncio.run(asyncio.wait_for(go(), 60))
    assert who["scopes"] == ["mcp:tools"]
    assert who["sub"] == ("cc-client" if grant == "client_credentials" else "alice")
