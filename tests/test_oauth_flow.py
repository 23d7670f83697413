"""mcpkit.auth.OAuth against an in-process mock authorization server and MCP server (ASGI,
through httpx's ASGI transport): the core flow, refresh, concurrency, storage, and bad input
(each a clear OAuthError, no secret in the message or the logs).

Self-contained: the helpers are local; the MCP side is mcpkit's own Server behind a token check.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import stat
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpkit import Client, Server
from mcpkit.auth import (
    AuthorizationCode,
    FileTokenStorage,
    InMemoryTokenStorage,
    LoopbackRedirect,
    Network,
    OAuth,
    OAuthError,
    Registration,
    follow_redirects,
)
from mcpkit.client.oauth._challenge import parse_www_authenticate
from mcpkit.client.oauth._discovery import as_metadata_urls, prm_urls, resource_covers
from tests.helpers.aio import read_body

BASE = "http://localhost"
MCP_URL = f"{BASE}/mcp"
ISSUER = f"{BASE}/as"
REDIRECT = "http://127.0.0.1:9/callback"
VERSION = "2026-07-28"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def demo_server() -> Server:
    server = Server("oauth-demo", "1.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def _send(send: Any, status: int, body: bytes | dict[str, Any] | str, headers: list[tuple[bytes, bytes]] | None = None,
                content_type: bytes = b"application/json") -> None:
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class Mock:
    """An authorization server at /as plus a protected MCP endpoint at /mcp. Tests change
    its attributes to misbehave; ``log`` records every request (method, path, form/query)."""

    def __init__(self) -> None:
        self.mcp_app = demo_server().http_app()
        self.log: list[tuple[str, str, dict[str, str]]] = []
        self.valid: set[str] = set()
        self.refresh_tokens: dict[str, str] = {}
        self.challenges: dict[str, str] = {}  # code -> code_challenge
        self.n = 0
        self.expires_in = 3600
        self.issue_refresh = True
        self.www_authenticate: str | None = f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
        self.prm_status, self.prm_body = 200, {"resource": MCP_URL, "authorization_servers": [ISSUER],
                                               "scopes_supported": ["mcp:read"]}
        self.meta_status = 200
        self.meta_body: Any = {
            "issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/authorize", "token_endpoint": f"{ISSUER}/token",
            "registration_endpoint": f"{ISSUER}/register", "code_challenge_methods_supported": ["S256"],
            "response_types_supported": ["code"], "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "authorization_response_iss_parameter_supported": True,
        }
        self.token_status = 200
        self.refresh_status = 200
        self.token_delay = 0.0
        self.register_body: dict[str, Any] = {"client_id": "dyn-client", "client_secret": "dyn-SECRET-value",
                                              "token_endpoint_auth_method": "client_secret_post"}
        self.required_scope: str | None = None  # a 403 insufficient_scope until a token has it
        self.scope_of: dict[str, set[str]] = {}  # code or access token -> granted scopes

    def form(self, path: str) -> list[dict[str, str]]:
        return [f for _, p, f in self.log if p == path]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.mcp_app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if path == "/mcp":
            auth = headers.get("authorization", "")
            if not (auth.startswith("Bearer ") and auth[7:] in self.valid):
                self.log.append((method, path, {"authorization": "yes" if auth else "no"}))
                extra = [(b"www-authenticate", self.www_authenticate.encode())] if self.www_authenticate else []
                return await _send(send, 401, {"error": "invalid_token"}, extra)
            if self.required_scope and self.required_scope not in self.scope_of.get(auth[7:], set()):
                self.log.append((method, "/mcp#403", {}))
                challenge = f'Bearer error="insufficient_scope", scope="{self.required_scope}"'
                return await _send(send, 403, {"error": "insufficient_scope"}, [(b"www-authenticate", challenge.encode())])
            return await self.mcp_app(scope, receive, send)
        raw = await read_body(receive)
        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()} if method == "POST" and raw[:1] != b"{" else {}
        if raw[:1] == b"{":
            form = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in json.loads(raw).items()}
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        self.log.append((method, path, {**query, **form, **({"basic": headers["authorization"]}
                                                              if "authorization" in headers else {})}))
        if path == "/.well-known/oauth-protected-resource/mcp":
            body = self.prm_body
            return await _send(send, self.prm_status, body if isinstance(body, (dict, str)) else json.dumps(body))
        if path == "/.well-known/oauth-authorization-server/as":
            body = self.meta_body
            if isinstance(body, str):
                return await _send(send, self.meta_status, body, content_type=b"text/html")
            return await _send(send, self.meta_status, body)
        if path == "/as/register":
            return await _send(send, 201, self.register_body)
        if path == "/as/authorize":
            self.n += 1
            code = f"code-{self.n}-SECRETCODE"
            self.challenges[code] = query["code_challenge"]
            self.scope_of[code] = set(query.get("scope", "").split())
            params = {"code": code, "state": query["state"], "iss": ISSUER}
            location = query["redirect_uri"] + "?" + urlencode(params)
            return await _send(send, 302, b"", [(b"location", location.encode())])
        if path == "/as/token":
            if self.token_delay:
                await asyncio.sleep(self.token_delay)
            grant = form.get("grant_type")
            if grant == "refresh_token":
                if self.refresh_status != 200 or form.get("refresh_token") not in self.refresh_tokens:
                    return await _send(send, 400, {"error": "invalid_grant", "error_description": "refresh token expired"})
            elif grant == "authorization_code":
                if self.token_status != 200:
                    return await _send(send, self.token_status, "<html>Internal Server Error</html>",
                                       content_type=b"text/html")
                challenge = self.challenges.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                computed = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if challenge is None or computed != challenge:
                    return await _send(send, 400, {"error": "invalid_grant"})
            self.n += 1
            access, refresh = f"access-{self.n}-SECRETTOKEN", f"refresh-{self.n}-SECRETREFRESH"
            self.valid.add(access)
            self.scope_of[access] = self.scope_of.get(form.get("code", ""), set())
            body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in}
            if self.issue_refresh:
                self.refresh_tokens[refresh] = access
                body["refresh_token"] = refresh
            return await _send(send, 200, body)
        return await _send(send, 404, {"error": "not_found"})


def _oauth(http: httpx.AsyncClient, authorizer: Any = None, **kw: Any) -> OAuth:
    grant = AuthorizationCode(authorizer or follow_redirects(http_client=http), redirect_uri=REDIRECT)
    return OAuth(MCP_URL, grant, network=Network(http_client=http), **kw)


async def _list(mock: Mock, oauth: OAuth | None = None, **kw: Any) -> tuple[list[str], OAuth]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
        oauth = oauth if oauth is not None else _oauth(http, **kw)
        async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
            tools = await client.list_tools()
        return [t.name for t in tools], oauth


SECRETS = ("SECRETCODE", "SECRETTOKEN", "SECRETREFRESH", "SECRET-value", "client-SECRET")


def assert_no_secret(text: str) -> None:
    for marker in SECRETS:
        assert marker not in text, f"a secret leaked: {text!r}"


# ====================================================================== the core flow
def test_authorization_code_flow_end_to_end() -> None:
    mock = Mock()
    names, oauth = run(_list(mock))
    assert names == ["add"]
    (authorize,) = mock.form("/as/authorize")
    assert authorize["code_challenge_method"] == "S256" and authorize["resource"] == MCP_URL
    assert authorize["scope"] == "mcp:read" and authorize["client_id"] == "dyn-client"
    assert authorize["redirect_uri"] == REDIRECT and len(authorize["state"]) >= 22
    (token,) = mock.form("/as/token")
    assert token["grant_type"] == "authorization_code" and token["resource"] == MCP_URL
    assert token["client_secret"] == "dyn-SECRET-value" and "code_verifier" in token
    (register,) = mock.form("/as/register")
    assert json.loads(register["redirect_uris"]) == [REDIRECT] and register["application_type"] == "native"
    assert "refresh_token" in json.loads(register["grant_types"])
    assert oauth.tokens is not None and oauth.tokens["issuer"] == ISSUER


def test_www_authenticate_parsing() -> None:
    h = parse_www_authenticate('Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y"')
    assert (h.error, h.scope, h.resource_metadata) == ("insufficient_scope", "a b", "https://x/y")
    h = parse_www_authenticate(['Basic realm="r"', 'DPoP algs="ES256", error="use_dpop_nonce"'])
    assert h.schemes == ["basic", "dpop"] and h.error == "use_dpop_nonce"
    assert parse_www_authenticate('Bearer scope="a\\"b"').scope == 'a"b'
    for bad in ('Bearer scope="open', '"Bearer', "Bearer a=b c"):
        h = parse_www_authenticate(bad)
        assert h.malformed and h.scope is None


def test_discovery_order_and_resource_check() -> None:
    assert prm_urls("https://h/a/mcp", "https://h/meta") == [
        "https://h/meta", "https://h/.well-known/oauth-protected-resource/a/mcp", "https://h/.well-known/oauth-protected-resource"]
    assert as_metadata_urls("https://as/t1") == ["https://as/.well-known/oauth-authorization-server/t1",
                                                 "https://as/.well-known/openid-configuration/t1",
                                                 "https://as/t1/.well-known/openid-configuration"]
    assert as_metadata_urls("https://as") == ["https://as/.well-known/oauth-authorization-server",
                                              "https://as/.well-known/openid-configuration"]
    assert resource_covers("https://h/mcp", "https://h/mcp") and resource_covers("https://h", "https://h/mcp")
    assert resource_covers("https://H:443/mcp", "https://h/mcp")
    assert not resource_covers("https://evil/mcp", "https://h/mcp")
    assert not resource_covers("https://h/mc", "https://h/mcp") and not resource_covers("http://h/mcp", "https://h/mcp")


# ====================================================================== refresh and concurrency
def test_refresh_before_expiry_then_once_on_401() -> None:
    mock = Mock()
    mock.expires_in = 5  # inside the refresh margin: refreshed before the next request

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
            oauth = _oauth(http)
            async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
                await client.list_tools()
                await client.list_tools()
                grants = [f["grant_type"] for f in mock.form("/as/token")]
                assert grants == ["authorization_code", "refresh_token"]
                mock.expires_in = 3600
                mock.valid.clear()  # the server revokes: a 401, one refresh, the retry succeeds
                await client.list_tools()
                grants = [f["grant_type"] for f in mock.form("/as/token")]
                assert grants == ["authorization_code", "refresh_token", "refresh_token"]
                assert len(mock.form("/as/authorize")) == 1
                assert mock.form("/as/token")[1]["resource"] == MCP_URL

    run(go())


def test_concurrent_requests_share_one_refresh() -> None:
    mock = Mock()

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
            oauth = _oauth(http)
            async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
                await client.list_tools()
                mock.valid.clear()
                mock.token_delay = 0.1
                results = await asyncio.gather(*(client.call_tool("add", {"a": i, "b": 1}) for i in range(5)))
                assert [r.structuredContent["result"] for r in results] == [1, 2, 3, 4, 5]
        grants = [f["grant_type"] for f in mock.form("/as/token")]
        assert grants == ["authorization_code", "refresh_token"]

    run(go())


# ====================================================================== storage
def test_file_storage_mode_0600_and_reuse(tmp_path: Any) -> None:
    path = tmp_path / "sub" / "oauth.json"
    mock = Mock()
    run(_list(mock, storage=FileTokenStorage(path)))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["tokens"][MCP_URL]["issuer"] == ISSUER and data["clients"][ISSUER]["client_id"] == "dyn-client"
    # A new process (a new OAuth) with the same store: no authorization, no registration.
    run(_list(mock, storage=FileTokenStorage(path)))
    assert len(mock.form("/as/authorize")) == 1 and len(mock.form("/as/register")) == 1
    assert FileTokenStorage(path).forget(MCP_URL) and FileTokenStorage(path).get_tokens(MCP_URL) is None


def test_in_memory_storage_keeps_clients_per_issuer() -> None:
    store = InMemoryTokenStorage()
    store.set_client("https://a", {"client_id": "x"})
    assert store.get_client("https://a") == {"client_id": "x"} and store.get_client("https://b") is None


# ====================================================================== bad input
def _fails(mock: Mock, caplog: pytest.LogCaptureFixture, **kw: Any) -> OAuthError:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(OAuthError) as info:
        run(_list(mock, **kw))
    assert_no_secret(str(info.value))
    assert_no_secret(caplog.text)
    return info.value


def test_malformed_www_authenticate_falls_back_to_well_known(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.www_authenticate = 'Bearer resource_metadata="http://localhost/nowhere'  # unterminated
    caplog.set_level(logging.WARNING)
    names, _ = run(_list(mock))
    assert names == ["add"]
    assert "WWW-Authenticate header does not parse" in caplog.text
    # And when the well-known document is missing too, the error says the header was bad.
    mock = Mock()
    mock.www_authenticate = 'Bearer resource_metadata="http://localhost/nowhere'
    mock.prm_status, mock.prm_body = 500, "oops"
    err = _fails(mock, caplog)
    assert err.error == "discovery_failed" and "did not parse" in str(err) and "HTTP 500" in str(err)


def test_metadata_that_is_not_json(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.meta_body = "<html>this is a login page</html>"
    err = _fails(mock, caplog)
    assert err.error == "discovery_failed" and "is not JSON" in str(err) and "text/html" in str(err)
    assert not mock.form("/as/token")


def test_authorization_server_answering_500(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.token_status = 500
    err = _fails(mock, caplog, registration=Registration(client_id="pre", client_secret="client-SECRET", issuer=ISSUER))
    assert err.status == 500 and "HTTP 500" in str(err) and "authorization_code token request" in str(err)
    mock = Mock()
    mock.meta_status, mock.meta_body = 500, {"error": "server_error"}
    err = _fails(mock, caplog)
    assert err.error == "discovery_failed" and "HTTP 500" in str(err)


def test_state_mismatch_refuses_the_code(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()

    async def forged(url: str, redirect_uri: str) -> str:
        return redirect_uri + "?" + urlencode({"code": "code-x-SECRETCODE", "state": "forged", "iss": ISSUER})

    err = _fails(mock, caplog, authorizer=forged)
    assert err.error == "state_mismatch"
    assert not mock.form("/as/token")  # the code never reached the token endpoint


def test_wrong_iss_and_missing_iss_are_refused(caplog: pytest.LogCaptureFixture) -> None:
    for iss in ("https://evil.example", None, ISSUER + "/"):
        mock = Mock()

        async def answer(url: str, redirect_uri: str, iss: str | None = iss) -> str:
            q = parse_qs(urlsplit(url).query)
            params = {"code": "c", "state": q["state"][0], **({"iss": iss} if iss else {})}
            return redirect_uri + "?" + urlencode(params)

        err = _fails(mock, caplog, authorizer=answer)
        assert err.error in ("issuer_mismatch", "issuer_missing") and not mock.form("/as/token")


def test_expired_refresh_token_means_authorizing_again(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    caplog.set_level(logging.DEBUG)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
            oauth = _oauth(http)
            async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
                await client.list_tools()
                mock.valid.clear()
                mock.refresh_status = 400  # invalid_grant: the refresh token expired
                await client.list_tools()
        grants = [f["grant_type"] for f in mock.form("/as/token")]
        assert grants == ["authorization_code", "refresh_token", "authorization_code"]

    run(go())
    assert "refreshing the token failed" in caplog.text and "invalid_grant" in caplog.text
    assert_no_secret(caplog.text)


def test_expired_refresh_token_without_a_person_is_a_clear_error(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
            calls = 0

            async def once(url: str, redirect_uri: str) -> str:
                nonlocal calls
                calls += 1
                if calls > 1:
                    raise OAuthError("the user is not at the keyboard", error="interaction_required")
                return await follow_redirects(http_client=http)(url, redirect_uri)

            oauth = _oauth(http, authorizer=once)
            async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
                await client.list_tools()
                mock.valid.clear()
                mock.refresh_status = 400
                await client.list_tools()

    caplog.set_level(logging.DEBUG)
    with pytest.raises(OAuthError) as info:
        run(go())
    assert info.value.error == "interaction_required"
    assert_no_secret(str(info.value) + caplog.text)


def test_resource_mismatch_and_issuer_mismatch_are_refused(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.prm_body = {"resource": "https://evil.example/mcp", "authorization_servers": [ISSUER]}
    assert _fails(mock, caplog).error == "resource_mismatch"
    assert not mock.form("/as/authorize")
    mock = Mock()
    mock.meta_body = {**mock.meta_body, "issuer": "https://attacker.example"}
    assert _fails(mock, caplog).error == "issuer_mismatch"
    assert not mock.form("/as/authorize")
    mock = Mock()
    mock.meta_body = {k: v for k, v in mock.meta_body.items() if k != "code_challenge_methods_supported"}
    assert _fails(mock, caplog).error == "pkce_unsupported"


def test_no_registration_possible_is_a_clear_error(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.meta_body = {k: v for k, v in mock.meta_body.items() if k != "registration_endpoint"}
    err = _fails(mock, caplog)
    assert err.error == "registration_unavailable" and "client_id" in str(err)


def test_import_mcpkit_auth_is_lazy() -> None:
    import subprocess
    import sys

    code = ("import sys, mcpkit, mcpkit.auth; "
            "print(any(m.startswith(('httpx', 'joserfc', 'mcpkit.auth._', 'mcpkit.client')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_plain_http_off_loopback_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    mock.meta_body = {**mock.meta_body, "token_endpoint": "http://as.example.com/token"}
    err = _fails(mock, caplog)
    assert err.error == "insecure_transport" and "token_endpoint" in str(err)
    assert not mock.form("/as/authorize")


def test_redirect_uri_must_be_https_or_loopback() -> None:
    for bad in ("http://app.example/cb", "ftp://127.0.0.1/cb"):
        with pytest.raises(ValueError):
            OAuth(MCP_URL, AuthorizationCode(redirect_uri=bad))
        with pytest.raises(ValueError):
            OAuth(MCP_URL, redirect_uri=bad)  # the older spelling
    for good in ("https://app.example/cb", "http://localhost:8080/cb", "http://127.0.0.1:1/cb"):
        OAuth(MCP_URL, AuthorizationCode(redirect_uri=good))
    OAuth(MCP_URL, AuthorizationCode(redirect_uri="http://app.example/cb"), network=Network(allow_http=True))


def test_cimd_url_must_be_https_with_a_path() -> None:
    for bad in ("http://example.com/client.json", "https://example.com/", "https://example.com"):
        with pytest.raises(ValueError):
            Registration(client_metadata_url=bad)
        with pytest.raises(ValueError):
            OAuth(MCP_URL, client_metadata_url=bad)


def test_forgotten_registration_is_dropped_on_invalid_client(caplog: pytest.LogCaptureFixture) -> None:
    mock = Mock()
    store = InMemoryTokenStorage()
    store.set_client(ISSUER, {"client_id": "forgotten", "client_secret": "client-SECRET", "registered": True})

    async def invalid_client(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/as/token":
            await read_body(receive)
            return await _send(send, 401, {"error": "invalid_client"})
        await mock(scope, receive, send)

    caplog.set_level(logging.DEBUG)
    with pytest.raises(OAuthError) as info:
        async def go() -> None:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=invalid_client)) as http:
                oauth = _oauth(http, storage=store)
                async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
                    await client.list_tools()
        run(go())
    assert info.value.error == "invalid_client" and store.get_client(ISSUER) is None
    assert_no_secret(str(info.value) + caplog.text)


def test_step_up_unites_scopes_and_stops_after_three_authorizations() -> None:
    mock = Mock()
    mock.required_scope = "mcp:write"
    names, oauth = run(_list(mock))
    assert names == ["add"]
    scopes = [f.get("scope") for f in mock.form("/as/authorize")]
    assert scopes == ["mcp:read", "mcp:read mcp:write"]  # the union of before and the challenge
    mock = Mock()
    mock.required_scope = "mcp:admin"

    async def never(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await mock(scope, receive, send)
        mock.scope_of = {k: set() for k in mock.scope_of}  # the upgrade never sticks

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=never)) as http:
            async with Client(MCP_URL, mode=VERSION, http_client=http, auth=_oauth(http), cache=False) as client:
                await client.list_tools()

    from mcpkit.errors import HttpStatusError

    with pytest.raises(HttpStatusError) as info:
        run(go())
    assert info.value.status == 403 and len(mock.form("/as/authorize")) == 3


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_auto_probe_and_legacy_sessions_authorize_the_same_way(mode: str) -> None:
    from mcpkit import EraCache

    mock = Mock()

    async def go() -> tuple[str | None, list[str]]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
            async with Client(MCP_URL, mode=mode, http_client=http, auth=_oauth(http), era_cache=EraCache()) as client:
                names = [t.name for t in await client.list_tools()]
                return client.era, names

    era, names = run(go())
    assert names == ["add"] and era == ("legacy" if mode == "legacy" else "modern")
    assert len(mock.form("/as/authorize")) == 1 and len(mock.form("/as/token")) == 1


def test_loopback_redirect_listener_is_one_shot_and_reusable() -> None:

    announced: list[str] = []
    loop = LoopbackRedirect(open_browser=False, announce=announced.append)
    assert loop.redirect_uri == f"http://127.0.0.1:{loop.port}/callback"

    async def once(code: str) -> tuple[str, int, int, str]:
        task = asyncio.create_task(loop("https://as.example/authorize?x=1", loop.redirect_uri))
        await asyncio.sleep(0.1)
        async with httpx.AsyncClient() as browser:
            other = await browser.get(f"http://127.0.0.1:{loop.port}/favicon.ico")
            page = await browser.get(f"{loop.redirect_uri}?code={code}&state=s")
        return await task, page.status_code, other.status_code, page.text

    for code in ("first-SECRETCODE", "second-SECRETCODE"):  # a step-up listens again on the same port
        url, status, other, text = run(once(code))
        assert url == f"{loop.redirect_uri}?code={code}&state=s" and status == 200 and other == 404
        assert "SECRETCODE" not in text
    assert "https://as.example/authorize?x=1" in announced[0]
    loop.close()


def test_without_an_authorizer_a_loopback_redirect_uri_gets_a_listener() -> None:
    grant = AuthorizationCode(redirect_uri="http://127.0.0.1:0/cb")
    with pytest.raises(OAuthError) as info:
        grant.redirect()  # port 0 is no fixed port
    assert info.value.error == "no_authorizer"
    with pytest.raises(OAuthError):
        AuthorizationCode(redirect_uri="https://app.example/cb").redirect()
    oauth = OAuth(MCP_URL)
    assert isinstance(oauth.grant, AuthorizationCode)
    uri = oauth.grant.redirect()
    assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")
    assert isinstance(oauth.grant.authorizer, LoopbackRedirect)
    oauth.grant.authorizer.close()


def test_unusable_registration_is_refused_before_the_browser(caplog: pytest.LogCaptureFixture) -> None:
    for body in ({"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"},
                 {"client_id": "c", "token_endpoint_auth_method": "tls_client_auth"},
                 {"client_id": "c", "client_secret": "client-SECRET", "token_endpoint_auth_method": "private_key_jwt"}):
        mock = Mock()
        mock.register_body = body
        assert _fails(mock, caplog).error == "registration_unusable"
        assert not mock.form("/as/authorize")


# ====================================================================== the hook's shape
def test_the_hook_takes_few_parameters_the_rest_in_option_objects() -> None:
    import inspect

    assert len(inspect.signature(OAuth).parameters) <= 12


def test_the_older_flat_keywords_map_onto_the_option_objects() -> None:
    from mcpkit.auth import ClientCredentials, EnterpriseManaged, JWTBearer

    old = OAuth(MCP_URL, grant="client_credentials", client_id="svc", client_secret="x", issuer=ISSUER,
                allow_private_network=True, timeout=3.0)
    assert isinstance(old.grant, ClientCredentials)
    assert old.registration == Registration(client_id="svc", client_secret="x", issuer=ISSUER)
    assert old.network == Network(timeout=3.0, allow_private_network=True)
    code = OAuth(MCP_URL, redirect_uri=REDIRECT, open_browser=False, request_refresh_tokens=False,
                 client_metadata_url="https://app.example/client.json")
    assert isinstance(code.grant, AuthorizationCode) and code.grant.redirect_uri == REDIRECT
    assert not code.grant.open_browser and not code.grant.offline_access
    assert code.registration.client_metadata_url == "https://app.example/client.json"
    wif = OAuth(MCP_URL, grant="jwt_bearer", assertion_env="TOKEN", redirect_uri=REDIRECT)  # other grants' keywords do nothing
    assert isinstance(wif.grant, JWTBearer) and wif.grant.assertion_env == "TOKEN"
    ent = OAuth(MCP_URL, grant="enterprise", client_id="c", idp_token_endpoint="https://idp.example/token",
                idp_id_token="t")
    assert isinstance(ent.grant, EnterpriseManaged) and ent.grant.idp_token_endpoint == "https://idp.example/token"


def test_bad_option_combinations_are_refused() -> None:
    from mcpkit.auth import ClientCredentials, EnterpriseManaged, JWTBearer

    with pytest.raises(TypeError, match="registration"):
        OAuth(MCP_URL, registration=Registration(client_id="a"), client_id="b")
    with pytest.raises(TypeError, match="network"):
        OAuth(MCP_URL, network=Network(), allow_http=True)
    with pytest.raises(TypeError, match="grant object"):
        OAuth(MCP_URL, AuthorizationCode(), redirect_uri=REDIRECT)
    with pytest.raises(TypeError, match="unexpected keyword"):
        OAuth(MCP_URL, client_secrett="x")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="grant must be one of"):
        OAuth(MCP_URL, grant="password")
    with pytest.raises(ValueError, match="client_id"):
        OAuth(MCP_URL, ClientCredentials())
    with pytest.raises(ValueError, match="assertion"):
        OAuth(MCP_URL, JWTBearer())
    with pytest.raises(ValueError, match="idp_token_endpoint"):
        OAuth(MCP_URL, EnterpriseManaged("https://idp.example/token", "t"))  # no client_id
    with pytest.raises(ValueError, match="idp_token_endpoint"):
        OAuth(MCP_URL, grant="enterprise", client_id="c")


def test_option_objects_keep_secrets_out_of_their_repr() -> None:
    from mcpkit.auth import EnterpriseManaged, JWTBearer

    shown = repr((Registration(client_id="svc", client_secret="client-SECRET", private_key="SECRET-value"),
                  JWTBearer(assertion="SECRETTOKEN"),
                  EnterpriseManaged("https://idp.example/token", "SECRETTOKEN", idp_client_secret="SECRET-value")))
    assert "svc" in shown and not any(s in shown for s in SECRETS)
