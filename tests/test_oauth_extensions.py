"""The auth extensions against an in-process mock (ASGI via httpx): client credentials with a
secret and with private_key_jwt (ES256 and RS256), workload identity federation (JWT bearer
from a string, a file, an environment variable or a callable; errors surface, no retry),
enterprise-managed authorization (token exchange, then JWT bearer), and DPoP with nonces
from the authorization server and the resource server. Every JWT is verified with joserfc.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from mcpkit import Client, Server
from mcpkit.auth import (
    ClientCredentials,
    EnterpriseManaged,
    Grant,
    InMemoryTokenStorage,
    JWTBearer,
    Network,
    OAuth,
    OAuthError,
    Registration,
)

BASE = "http://localhost"
MCP_URL = f"{BASE}/mcp"
ISSUER = f"{BASE}/as"
IDP = "http://127.0.0.2"  # another loopback host (a *.localhost name is not loopback to mcpkit)
VERSION = "2026-07-28"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def demo_server() -> Server:
    server = Server("oauth-ext", "1.0.0")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def _send(send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _verify_dpop(proof: str, method: str, url: str, token: str | None) -> dict[str, Any]:
    header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    claims = jwt.decode(proof, ECKey.import_key(header["jwk"])).claims
    assert claims["htm"] == method and claims["htu"] == url and abs(claims["iat"] - time.time()) < 60
    assert isinstance(claims["jti"], str)
    if token is not None:
        assert claims["ath"] == _b64u(hashlib.sha256(token.encode()).digest())
    claims["_jkt"] = json.dumps(header["jwk"], sort_keys=True)
    return claims


class Mock:
    """AS at /as (metadata chosen per test), IdP token endpoint, MCP endpoint at /mcp."""

    def __init__(self, meta: dict[str, Any], *, rs_nonce: str | None = None, as_nonce: str | None = None,
                 verify_assertion: Any = None) -> None:
        self.mcp = demo_server().http_app()
        self.meta = {"issuer": ISSUER, "token_endpoint": f"{ISSUER}/token", "authorization_endpoint": f"{ISSUER}/authorize",
                     "code_challenge_methods_supported": ["S256"], **meta}
        self.rs_nonce, self.as_nonce = rs_nonce, as_nonce
        self.verify_assertion = verify_assertion
        self.tokens: dict[str, str | None] = {}  # token -> DPoP key (json) or None
        self.token_forms: list[dict[str, str]] = []
        self.token_headers: list[dict[str, str]] = []
        self.idp_forms: list[dict[str, str]] = []
        self.jtis: list[str] = []
        self.rs_challenges = 0
        self.token_error: dict[str, Any] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.mcp(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        host, path = headers.get("host", ""), scope["path"]
        if path == "/mcp":
            return await self.protected(scope, receive, send, headers)
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if path == "/.well-known/oauth-protected-resource/mcp":
            return await _send(send, 200, {"resource": MCP_URL, "authorization_servers": [ISSUER]})
        if path == "/.well-known/oauth-authorization-server/as":
            return await _send(send, 200, self.meta)
        if host.startswith("127.0.0.2") and path == "/token":
            self.idp_forms.append(form)
            return await _send(send, 200, {"access_token": "the-id-jag", "token_type": "N_A",
                                           "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"})
        if path == "/as/token":
            self.token_forms.append(form)
            self.token_headers.append(headers)
            if self.token_error is not None:
                return await _send(send, 400, self.token_error)
            jkt = None
            if "dpop" in headers:
                claims = _verify_dpop(headers["dpop"], "POST", f"{ISSUER}/token", None)
                if self.as_nonce and claims.get("nonce") != self.as_nonce:
                    return await _send(send, 400, {"error": "use_dpop_nonce"}, [(b"dpop-nonce", self.as_nonce.encode())])
                jkt = claims["_jkt"]
            if self.verify_assertion is not None:
                self.verify_assertion(form, headers)
            token = f"tok-{len(self.tokens)}"
            self.tokens[token] = jkt
            return await _send(send, 200, {"access_token": token, "token_type": "DPoP" if jkt else "Bearer",
                                           "expires_in": 3600})
        return await _send(send, 404, {"error": "not_found"})

    async def protected(self, scope: dict[str, Any], receive: Any, send: Any, headers: dict[str, str]) -> None:
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        prm = f"{BASE}/.well-known/oauth-protected-resource/mcp"
        challenge = [(b"www-authenticate", f'Bearer resource_metadata="{prm}"'.encode())]
        if token not in self.tokens:
            return await _send(send, 401, {"error": "invalid_token"}, challenge)
        jkt = self.tokens[token]
        if jkt is not None:
            assert scheme == "DPoP"
            claims = _verify_dpop(headers["dpop"], "POST", MCP_URL, token)
            assert claims["_jkt"] == jkt and claims["jti"] not in self.jtis
            self.jtis.append(claims["jti"])
            if self.rs_nonce and claims.get("nonce") != self.rs_nonce:
                self.rs_challenges += 1
                return await _send(send, 401, {"error": "use_dpop_nonce"}, [
                    (b"www-authenticate", b'DPoP error="use_dpop_nonce"'), (b"dpop-nonce", self.rs_nonce.encode())])
        else:
            assert scheme == "Bearer"
        await self.mcp(scope, receive, send)


def _registration(client_id: str | None = None, **kw: Any) -> Registration:
    if kw.get("client_secret") or kw.get("private_key"):
        kw.setdefault("issuer", ISSUER)  # pre-registered credentials are bound to their issuer
    return Registration(client_id=client_id, **kw)


async def _call(mock: Mock, grant: Grant, registration: Registration | None = None, **kw: Any) -> str:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=mock)) as http:
        oauth = OAuth(MCP_URL, grant, registration=registration, network=Network(http_client=http), **kw)
        async with Client(MCP_URL, mode=VERSION, http_client=http, auth=oauth, cache=False) as client:
            result = await client.call_tool("echo", {"text": "hi"})
            result2 = await client.call_tool("echo", {"text": "again"})
        return f"{result.content[0].text} {result2.content[0].text}"


def _pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


# ====================================================================== client credentials
def test_client_credentials_with_a_secret() -> None:
    mock = Mock({"grant_types_supported": ["client_credentials"],
                 "token_endpoint_auth_methods_supported": ["client_secret_basic"]})
    assert run(_call(mock, ClientCredentials(), _registration("svc", client_secret="s:cr/et"),
                    scope="mcp:tools")) == "hi again"
    (form,) = mock.token_forms
    assert form["grant_type"] == "client_credentials" and form["resource"] == MCP_URL and form["scope"] == "mcp:tools"
    assert "client_secret" not in form
    basic = base64.b64decode(mock.token_headers[0]["authorization"][6:]).decode()
    assert basic == "svc:s%3Acr%2Fet"  # RFC 6749 §2.3.1: form-encoded before Base64


@pytest.mark.parametrize("alg", ["ES256", "RS256"])
def test_client_credentials_private_key_jwt(alg: str) -> None:
    private = ec.generate_private_key(ec.SECP256R1()) if alg == "ES256" else rsa.generate_private_key(65537, 2048)
    public: Any = ECKey.import_key(private.public_key()) if alg == "ES256" else RSAKey.import_key(
        private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    seen: list[dict[str, Any]] = []

    def verify(form: dict[str, str], headers: dict[str, str]) -> None:
        assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        token = jwt.decode(form["client_assertion"], public, algorithms=[alg])
        assert token.header["alg"] == alg
        seen.append(token.claims)

    mock = Mock({"token_endpoint_auth_methods_supported": ["private_key_jwt"],
                 "token_endpoint_auth_signing_alg_values_supported": [alg]}, verify_assertion=verify)
    run(_call(mock, ClientCredentials(), _registration("svc", private_key=_pem(private), signing_algorithm=alg)))
    (claims,) = seen
    assert claims["iss"] == claims["sub"] == "svc" and claims["aud"] == ISSUER and claims["exp"] > time.time()


# ====================================================================== workload identity
@pytest.mark.parametrize("source", ["string", "file", "env", "callable", "async"])
def test_workload_identity_jwt_bearer_sources(source: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mock = Mock({"grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                 "token_endpoint_auth_methods_supported": ["none"]})
    grant: JWTBearer
    if source == "string":
        grant = JWTBearer(assertion="platform.jwt.value")
    elif source == "file":
        (tmp_path / "token").write_text("platform.jwt.value\n")
        grant = JWTBearer(assertion_file=tmp_path / "token")
    elif source == "env":
        monkeypatch.setenv("MY_WORKLOAD_TOKEN", "platform.jwt.value")
        grant = JWTBearer(assertion_env="MY_WORKLOAD_TOKEN")
    elif source == "callable":
        grant = JWTBearer(assertion=lambda: "platform.jwt.value")
    else:
        async def fetch() -> str:
            return "platform.jwt.value"
        grant = JWTBearer(assertion=fetch)
    run(_call(mock, grant, _registration("workload")))
    (form,) = mock.token_forms
    assert form == {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "platform.jwt.value",
                    "resource": MCP_URL, "client_id": "workload"}


def test_workload_identity_error_surfaces_without_retry() -> None:
    mock = Mock({"token_endpoint_auth_methods_supported": ["none"]})
    mock.token_error = {"error": "invalid_grant", "error_description": "JWT assertion is expired"}
    with pytest.raises(OAuthError) as info:
        run(_call(mock, JWTBearer(assertion="expired.jwt.value")))
    assert info.value.error == "invalid_grant" and "expired" in str(info.value)
    assert "expired.jwt.value" not in str(info.value)
    assert len(mock.token_forms) == 1  # no retry, no other grant


def test_workload_identity_missing_file_is_a_clear_error(tmp_path: Any) -> None:
    mock = Mock({})
    with pytest.raises(OAuthError) as info:
        run(_call(mock, JWTBearer(assertion_file=tmp_path / "absent")))
    assert info.value.error == "invalid_assertion" and not mock.token_forms


# ====================================================================== enterprise (SEP-990)
def test_enterprise_managed_authorization() -> None:
    mock = Mock({"grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                 "token_endpoint_auth_methods_supported": ["client_secret_basic"]})
    grant = EnterpriseManaged(f"{IDP}/token", lambda: "the-id-token", idp_client_id="idp-client")
    run(_call(mock, grant, _registration("mcp-client", client_secret="mcp-secret")))
    (exchange,) = mock.idp_forms
    assert exchange == {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "subject_token": "the-id-token", "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                        "audience": ISSUER, "resource": MCP_URL, "client_id": "idp-client"}
    (bearer,) = mock.token_forms
    assert bearer["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" and bearer["assertion"] == "the-id-jag"
    assert base64.b64decode(mock.token_headers[0]["authorization"][6:]) == b"mcp-client:mcp-secret"


# ====================================================================== DPoP
@pytest.mark.parametrize("nonces", [False, True])
def test_dpop_bound_tokens_with_nonces(nonces: bool) -> None:
    mock = Mock({"dpop_signing_alg_values_supported": ["ES256"], "token_endpoint_auth_methods_supported": ["client_secret_post"]},
                rs_nonce="rs-nonce" if nonces else None, as_nonce="as-nonce" if nonces else None)
    assert run(_call(mock, ClientCredentials(), _registration("svc", client_secret="x"))) == "hi again"
    # A fresh proof on every request (distinct jti), all with the one key the token is bound to.
    assert len(mock.jtis) == len(set(mock.jtis)) >= 2
    if nonces:
        assert len(mock.token_forms) == 2  # the use_dpop_nonce answer, then the retry with the nonce
        assert mock.rs_challenges == 1  # the resource server's nonce, learned once, reused after


def test_dpop_refused_when_disabled() -> None:
    mock = Mock({"dpop_signing_alg_values_supported": ["ES256"], "token_endpoint_auth_methods_supported": ["client_secret_post"]})
    run(_call(mock, ClientCredentials(), _registration("svc", client_secret="x"), dpop=False))
    assert "dpop" not in mock.token_headers[0] and list(mock.tokens.values()) == [None]


def test_dpop_proof_names_the_http_method_of_the_transports_own_requests() -> None:
    # The legacy session's GET stream and DELETE get the hook's first step: a GET proof, not POST.
    from mcpkit.client._auth import OutgoingRequest, first_step
    from mcpkit.client.oauth._jose import DPoPKey

    oauth = OAuth(MCP_URL, ClientCredentials(), registration=Registration(client_id="svc", client_secret="x"),
                  storage=InMemoryTokenStorage())
    oauth.dpop.key = key = DPoPKey()
    oauth.storage.set_tokens(MCP_URL, {"access_token": "tok", "token_type": "DPoP", "dpop_jwk": key.private_jwk(),
                                       "dpop_alg": key.alg})
    for method in ("GET", "DELETE", "POST"):
        req = run(first_step(oauth, OutgoingRequest("", http_method=method)))
        assert req.headers["Authorization"] == "DPoP tok"
        assert _verify_dpop(req.headers["DPoP"], method, MCP_URL, "tok")["htm"] == method


def test_client_credentials_and_enterprise_are_declared_in_capabilities() -> None:
    cc = OAuth(MCP_URL, ClientCredentials(), registration=Registration(client_id="svc", client_secret="x"))
    client = Client(MCP_URL, mode=VERSION, auth=cc, capabilities={"extensions": {"other": {"a": 1}}})
    assert client.capabilities["extensions"] == {"io.modelcontextprotocol/oauth-client-credentials": {}, "other": {"a": 1}}
    ent = OAuth(MCP_URL, EnterpriseManaged(f"{IDP}/token", "t"), registration=Registration(client_id="c"))
    assert "io.modelcontextprotocol/enterprise-managed-authorization" in Client(MCP_URL, auth=ent).capabilities["extensions"]
    assert "extensions" not in Client(MCP_URL, auth=OAuth(MCP_URL)).capabilities


def test_private_key_jwt_audience_can_be_the_token_endpoint() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    seen: list[Any] = []
    mock = Mock({"token_endpoint_auth_methods_supported": ["private_key_jwt"]},
                verify_assertion=lambda form, headers: seen.append(
                    jwt.decode(form["client_assertion"], ECKey.import_key(private.public_key())).claims["aud"]))
    run(_call(mock, ClientCredentials(), _registration("svc", private_key=_pem(private),
                                                      assertion_audience="token_endpoint")))
    assert seen == [f"{ISSUER}/token"]
