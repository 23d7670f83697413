"""The OAuth client's security regressions (issue 18, items 12, 13, 18 and 19).

Real loopback HTTP: an MCP server, its protected resource metadata and an authorization
server on uvicorn (127.0.0.1, a thread of this process), a second such server for "another
origin", the real loopback redirect listener; and the sans-IO URL decision on its own.

12  URLs a server names: https (loopback http only for a loopback server), resource_metadata
    on the server's origin unless allowed, no private/link-local/... addresses unless allowed.
13  Pre-registered credentials are bound to their issuer (option, CLI flag, token store) and
    never sent to another authorization server.
18  Loopback means a parsed loopback address or ``localhost``, not "starts with 127.".
19  The loopback redirect ignores callbacks without this authorization's state.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpkit import Client, Server
from mcpkit.auth import (
    AuthorizationCode,
    ClientCredentials,
    FileTokenStorage,
    Grant,
    LoopbackRedirect,
    Network,
    OAuth,
    OAuthError,
    Registration,
    follow_redirects,
)
from mcpkit.client.oauth import _urls as U
from mcpkit.client.oauth._urlguard import check_url
from tests.helpers.aio import read_body, run, until
from tests.helpers.cli import mcpkit
from tests.helpers.oidc import ThreadedServer
from tests.helpers.servers import free_port

VERSION = "2026-07-28"
SECRET = "pre-SECRET-value"


def demo() -> Server:
    server = Server("oauth-security", "1.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def _send(send: Any, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


class Stack:
    """An MCP endpoint (/mcp), its resource metadata and an authorization server (issuer =
    the origin, plus a second issuer at /as2) on one real loopback port. Attributes change
    what it says; ``log`` records every request (path, form or query)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.mcp = demo().http_app()
        self.log: list[tuple[str, dict[str, str]]] = []
        self.valid: set[str] = set()
        self.resource_metadata: str | None = f"{self.base}/.well-known/oauth-protected-resource/mcp"
        self.authorization_servers: list[str] = [self.base]
        self.meta_overrides: dict[str, Any] = {}
        self.n = 0
        self.server = ThreadedServer(self, self.port)

    def meta(self, issuer: str) -> dict[str, Any]:
        return {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
                "registration_endpoint": f"{issuer}/register", "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"], **self.meta_overrides}

    def paths(self) -> list[str]:
        return [p for p, _ in self.log]

    def sent_secret(self) -> bool:
        return any(SECRET in json.dumps(form) for _, form in self.log)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if path == "/mcp":
            auth = headers.get("authorization", "")
            if auth.startswith("Bearer ") and auth[7:] in self.valid:
                return await self.mcp(scope, receive, send)
            self.log.append((path, {}))
            challenge = f'Bearer resource_metadata="{self.resource_metadata}"' if self.resource_metadata else "Bearer"
            return await _send(send, 401, {"error": "invalid_token"}, [(b"www-authenticate", challenge.encode())])
        raw = await read_body(receive)
        form = {k: v[0] for k, v in parse_qs(raw.decode(errors="replace")).items()}
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        self.log.append((path, {**query, **form, **({"authorization": headers["authorization"]}
                                                     if "authorization" in headers else {})}))
        issuer = f"{self.base}/as2" if path.startswith("/as2") or path.endswith("/as2") else self.base
        if path == "/.well-known/oauth-protected-resource/mcp":
            return await _send(send, 200, {"resource": self.url, "authorization_servers": self.authorization_servers})
        if path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/as2"):
            return await _send(send, 200, self.meta(issuer))
        if path.endswith("/register"):
            return await _send(send, 201, {"client_id": "dyn-client", "token_endpoint_auth_method": "none"})
        if path.endswith("/authorize"):
            location = query["redirect_uri"] + "?" + urlencode({"code": "c0de", "state": query["state"], "iss": issuer})
            return await _send(send, 302, b"", [(b"location", location.encode())])
        if path.endswith("/token"):
            self.n += 1
            token = f"access-{self.n}"
            self.valid.add(token)
            return await _send(send, 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})
        return await _send(send, 404, {"error": "not_found"})

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture()
def stack() -> Any:
    s = Stack()
    yield s
    s.stop()


@pytest.fixture()
def other() -> Any:
    s = Stack()
    yield s
    s.stop()


def _oauth(stack: Stack, grant: Grant | str | None = None, *, network: Network | None = None, **kw: Any) -> OAuth:
    if grant is None:
        grant = AuthorizationCode(follow_redirects(), redirect_uri="http://127.0.0.1:9/callback")
    return OAuth(stack.url, grant, network=network or Network(timeout=2.0), **kw)


def _service(issuer: str | None = None) -> dict[str, Any]:
    """The client credentials grant as the pre-registered client svc (its secret bound to ``issuer``)."""
    return {"grant": ClientCredentials(), "registration": Registration(client_id="svc", client_secret=SECRET,
                                                                          issuer=issuer)}


async def _list(stack: Stack, oauth: OAuth) -> list[str]:
    async with Client(stack.url, mode=VERSION, auth=oauth, cache=False) as client:
        return [t.name for t in await client.list_tools()]


def _fails(coro: Any) -> OAuthError:
    with pytest.raises(OAuthError) as info:
        run(coro, 30)
    assert SECRET not in str(info.value)
    return info.value


# ====================================================================== 12: URLs a server names
def test_cross_origin_resource_metadata_is_refused_unfetched(stack: Stack, other: Stack) -> None:
    # The MCP server points its challenge at another origin (which would even vouch for it).
    other.authorization_servers = [other.base]
    other.url = stack.url  # its metadata names our server as the resource
    stack.resource_metadata = f"{other.base}/.well-known/oauth-protected-resource/mcp"
    err = _fails(_list(stack, _oauth(stack)))
    assert err.error == "url_refused" and "not on the MCP server's origin" in str(err)
    assert "allow_cross_origin_metadata=True" in str(err)
    assert other.log == [] and "/token" not in stack.paths()


def test_cross_origin_resource_metadata_allowed_when_asked(stack: Stack, other: Stack) -> None:
    other.url = stack.url
    other.authorization_servers = [stack.base]
    stack.resource_metadata = f"{other.base}/.well-known/oauth-protected-resource/mcp"
    assert run(_list(stack, _oauth(stack, network=Network(timeout=2.0, allow_cross_origin_metadata=True))), 30) == ["add"]
    assert "/.well-known/oauth-protected-resource/mcp" in other.paths()


@pytest.mark.parametrize("named", ["https://10.1.2.3", "https://169.254.169.254", "https://192.168.0.10:8443/as",
                                   "https://[fd12::1]", "https://[fe80::1]", "https://100.64.0.1", "https://0.0.0.0"])
def test_authorization_server_on_a_private_address_is_refused(stack: Stack, named: str) -> None:
    stack.authorization_servers = [named]
    err = _fails(_list(stack, _oauth(stack)))
    assert err.error == "url_refused" and "non-public address" in str(err) and named in str(err)
    assert "allow_private_network=True" in str(err)


def test_endpoint_on_a_private_address_is_refused_before_the_secret_is_sent(stack: Stack) -> None:
    stack.meta_overrides = {"token_endpoint": "https://10.1.2.3/token"}
    oauth = _oauth(stack, **_service(stack.base))
    err = _fails(oauth.authorize())
    assert err.error == "url_refused" and "token_endpoint" in str(err)


def test_plain_http_authorization_server_off_loopback_is_refused(stack: Stack) -> None:
    stack.authorization_servers = ["http://192.0.2.7/as"]
    err = _fails(_list(stack, _oauth(stack)))
    assert err.error == "insecure_transport" and "not served over HTTPS" in str(err)


def test_loopback_server_may_use_a_loopback_authorization_server(stack: Stack, other: Stack) -> None:
    # Local test stacks (the conformance harness): another loopback port, by name or address.
    stack.authorization_servers = [f"http://localhost:{other.port}"]
    other.base = f"http://localhost:{other.port}"
    other.valid = stack.valid  # its tokens are good at the MCP server
    assert run(_list(stack, _oauth(stack)), 30) == ["add"]
    assert "/token" in other.paths() and "/token" not in stack.paths()


def test_url_decision_is_pure_and_covers_remote_servers() -> None:
    remote = U.UrlPolicy("https://mcp.example.com/mcp")
    ok = [("https://mcp.example.com/.well-known/x", U.RESOURCE_METADATA), ("https://as.example.net", U.NAMED),
          ("https://mcp.example.com:443/token", U.NAMED), ("https://8.8.8.8/token", U.NAMED)]
    for url, role in ok:
        assert U.refusal(url, role, remote) is None, url
    refused = {
        ("https://meta.example.net/prm", U.RESOURCE_METADATA): "url_refused",
        ("http://mcp.example.com/prm", U.RESOURCE_METADATA): "insecure_transport",
        ("http://as.example.net", U.NAMED): "insecure_transport",
        ("https://localhost:8443", U.NAMED): "url_refused",
        ("https://127.0.0.1/token", U.NAMED): "url_refused",
        ("https://[::1]/token", U.NAMED): "url_refused",
        ("https://[::ffff:127.0.0.1]/token", U.NAMED): "url_refused",
        ("https://[::ffff:10.0.0.1]/token", U.NAMED): "url_refused",
        ("https://172.16.5.4/token", U.NAMED): "url_refused",
        ("https://224.0.0.1/token", U.NAMED): "url_refused",
        ("ftp://as.example.net", U.NAMED): "insecure_transport",
        ("https://as.example.net:99999", U.NAMED): "insecure_transport",
    }
    for (url, role), error in refused.items():
        got = U.refusal(url, role, remote)
        assert got is not None and got.error == error, url
    # The options open exactly their door.
    assert U.refusal("https://meta.example.net/prm", U.RESOURCE_METADATA,
                     U.UrlPolicy(remote.server_url, allow_cross_origin_metadata=True)) is None
    lab = U.UrlPolicy(remote.server_url, allow_private_network=True)
    assert U.refusal("https://10.0.0.1/as", U.NAMED, lab) is None and U.refusal("https://localhost", U.NAMED, lab) is None
    assert U.refusal("http://10.0.0.1/as", U.NAMED, lab) is not None  # still not plain http
    # A loopback server: loopback authorization servers (any port) are fine, private ones not.
    local = U.UrlPolicy("http://127.0.0.1:3000/mcp")
    assert U.refusal("http://localhost:4000", U.NAMED, local) is None
    assert U.refusal("http://127.0.0.9:4000", U.NAMED, local) is None
    assert U.refusal("https://10.0.0.1", U.NAMED, local) is not None
    # The user's own URLs are judged on transport only.
    assert U.refusal("https://10.0.0.1/mcp", U.SERVER, U.UrlPolicy("https://10.0.0.1/mcp")) is None
    assert U.refusal("https://10.0.0.1/.well-known/oauth-protected-resource", U.RESOURCE_METADATA,
                     U.UrlPolicy("https://10.0.0.1/mcp")) is None  # the server's own origin


def test_host_names_are_judged_by_what_they_resolve_to() -> None:
    # This machine's own name resolves to loopback or a private address: a remote MCP server
    # may not send the client there; a loopback one may, when it is loopback.
    name = socket.gethostname()
    addresses = {U.ip_literal(str(i[4][0])) for i in socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)}
    assert addresses and None not in addresses
    private = any(ip is not None and not U.is_public_address(ip) for ip in addresses)
    remote = U.UrlPolicy("https://mcp.example.com/mcp")

    async def judged(policy: U.UrlPolicy) -> OAuthError | None:
        try:
            await check_url(f"https://{name}/token", U.NAMED, policy, "the authorization server's token_endpoint")
        except OAuthError as exc:
            return exc
        return None

    err = run(judged(remote), 10)
    assert (err is not None) == private
    if err is not None:
        assert err.error == "url_refused" and "allow_private_network=True" in str(err)
    assert run(judged(U.UrlPolicy(remote.server_url, allow_private_network=True)), 10) is None


# ====================================================================== 18: what loopback is
def test_loopback_is_an_address_or_localhost_not_a_prefix() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", "localhost.",
                 "::ffff:127.0.0.1"):
        assert U.is_loopback_host(host), host
    for host in ("127.0.0.1.attacker.example", "127.attacker.example", "localhost.attacker.example",
                 "evil.localhost", "0.0.0.0", "10.0.0.1", "::", "1127.0.0.1", "2130706433", ""):
        assert not U.is_loopback_host(host), host


def test_loopback_lookalike_hosts_get_no_plain_http(stack: Stack) -> None:
    stack.meta_overrides = {"token_endpoint": "http://127.0.0.1.attacker.example/token"}
    oauth = _oauth(stack, **_service(stack.base))
    err = _fails(oauth.authorize())
    assert err.error == "insecure_transport" and "127.0.0.1.attacker.example" in str(err)
    # The MCP server itself on such a name: refused before any request.
    err = _fails(OAuth("http://127.0.0.1.attacker.example/mcp", network=Network(timeout=1.0)).authorize())
    assert err.error == "insecure_transport" and "the MCP server" in str(err)


# ====================================================================== 13: credentials stay with their issuer
def test_a_secret_without_an_issuer_is_refused_before_it_is_sent(stack: Stack) -> None:
    oauth = _oauth(stack, **_service())
    err = _fails(oauth.authorize())
    assert err.error == "issuer_required" and "issuer=" in str(err) and "--issuer" in str(err)
    assert not stack.sent_secret() and "/token" not in stack.paths()


@pytest.mark.parametrize("grant", ["client_credentials", "authorization_code"])
def test_a_secret_bound_to_another_issuer_is_refused_before_anything_is_sent(stack: Stack, grant: str) -> None:
    # The older spelling (a grant by name, flat registration keywords) is held to the same rule.
    oauth = _oauth(stack, grant, client_id="svc", client_secret=SECRET, issuer="https://as.example.com",
                   redirect_uri="http://127.0.0.1:9/callback", authorizer=follow_redirects())
    err = _fails(_list(stack, oauth))
    assert err.error == "issuer_changed" and "https://as.example.com" in str(err) and "mix-up" in str(err)
    assert not stack.sent_secret()
    assert not {"/token", "/authorize", "/register"} & set(stack.paths())


def test_the_binding_is_kept_with_the_token_and_enforced_later(stack: Stack, tmp_path: Any) -> None:
    store = tmp_path / "oauth.json"
    run(_oauth(stack, storage=FileTokenStorage(store), **_service(stack.base + "/")).authorize(), 30)
    record = json.loads(store.read_text())["tokens"][stack.url]
    assert record["client_id"] == "svc" and record["issuer"] == stack.base
    # A later run without issuer= takes the binding from the store...
    run(_oauth(stack, storage=FileTokenStorage(store), **_service()).authorize(force=True), 30)
    assert [p for p in stack.paths() if p.endswith("/token")] == ["/token", "/token"]
    # ...and refuses when the server now names another authorization server.
    stack.authorization_servers = [stack.base + "/as2"]
    err = _fails(_oauth(stack, storage=FileTokenStorage(store), **_service()).authorize(force=True))
    assert err.error == "issuer_changed" and "/as2/token" not in stack.paths()


def test_a_public_client_id_is_bound_on_first_use(stack: Stack) -> None:
    oauth = _oauth(stack, registration=Registration(client_id="public-app"))
    assert run(_list(stack, oauth), 30) == ["add"]
    stack.authorization_servers = [stack.base + "/as2"]
    stack.valid.clear()
    err = _fails(_list(stack, oauth))
    assert err.error == "issuer_changed" and "/as2/authorize" not in stack.paths()


def test_login_cli_needs_and_remembers_the_issuer(stack: Stack, tmp_path: Any) -> None:
    store = tmp_path / "t.json"
    base = ["login", stack.url, "--client-credentials", "--client-id", "svc", "--token-store", store]
    env_secret = {"MCPKIT_CLIENT_SECRET": SECRET}
    from tests.helpers.paths import subprocess_env

    out = mcpkit(*base, env=subprocess_env(**env_secret), timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("mcpkit login: ") and "--issuer" in out.stderr and len(out.stderr.splitlines()) == 1
    assert "/token" not in stack.paths()
    out = mcpkit(*base, "--issuer", stack.base, env=subprocess_env(**env_secret), timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"authorization server {stack.base}" in out.stdout and SECRET not in out.stdout + out.stderr
    out = mcpkit(*base, "--force", env=subprocess_env(**env_secret), timeout=60)  # remembered
    assert out.returncode == 0, out.stderr


# ====================================================================== 19: the loopback redirect
async def _get(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=5.0) as http:
        return await http.get(url)


def test_stray_callbacks_are_ignored_until_the_one_with_the_state() -> None:
    async def go() -> None:
        loop = LoopbackRedirect(open_browser=False, announce=lambda text: None, timeout=20)
        auth_url = "https://as.example.com/authorize?" + urlencode({"state": "the-STATE", "client_id": "x"})
        waiting = asyncio.ensure_future(loop(auth_url, loop.redirect_uri))
        cb = loop.redirect_uri
        for stray in (f"{cb}?code=evil&state=forged", f"{cb}?code=evil", f"{cb}?error=access_denied&state=nope",
                      f"{cb}?code=evil&state=the-STATE&state=forged", cb):
            resp = await _get(stray)
            assert resp.status_code == 400 and "ignored" in resp.text
            assert not waiting.done()
        assert (await _get(f"http://127.0.0.1:{loop.port}/favicon.ico")).status_code == 404
        # A request that never finishes its headers does not block the real one.
        reader, writer = await asyncio.open_connection("127.0.0.1", loop.port)
        writer.write(b"GET /callback?state=the-STATE&code=slow HTTP/1.1\r\n")
        await writer.drain()
        good = await _get(f"{cb}?code=right&state=the-STATE")
        assert good.status_code == 200 and "return to the terminal" in good.text
        got = await asyncio.wait_for(waiting, 5)
        assert parse_qs(urlsplit(got).query) == {"code": ["right"], "state": ["the-STATE"]}
        writer.close()
        loop.close()

    run(go(), 30)


def test_only_strays_means_the_timeout(stack: Stack) -> None:
    async def go() -> None:
        loop = LoopbackRedirect(open_browser=False, announce=lambda text: None, timeout=1.5)
        waiting = asyncio.ensure_future(loop("https://as.example.com/authorize?state=S", loop.redirect_uri))
        await asyncio.sleep(0.1)
        assert (await _get(f"{loop.redirect_uri}?code=x&state=T")).status_code == 400
        with pytest.raises(OAuthError) as info:
            await waiting
        assert info.value.error == "timeout"
        loop.close()

    run(go(), 30)


def test_a_matching_error_callback_ends_the_login_with_the_error_as_data(stack: Stack) -> None:
    shown: list[str] = []
    loop = LoopbackRedirect(open_browser=False, announce=shown.append, timeout=20)
    description = "denied \x1b]0;owned\x07 by policy"

    async def browser() -> None:
        await until(lambda: shown, "the authorization URL")
        url = shown[0].split()[-1]
        state = parse_qs(urlsplit(url).query)["state"][0]
        assert (await _get(f"{loop.redirect_uri}?error=server_error&state=forged")).status_code == 400
        answer = await _get(loop.redirect_uri + "?" + urlencode(
            {"error": "access_denied", "error_description": description, "state": state}))
        assert answer.status_code == 200

    async def go() -> None:
        oauth = OAuth(stack.url, AuthorizationCode(loop, redirect_uri=loop.redirect_uri), network=Network(timeout=5.0))
        person = asyncio.ensure_future(browser())
        try:
            with pytest.raises(OAuthError) as info:
                await _list(stack, oauth)
        finally:
            await person
            loop.close()
        assert info.value.error == "access_denied" and info.value.description == description
        assert "/token" not in stack.paths()

    run(go(), 30)


def test_the_real_callback_after_a_stray_one_completes_the_login(stack: Stack) -> None:
    shown: list[str] = []
    loop = LoopbackRedirect(open_browser=False, announce=shown.append, timeout=20)

    async def browser() -> None:
        await until(lambda: shown, "the authorization URL")
        url = shown[0].split()[-1]
        assert (await _get(f"{loop.redirect_uri}?code=stale&state=old-tab")).status_code == 400
        async with httpx.AsyncClient(timeout=5.0) as http:  # the user approves: the AS redirects back
            location = (await http.get(url)).headers["location"]
            assert (await http.get(location)).status_code == 200

    async def go() -> None:
        oauth = OAuth(stack.url, AuthorizationCode(loop, redirect_uri=loop.redirect_uri), network=Network(timeout=5.0))
        person = asyncio.ensure_future(browser())
        try:
            assert await _list(stack, oauth) == ["add"]
        finally:
            await person
            loop.close()

    run(go(), 30)


def test_an_authorization_url_with_control_characters_is_neither_opened_nor_printed() -> None:
    """An authorization server's ``authorization_endpoint`` ends up in a terminal line and in the
    browser's command line: one holding ESC (a window title, a clipboard write) is refused."""
    said: list[str] = []
    loop = LoopbackRedirect(open_browser=False, timeout=1, announce=said.append)
    url = "https://as.example/authorize\x1b]52;c;cHduZWQ=\x07?state=s"
    with pytest.raises(OAuthError, match="control characters"):
        asyncio.run(loop(url, loop.redirect_uri))
    loop.close()
    assert said == []
