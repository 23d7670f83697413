"""mcpkit.auth.OAuth against a real authorization server: npm ``oidc-provider`` (a certified
OpenID provider), installed by scripts/install_oidc.sh and started here on loopback,
configured for PKCE, resource indicators, dynamic registration, DPoP (with and without
nonces) and client credentials.

The tests log in headlessly (they drive the provider's login and consent pages with HTTP),
get tokens, refresh them, and call a protected MCP endpoint: mcpkit's own Server behind a
tiny resource-server check (JWT access tokens verified against the provider's JWKS with
joserfc: issuer, audience = the resource indicator, expiry, scope, and the DPoP binding).
Self-contained: every helper is local.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import html
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from mcpkit import Client, Server
from mcpkit.auth import AuthorizationCode, ClientCredentials, InMemoryTokenStorage, OAuth, OAuthError, Registration
from tests.helpers.oidc import Provider as SharedProvider

uvicorn = pytest.importorskip("uvicorn")
jose_jwt = pytest.importorskip("joserfc.jwt")
from joserfc.jwk import ECKey, KeySet  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VERSION = "2026-07-28"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# ====================================================================== the provider
@pytest.fixture(scope="module")
def install() -> dict[str, str]:
    if shutil.which("npm") is None:
        pytest.skip("npm is needed to install oidc-provider")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "install_oidc.sh")], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"scripts/install_oidc.sh failed:\n{proc.stderr[-3000:]}")
    return dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)


class Provider(SharedProvider):
    """The shared oidc-provider fixture, remembering whether it demands DPoP nonces."""

    def __init__(self, install: dict[str, str], resource: str, *, nonce: bool) -> None:
        super().__init__(install, resource, nonce=nonce)
        self.nonce = nonce


# ====================================================================== the protected MCP endpoint
class ResourceServer:
    """The MCP endpoint at /mcp and its protected resource metadata; checks every token."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.issuer = ""
        self.keys: KeySet | None = None
        self.seen: list[dict[str, Any]] = []  # one entry per authenticated request
        self.rejected = 0
        server = Server("oidc-protected", "1.0.0")

        @server.tool()
        def whoami(text: str) -> str:
            return text

        self.mcp = server.http_app()
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                interface="asgi3")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, issuer: str) -> None:
        self.issuer = issuer
        meta = httpx.get(f"{issuer}/.well-known/openid-configuration").json()
        self.keys = KeySet.import_key_set(httpx.get(meta["jwks_uri"]).json())
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)

    def check(self, headers: dict[str, str]) -> str | None:
        """None when the request may pass; else why not."""
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if not token:
            return "no token"
        assert self.keys is not None
        try:
            claims = jose_jwt.decode(token, self.keys, algorithms=["ES256"]).claims
        except Exception as exc:
            return f"bad token: {type(exc).__name__}"
        aud = claims.get("aud")
        if claims.get("iss") != self.issuer or (aud != self.url and not (isinstance(aud, list) and self.url in aud)):
            return "wrong issuer or audience"
        if claims.get("exp", 0) < time.time() or "mcp:tools" not in str(claims.get("scope", "")).split():
            return "expired or without scope"
        jkt = (claims.get("cnf") or {}).get("jkt")
        if jkt is not None:
            if scheme != "DPoP" or "dpop" not in headers:
                return "a DPoP-bound token without DPoP"
            proof = headers["dpop"]
            header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
            key = ECKey.import_key(header["jwk"])
            p = jose_jwt.decode(proof, key, algorithms=["ES256"]).claims
            if key.thumbprint() != jkt or p["htm"] != "POST" or p["htu"] != self.url:
                return "the DPoP proof does not match"
            if p.get("ath") != _b64u(hashlib.sha256(token.encode()).digest()):
                return "the DPoP proof's ath does not match"
        elif scheme != "Bearer":
            return "unexpected scheme"
        self.seen.append({"scheme": scheme, "sub": claims.get("sub"), "client_id": claims.get("client_id"),
                          "jti": claims.get("jti")})
        return None

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/.well-known/oauth-protected-resource/mcp":
            body = json.dumps({"resource": self.url, "authorization_servers": [self.issuer],
                               "scopes_supported": ["mcp:tools"],
                               "dpop_signing_alg_values_supported": ["ES256"]}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        problem = self.check(headers) if path == "/mcp" else "not found"
        if problem is not None:
            self.rejected += 1
            challenge = (f'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:{self.port}'
                         '/.well-known/oauth-protected-resource/mcp"')
            await send({"type": "http.response.start", "status": 401 if path == "/mcp" else 404,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", challenge.encode())]})
            await send({"type": "http.response.body", "body": json.dumps({"error": problem}).encode()})
            return
        await self.mcp(scope, receive, send)


@pytest.fixture(scope="module", params=[False, True], ids=["no-nonce", "dpop-nonce"])
def stack(request: pytest.FixtureRequest, install: dict[str, str]) -> Iterator[tuple[Provider, ResourceServer]]:
    rs = ResourceServer()
    provider = Provider(install, rs.url, nonce=request.param)
    try:
        rs.start(provider.issuer)
        yield provider, rs
    finally:
        rs.stop()
        provider.stop()


# ====================================================================== a headless person
def person(login: str = "alice") -> Any:
    """An authorizer that logs in and consents on the provider's own HTML pages."""

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
                if resp.status_code == 200 and form and prompt:
                    data = {"prompt": prompt.group(1)}
                    if data["prompt"] == "login":
                        data |= {"login": login, "password": "any"}
                    resp = await browser.post(urljoin(here, html.unescape(form.group(1))), data=data)
                    continue
                raise AssertionError(f"unexpected page: HTTP {resp.status_code} at {here}: {resp.text[:300]}")
        raise AssertionError("too many steps")

    return authorize


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


# ====================================================================== the tests
@pytest.mark.parametrize("dpop", [True, False], ids=["dpop", "bearer"])
def test_login_pkce_registration_refresh_and_call(stack: tuple[Provider, ResourceServer], dpop: bool) -> None:
    provider, rs = stack
    before = len(rs.seen)

    async def go() -> None:
        oauth = OAuth(rs.url, AuthorizationCode(person(), redirect_uri="http://127.0.0.1:8765/callback"),
                      storage=InMemoryTokenStorage(), dpop=None if dpop else False)
        async with Client(rs.url, mode=VERSION, auth=oauth, cache=False) as client:
            assert [t.name for t in await client.list_tools()] == ["whoami"]
            tokens = dict(oauth.tokens or {})
            assert tokens["issuer"] == provider.issuer and tokens["resource"] == rs.url
            assert tokens["token_type"] == ("DPoP" if dpop else "Bearer")
            assert tokens.get("refresh_token"), "offline_access with prompt=consent should yield a refresh token"
            # Expire the access token locally: the next request refreshes first.
            assert oauth.tokens is not None
            oauth.tokens["expires_at"] = time.time()
            result = await client.call_tool("whoami", {"text": "hello"})
            assert result.content[0].text == "hello"
            assert oauth.tokens["access_token"] != tokens["access_token"]
            # A 401 for a token the server no longer takes: one refresh, then the retry works.
            oauth.tokens["access_token"] = "revoked"
            result = await client.call_tool("whoami", {"text": "again"})
            assert result.content[0].text == "again"

    run(go())
    seen = rs.seen[before:]
    assert {s["scheme"] for s in seen} == {"DPoP" if dpop else "Bearer"} and {s["sub"] for s in seen} == {"alice"}
    assert len(seen) >= 3


def test_interactive_login_is_refused_at_the_consent_step(stack: tuple[Provider, ResourceServer]) -> None:
    _, rs = stack

    async def deny(url: str, redirect_uri: str) -> str:
        # The person closes the window: the redirect carries error=access_denied.
        import urllib.parse

        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        return redirect_uri + "?" + urllib.parse.urlencode({"error": "access_denied", "state": q["state"][0],
                                                            "iss": stack[0].issuer})

    async def go() -> None:
        oauth = OAuth(rs.url, AuthorizationCode(deny, redirect_uri="http://127.0.0.1:8765/callback"))
        async with Client(rs.url, mode=VERSION, auth=oauth, cache=False) as client:
            await client.list_tools()

    with pytest.raises(OAuthError) as info:
        run(go())
    assert info.value.error == "access_denied"


def test_client_credentials(stack: tuple[Provider, ResourceServer]) -> None:
    provider, rs = stack
    before = len(rs.seen)

    async def go() -> None:
        oauth = OAuth(rs.url, ClientCredentials(), scope="mcp:tools",
                      registration=Registration(client_id="cc-client", client_secret="cc-secret", issuer=provider.issuer))
        async with Client(rs.url, mode=VERSION, auth=oauth, cache=False) as client:
            result = await client.call_tool("whoami", {"text": "service"})
            assert result.content[0].text == "service"
            assert oauth.tokens is not None and oauth.tokens["token_type"] == "DPoP"
            # With nonces required, the token endpoint's use_dpop_nonce answer was honoured.
            assert (oauth.dpop.as_nonce is not None) == provider.nonce

    run(go())
    assert [s["client_id"] for s in rs.seen[before:]] == ["cc-client"]


def test_wrong_client_secret_is_a_clear_error(stack: tuple[Provider, ResourceServer]) -> None:
    provider, rs = stack

    async def go() -> None:
        oauth = OAuth(rs.url, ClientCredentials(), scope="mcp:tools",
                      registration=Registration(client_id="cc-client", client_secret="WRONG-secret-xyz",
                                                issuer=provider.issuer))
        async with Client(rs.url, mode=VERSION, auth=oauth, cache=False) as client:
            await client.list_tools()

    with pytest.raises(OAuthError) as info:
        run(go())
    assert info.value.error == "invalid_client" and "WRONG-secret-xyz" not in str(info.value)


# ====================================================================== mcpkit login / logout
def test_login_cli_interactive_with_loopback_redirect(stack: tuple[Provider, ResourceServer], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from mcpkit.cli import _login

    provider, rs = stack
    store = tmp_path / "tokens.json"
    browsed: list[str] = []

    def fake_browser(url: str) -> bool:
        # A person in a browser: log in, consent, and land on the loopback listener.
        def visit() -> None:
            from urllib.parse import parse_qs, urlsplit

            redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
            target = asyncio.run(person("bob")(url, redirect_uri))
            browsed.append(redirect_uri)
            httpx.get(target, timeout=10)

        threading.Thread(target=visit, daemon=True).start()
        return True

    monkeypatch.setattr("webbrowser.open", fake_browser)
    assert _login.login([rs.url, "--token-store", str(store)]) == 0
    out = capsys.readouterr()
    assert f"Logged in to {rs.url}" in out.out and "refreshable" in out.out
    assert browsed and browsed[0].startswith("http://127.0.0.1:") and browsed[0].endswith("/callback")
    data = json.loads(store.read_text())
    record = data["tokens"][rs.url]
    assert record["issuer"] == provider.issuer
    for secret in (record["access_token"], record["refresh_token"]):
        assert secret not in out.out + out.err
    assert stat_mode(store) == 0o600
    # A later command reuses the stored tokens: no browser.
    browsed.clear()

    async def later() -> str:
        args = argparse.Namespace(bearer=None, client_credentials=False, no_login=True, token_store=str(store),
                                  client_id=None, client_secret=None, private_key=None, signing_alg="ES256",
                                  scope=None, no_browser=True)
        auth = _login.auth_from_args(args, rs.url)
        assert auth is not None
        async with Client(rs.url, mode=VERSION, auth=auth, cache=False) as client:
            return str((await client.call_tool("whoami", {"text": "stored"})).content[0].text)

    # DPoP-bound tokens come back with their key (kept beside them in the 0600 file).
    assert record["token_type"] == "DPoP" and record["dpop_jwk"]["d"]
    assert run(later()) == "stored" and not browsed
    # logout revokes the refresh token at the provider (RFC 7009), then forgets both.
    assert _login.logout([rs.url, "--token-store", str(store)]) == 0
    assert "Logged out" in capsys.readouterr().out
    assert rs.url not in json.loads(store.read_text())["tokens"]
    client = json.loads(store.read_text())["clients"][provider.issuer]
    introspect = httpx.post(f"{provider.issuer}/token/introspection", data={"token": record["refresh_token"]},
                            auth=(client["client_id"], client.get("client_secret", ""))) if client.get("client_secret") \
        else httpx.post(f"{provider.issuer}/token/introspection",
                        data={"token": record["refresh_token"], "client_id": client["client_id"]})
    assert introspect.status_code == 200 and introspect.json().get("active") is False


def test_login_cli_client_credentials(stack: tuple[Provider, ResourceServer], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from mcpkit.cli import _login

    provider, rs = stack
    store = tmp_path / "t.json"
    argv = ["login", rs.url, "--client-credentials", "--client-id", "cc-client", "--client-secret", "cc-secret",
            "--scope", "mcp:tools", "--token-store", str(store), "--issuer", provider.issuer]
    assert _login.main(argv) == 0
    assert "cc-secret" not in capsys.readouterr().out
    bad = [*argv[:5], "--client-secret", "nope-WRONG", *argv[7:], "--force"]
    assert _login.main(bad) == 1
    err = capsys.readouterr().err
    assert "invalid_client" in err and "nope-WRONG" not in err


def stat_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777
