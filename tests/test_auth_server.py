"""The OAuth resource server (mcpkit.auth.server) in process: an mcpkit server behind
``ResourceServerAuth`` with real signed JWTs (joserfc) from a test issuer whose metadata,
JWKS and introspection endpoint are served over HTTP (httpx.MockTransport).

Covers the 401/403 challenges and metadata, every kind of bad token (each followed by a
good request to show the server keeps serving), per-operation scopes and filtered lists,
JWKS refresh on an unknown key id, DPoP-bound tokens, introspection with its cache, the
principal in handlers and the bindings (legacy sessions, tasks), and build_auth_from_cli.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc")
from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey, OctKey

from mcpkit import Context, Server
from mcpkit.auth.server import (
    IntrospectionVerifier,
    JWTVerifier,
    ResourceServerAuth,
    build_auth_from_cli,
    hierarchical_scopes,
)
from tests.helpers.issuer import ISSUER, DPoPKey, TestIssuer, unsigned
from tests.helpers.legacy import JSON_ACCEPT
from tests.helpers.messages import LEGACY, body, headers_for, init_msg, note
from tests.helpers.servers import ASGI_BASE, ASGI_URL, asgi_client

PRM_URL = ASGI_BASE + "/.well-known/oauth-protected-resource/mcp"


def make_server() -> Server:
    server = Server("protected", "1.0.0", tasks=True, cache_scope="public", ttl_ms=60_000)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def whoami(ctx: Context) -> dict:
        a = ctx.auth
        return {"sub": a.subject, "client": a.client_id, "scopes": sorted(a.scopes), "key": ctx.principal,
                "jti": a.claims.get("jti")}

    @server.tool()
    async def greet(ctx: Context) -> str:
        r = await ctx.elicit("What is your name?", {"type": "object", "properties": {"name": {"type": "string"}}},
                             key="user_name")
        return f"Hello, {r.content['name']}"

    @server.tool(scopes=["mcp:admin"])
    def reset() -> str:
        return "reset done"

    @server.tool(scopes=["mcp:tools"], task="optional")
    async def slow() -> str:
        return "slow done"

    @server.resource("secret://vault", scopes=["vault:read"])
    def vault() -> str:
        return "gold"

    @server.prompt(scopes=["mcp:admin"])
    def admin_prompt() -> str:
        return "be an admin"

    return server


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture(scope="module")
def auth(issuer: TestIssuer) -> ResourceServerAuth:
    return ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), scopes=["mcp:tools", "offline_access"])


@pytest.fixture(scope="module")
def http(auth: ResourceServerAuth) -> Iterator[httpx.Client]:
    with asgi_client(make_server().http_app(auth=auth)) as c:
        yield c


def call(name: str, args: dict | None = None, *, id: Any = 1) -> dict:
    return body("tools/call", {"name": name, "arguments": args or {}}, id=id)


def post(http: httpx.Client, msg: dict, token: str | None = None, *, scheme: str = "Bearer", url: str = ASGI_URL,
         **extra: str) -> httpx.Response:
    h = headers_for(msg)
    if token is not None:
        h["Authorization"] = f"{scheme} {token}"
    h.update(extra)
    return http.post(url, json=msg, headers=h)


def challenge(resp: httpx.Response) -> dict[str, str]:
    value = resp.headers["www-authenticate"]
    return dict(re.findall(r'(\w+)="([^"]*)"', value.split(", DPoP ")[0])) | {"_scheme": value.split(" ", 1)[0]}


def ok_text(resp: httpx.Response) -> Any:
    assert resp.status_code == 200, (resp.status_code, resp.text, resp.headers.get("www-authenticate"))
    result = resp.json()["result"]
    sc = result.get("structuredContent")
    return sc["result"] if sc and set(sc) == {"result"} else sc if sc else result["content"][0]["text"]


def assert_serves(http: httpx.Client, issuer: TestIssuer) -> None:
    assert ok_text(post(http, call("echo", {"text": "still here"}), issuer.token(ASGI_URL))) == "still here"


# ====================================================================== challenges and metadata
def test_no_token_is_401_with_metadata_url_and_scope(http: httpx.Client) -> None:
    resp = post(http, call("echo", {"text": "x"}))
    assert resp.status_code == 401
    c = challenge(resp)
    assert c["_scheme"] == "Bearer" and c["resource_metadata"] == PRM_URL
    assert c["scope"] == "mcp:tools"  # offline_access is never asked for in a challenge
    assert "error" not in c  # no token sent: no error code (RFC 6750 §3.1)
    data = resp.json()
    assert data["jsonrpc"] == "2.0" and data["error"]["code"] == -32001


def test_protected_resource_metadata_path_inserted_and_root(http: httpx.Client) -> None:
    for url in (PRM_URL, ASGI_BASE + "/.well-known/oauth-protected-resource"):
        resp = http.get(url)
        assert resp.status_code == 200, url
        doc = resp.json()
        assert doc["resource"] == ASGI_URL
        assert doc["authorization_servers"] == [ISSUER]
        assert doc["bearer_methods_supported"] == ["header"]
        # The minimal set for basic use (the spec's rule); operation scopes come by step-up (403).
        assert doc["scopes_supported"] == ["mcp:tools", "offline_access"]
    assert http.get(ASGI_BASE + "/.well-known/oauth-protected-resource/other").status_code == 404


def test_valid_token_is_served_and_reaches_the_handler(http: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL, jti="jti-1")
    who = ok_text(post(http, call("whoami"), token))
    assert who == {"sub": "alice", "client": "app-1", "scopes": ["mcp:tools"], "key": f'["{ISSUER}","sub","alice"]', "jti": "jti-1"}


def test_mount_path_is_part_of_the_resource(issuer: TestIssuer) -> None:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()))
    with asgi_client(make_server().http_app(path="/tenant/a/mcp", auth=auth)) as c:
        url = ASGI_BASE + "/tenant/a/mcp"
        resp = post(c, call("echo", {"text": "x"}), url=url)
        assert challenge(resp)["resource_metadata"] == ASGI_BASE + "/.well-known/oauth-protected-resource/tenant/a/mcp"
        assert c.get(challenge(resp)["resource_metadata"]).json()["resource"] == url
        # A token for the server at the origin's /mcp is not for this one.
        assert post(c, call("echo", {"text": "x"}), issuer.token(ASGI_URL), url=url).status_code == 401
        assert ok_text(post(c, call("echo", {"text": "x"}), issuer.token(url), url=url)) == "x"


# ====================================================================== bad tokens
def _bad_tokens(issuer: TestIssuer) -> dict[str, tuple[str, str, str]]:
    """name -> (Authorization header value, expected error, what the description mentions)."""
    now = int(time.time())
    other = ECKey.generate_key("P-256", parameters={"kid": "ec-1"}, private=True)  # same kid, other key
    stranger = ECKey.generate_key("P-256", parameters={"kid": "nobody-knows"}, private=True)
    hs_secret = OctKey.import_key(json.dumps(issuer.keys[0].as_dict(private=False)).encode())
    hs = jose_jwt.encode({"alg": "HS256", "kid": "ec-1"}, issuer.claims(ASGI_URL), hs_secret, algorithms=["HS256"])
    t = issuer.token
    return {
        "wrong audience": ("Bearer " + t("https://other.example/mcp"), "invalid_token", "audience"),
        "audience of another path": ("Bearer " + t(ASGI_BASE + "/other"), "invalid_token", "audience"),
        "wrong issuer": ("Bearer " + t(ASGI_URL, iss="https://evil.test"), "invalid_token", "issuer"),
        "expired": ("Bearer " + t(ASGI_URL, exp=now - 120, iat=now - 720), "invalid_token", "expired"),
        "not yet valid": ("Bearer " + t(ASGI_URL, nbf=now + 600), "invalid_token", "not valid yet"),
        "issued in the future": ("Bearer " + t(ASGI_URL, iat=now + 600), "invalid_token", "future"),
        "no exp": ("Bearer " + t(ASGI_URL, exp=None), "invalid_token", "expiry"),
        "forged signature": ("Bearer " + t(ASGI_URL, key=other), "invalid_token", "signature"),
        "tampered claims": ("Bearer " + _tamper(t(ASGI_URL)), "invalid_token", "signature"),
        "alg none": ("Bearer " + unsigned(issuer.claims(ASGI_URL)), "invalid_token", "algorithm"),
        "HMAC with the public key": ("Bearer " + hs, "invalid_token", "algorithm"),
        "unknown kid": ("Bearer " + t(ASGI_URL, key=stranger), "invalid_token", "unknown key"),
        "not a JWT": ("Bearer not-a-jwt", "invalid_token", "not a signed JWT"),
        "Basic header": ("Basic " + "YWxpY2U6c2VjcmV0", "invalid_request", "Authorization"),
        "empty bearer": ("Bearer ", "invalid_request", "Authorization"),
    }


def _tamper(token: str) -> str:
    import base64

    head, payload, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = "mcp:tools mcp:admin"
    return ".".join([head, base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode(), sig])


BAD = ["wrong audience", "audience of another path", "wrong issuer", "expired", "not yet valid", "issued in the future",
       "no exp", "forged signature", "tampered claims", "alg none", "HMAC with the public key", "unknown kid",
       "not a JWT", "Basic header", "empty bearer"]


@pytest.mark.parametrize("kind", BAD)
def test_bad_token_is_401_and_the_server_keeps_serving(http: httpx.Client, issuer: TestIssuer, kind: str) -> None:
    header, error, words = _bad_tokens(issuer)[kind]
    msg = call("echo", {"text": "x"})
    resp = http.post(ASGI_URL, json=msg, headers=headers_for(msg) | {"Authorization": header})
    assert resp.status_code == 401, (kind, resp.text)
    c = challenge(resp)
    assert c["error"] == error and c["resource_metadata"] == PRM_URL and c["scope"] == "mcp:tools"
    assert words in c["error_description"], c
    assert header.split(" ", 1)[1][:20] not in resp.text or not header.split(" ", 1)[1]  # the token is not echoed
    assert_serves(http, issuer)


def test_token_in_the_query_string_is_refused(http: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL)
    resp = post(http, call("echo", {"text": "x"}), url=f"{ASGI_URL}?access_token={token}")
    assert resp.status_code == 401 and challenge(resp)["error"] == "invalid_request"
    # Even with a good header beside it: a token in the URL leaks into logs, so it is refused.
    resp = post(http, call("echo", {"text": "x"}), token, url=f"{ASGI_URL}?access_token={token}")
    assert resp.status_code == 401
    assert_serves(http, issuer)


def test_token_in_the_body_is_not_read(http: httpx.Client, issuer: TestIssuer) -> None:
    msg = call("echo", {"text": "x"})
    msg["params"]["access_token"] = issuer.token(ASGI_URL)
    resp = http.post(ASGI_URL, json=msg, headers=headers_for(msg))
    assert resp.status_code == 401


def test_bad_tokens_are_not_logged(http: httpx.Client, issuer: TestIssuer, caplog: pytest.LogCaptureFixture) -> None:
    token = issuer.token("https://other.example/mcp")
    with caplog.at_level("DEBUG"):
        assert post(http, call("echo", {"text": "x"}), token).status_code == 401
    assert token not in caplog.text and token.split(".")[2] not in caplog.text


# ====================================================================== scopes
def test_401_names_the_scopes_of_the_operation_too(http: httpx.Client) -> None:
    resp = post(http, call("reset"))
    assert resp.status_code == 401 and challenge(resp)["scope"] == "mcp:tools mcp:admin"
    assert resp.json()["id"] == 1
    bad = post(http, call("reset"), "not-a-jwt")
    assert challenge(bad)["scope"] == "mcp:tools mcp:admin" and challenge(bad)["error"] == "invalid_token"


def test_missing_operation_scope_is_403_naming_it(http: httpx.Client, issuer: TestIssuer) -> None:
    resp = post(http, call("reset"), issuer.token(ASGI_URL))
    assert resp.status_code == 403
    c = challenge(resp)
    assert c["error"] == "insufficient_scope" and c["scope"] == "mcp:tools mcp:admin"
    assert c["resource_metadata"] == PRM_URL
    assert resp.json()["id"] == 1
    assert ok_text(post(http, call("reset"), issuer.token(ASGI_URL, scope="mcp:tools mcp:admin"))) == "reset done"


def test_missing_server_wide_scope_is_403(http: httpx.Client, issuer: TestIssuer) -> None:
    resp = post(http, call("echo", {"text": "x"}), issuer.token(ASGI_URL, scope="something:else"))
    c = challenge(resp)
    assert resp.status_code == 403 and (c["error"], c["scope"]) == ("insufficient_scope", "mcp:tools")


def test_lists_show_only_what_the_token_may_use(http: httpx.Client, issuer: TestIssuer) -> None:
    def names(scope: str, method: str, key: str, field: str = "name") -> set[str]:
        resp = post(http, body(method), issuer.token(ASGI_URL, scope=scope))
        assert resp.status_code == 200, resp.text
        result = resp.json()["result"]
        assert result["cacheScope"] == "private"
        return {x[field] for x in result[key]}

    assert names("mcp:tools", "tools/list", "tools") == {"echo", "whoami", "greet", "slow"}
    assert names("mcp:tools mcp:admin", "tools/list", "tools") == {"echo", "whoami", "greet", "slow", "reset"}
    assert names("mcp:tools", "resources/list", "resources", "uri") == set()
    assert names("mcp:tools vault:read", "resources/list", "resources", "uri") == {"secret://vault"}
    assert names("mcp:tools", "prompts/list", "prompts") == set()


def test_resource_and_prompt_scopes(http: httpx.Client, issuer: TestIssuer) -> None:
    read = body("resources/read", {"uri": "secret://vault"})
    resp = post(http, read, issuer.token(ASGI_URL))
    assert resp.status_code == 403 and challenge(resp)["scope"] == "mcp:tools vault:read"
    resp = post(http, read, issuer.token(ASGI_URL, scope="mcp:tools vault:read"))
    assert resp.status_code == 200 and resp.json()["result"]["contents"][0]["text"] == "gold"
    assert resp.json()["result"]["cacheScope"] == "private"  # scoped: never in a shared cache
    get = body("prompts/get", {"name": "admin_prompt"})
    assert post(http, get, issuer.token(ASGI_URL)).status_code == 403


def test_list_mode_all_and_scope_hierarchy(issuer: TestIssuer) -> None:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), list_mode="all",
                              scope_rule=hierarchical_scopes())
    with asgi_client(make_server().http_app(auth=auth)) as c:
        listed = post(c, body("tools/list"), issuer.token(ASGI_URL, scope="other"))
        assert {t["name"] for t in listed.json()["result"]["tools"]} == {"echo", "whoami", "greet", "slow", "reset"}
        assert post(c, call("reset"), issuer.token(ASGI_URL, scope="other")).status_code == 403
        # "mcp" covers "mcp:admin" under the hierarchical rule.
        assert ok_text(post(c, call("reset"), issuer.token(ASGI_URL, scope="mcp"))) == "reset done"


def test_scp_list_claim_is_read(http: httpx.Client, issuer: TestIssuer) -> None:
    token = issuer.token(ASGI_URL, scope=None, scp=["mcp:tools", "mcp:admin"])
    assert ok_text(post(http, call("reset"), token)) == "reset done"


# ====================================================================== keys
def test_unknown_kid_refreshes_the_jwks_once(issuer: TestIssuer) -> None:
    verifier = JWTVerifier(ISSUER, http_client=issuer.http(), refresh_interval=3600)
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(verifier))) as c:
        assert ok_text(post(c, call("echo", {"text": "a"}), issuer.token(ASGI_URL))) == "a"
        before = issuer.jwks_fetches
        # The issuer rotates: a token with the new kid makes the server fetch the JWKS again.
        new = issuer.rotate()
        verifier._fetched_at = float("-inf")  # the last fetch was long enough ago
        assert ok_text(post(c, call("echo", {"text": "b"}), issuer.token(ASGI_URL, key=new))) == "b"
        assert issuer.jwks_fetches == before + 1
        # Unknown kids in a burst do not hammer the issuer (one fetch per refresh_interval).
        stranger = ECKey.generate_key("P-256", parameters={"kid": "zzz"}, private=True)
        for _ in range(5):
            assert post(c, call("echo", {"text": "c"}), issuer.token(ASGI_URL, key=stranger)).status_code == 401
        assert issuer.jwks_fetches == before + 1
        # Tokens with the old key still pass, from the cached keys.
        assert ok_text(post(c, call("echo", {"text": "d"}), issuer.token(ASGI_URL))) == "d"


def test_verifier_refuses_symmetric_algorithms() -> None:
    with pytest.raises(ValueError):
        JWTVerifier(ISSUER, algorithms=["HS256"])
    with pytest.raises(ValueError):
        JWTVerifier(ISSUER, algorithms=["none"])


def test_rs256_tokens_and_alg_allow_list(issuer: TestIssuer) -> None:
    verifier = JWTVerifier(ISSUER, http_client=issuer.http(), algorithms=["ES256"])
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(verifier))) as c:
        rs = issuer.token(ASGI_URL, key=issuer.keys[1], alg="RS256")
        resp = post(c, call("echo", {"text": "x"}), rs)
        assert resp.status_code == 401 and "algorithm" in challenge(resp)["error_description"]
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http())))) as c:
        assert ok_text(post(c, call("echo", {"text": "x"}), rs)) == "x"


# ====================================================================== DPoP
@pytest.fixture(scope="module")
def dpop_key() -> DPoPKey:
    return DPoPKey()


def _dpop_post(http: httpx.Client, token: str, proof: str | None, msg: dict | None = None,
               scheme: str = "DPoP") -> httpx.Response:
    msg = msg or call("echo", {"text": "dpop"})
    h = headers_for(msg) | {"Authorization": f"{scheme} {token}"}
    if proof is not None:
        h["DPoP"] = proof
    return http.post(ASGI_URL, json=msg, headers=h)


def test_dpop_bound_token_with_a_valid_proof(http: httpx.Client, issuer: TestIssuer, dpop_key: DPoPKey) -> None:
    token = issuer.token(ASGI_URL, cnf={"jkt": dpop_key.jkt})
    assert ok_text(_dpop_post(http, token, dpop_key.proof("POST", ASGI_URL, token))) == "dpop"
    # A fresh proof per request: the token works again.
    assert ok_text(_dpop_post(http, token, dpop_key.proof("POST", ASGI_URL, token))) == "dpop"


def _bad_proofs(issuer: TestIssuer, key: DPoPKey) -> dict[str, tuple[str, str | None, str, str]]:
    """name -> (token, proof, scheme, expected error)."""
    token = issuer.token(ASGI_URL, cnf={"jkt": key.jkt})
    other = DPoPKey()
    replayed = key.proof("POST", ASGI_URL, token, jti="used-once")
    return {
        "bound token without a proof": (token, None, "DPoP", "invalid_token"),
        "bound token as Bearer": (token, key.proof("POST", ASGI_URL, token), "Bearer", "invalid_token"),
        "proof for another URL": (token, key.proof("POST", ASGI_BASE + "/elsewhere", token), "DPoP", "invalid_dpop_proof"),
        "proof for another method": (token, key.proof("GET", ASGI_URL, token), "DPoP", "invalid_dpop_proof"),
        "proof for another token": (token, key.proof("POST", ASGI_URL, "other-token"), "DPoP", "invalid_dpop_proof"),
        "proof without ath": (token, key.proof("POST", ASGI_URL, None), "DPoP", "invalid_dpop_proof"),
        "proof signed by another key": (token, other.proof("POST", ASGI_URL, token), "DPoP", "invalid_dpop_proof"),
        "stale proof": (token, key.proof("POST", ASGI_URL, token, iat=time.time() - 3600), "DPoP", "invalid_dpop_proof"),
        "proof from the future": (token, key.proof("POST", ASGI_URL, token, iat=time.time() + 3600), "DPoP",
                                  "invalid_dpop_proof"),
        "proof with the wrong typ": (token, key.proof("POST", ASGI_URL, token, typ="JWT"), "DPoP", "invalid_dpop_proof"),
        "two proofs": (token, replayed + ", " + replayed, "DPoP", "invalid_dpop_proof"),
        "unbound token with the DPoP scheme": (issuer.token(ASGI_URL), key.proof("POST", ASGI_URL, issuer.token(ASGI_URL)),
                                               "DPoP", "invalid_token"),
    }


@pytest.mark.parametrize("kind", ["bound token without a proof", "bound token as Bearer", "proof for another URL",
                                  "proof for another method", "proof for another token", "proof without ath",
                                  "proof signed by another key", "stale proof", "proof from the future",
                                  "proof with the wrong typ", "two proofs", "unbound token with the DPoP scheme"])
def test_bad_dpop_is_401(http: httpx.Client, issuer: TestIssuer, dpop_key: DPoPKey, kind: str) -> None:
    token, proof, scheme, error = _bad_proofs(issuer, dpop_key)[kind]
    resp = _dpop_post(http, token, proof, scheme=scheme)
    assert resp.status_code == 401, (kind, resp.text)
    assert challenge(resp)["error"] == error, resp.headers["www-authenticate"]
    assert_serves(http, issuer)


def test_replayed_dpop_proof_is_refused(http: httpx.Client, issuer: TestIssuer, dpop_key: DPoPKey) -> None:
    token = issuer.token(ASGI_URL, cnf={"jkt": dpop_key.jkt})
    proof = dpop_key.proof("POST", ASGI_URL, token)
    assert _dpop_post(http, token, proof).status_code == 200
    resp = _dpop_post(http, token, proof)
    assert resp.status_code == 401 and challenge(resp)["error"] == "invalid_dpop_proof"
    assert resp.headers["www-authenticate"].startswith("DPoP ")
    assert "already used" in challenge(resp)["error_description"]


def test_dpop_nonce(issuer: TestIssuer, dpop_key: DPoPKey) -> None:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), use_dpop_nonce=True)
    with asgi_client(make_server().http_app(auth=auth)) as c:
        token = issuer.token(ASGI_URL, cnf={"jkt": dpop_key.jkt})
        resp = _dpop_post(c, token, dpop_key.proof("POST", ASGI_URL, token))
        assert resp.status_code == 401 and challenge(resp)["error"] == "use_dpop_nonce"
        nonce = resp.headers["dpop-nonce"]
        assert ok_text(_dpop_post(c, token, dpop_key.proof("POST", ASGI_URL, token, nonce=nonce))) == "dpop"
        resp = _dpop_post(c, token, dpop_key.proof("POST", ASGI_URL, token, nonce="forged-nonce"))
        assert resp.status_code == 401 and challenge(resp)["error"] == "use_dpop_nonce"


def test_dpop_required(issuer: TestIssuer, dpop_key: DPoPKey) -> None:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), dpop="require")
    with asgi_client(make_server().http_app(auth=auth)) as c:
        resp = post(c, call("echo", {"text": "x"}))
        assert resp.headers["www-authenticate"].startswith("DPoP ")
        assert c.get(PRM_URL).json()["dpop_bound_access_tokens_required"] is True
        assert post(c, call("echo", {"text": "x"}), issuer.token(ASGI_URL)).status_code == 401
        token = issuer.token(ASGI_URL, cnf={"jkt": dpop_key.jkt})
        assert ok_text(_dpop_post(c, token, dpop_key.proof("POST", ASGI_URL, token))) == "dpop"


# ====================================================================== bindings
def _legacy_headers(token: str, sid: str | None = None) -> dict[str, str]:
    h = dict(JSON_ACCEPT) | {"Authorization": f"Bearer {token}"}
    if sid:
        h |= {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    return h


def test_legacy_session_is_bound_to_its_principal(http: httpx.Client, issuer: TestIssuer) -> None:
    alice = issuer.token(ASGI_URL)
    bob = issuer.token(ASGI_URL, sub="bob")
    resp = http.post(ASGI_URL, json=init_msg(), headers=_legacy_headers(alice))
    assert resp.status_code == 200, resp.text
    sid = resp.headers["mcp-session-id"]
    assert http.post(ASGI_URL, json=note("notifications/initialized"), headers=_legacy_headers(alice, sid)).status_code == 202
    msg = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    resp = http.post(ASGI_URL, json=msg, headers=_legacy_headers(alice, sid))
    assert resp.status_code == 200 and '\\"sub\\": \\"alice\\"' in resp.text or '"sub":"alice"' in resp.text.replace(" ", "")
    # Bob (a valid token of his own) cannot use, watch or end Alice's session.
    assert http.post(ASGI_URL, json=msg, headers=_legacy_headers(bob, sid)).status_code == 404
    assert http.delete(ASGI_URL, headers=_legacy_headers(bob, sid)).status_code == 404
    # Without the scope, a session request for a scoped tool is 403 too.
    reset = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "reset", "arguments": {}}}
    resp = http.post(ASGI_URL, json=reset, headers=_legacy_headers(alice, sid))
    assert resp.status_code == 403 and challenge(resp)["error"] == "insufficient_scope"
    # Without a token at all: 401.
    h = _legacy_headers(alice, sid)
    del h["Authorization"]
    assert http.post(ASGI_URL, json=msg, headers=h).status_code == 401
    assert http.delete(ASGI_URL, headers=_legacy_headers(alice, sid)).status_code == 200


def test_mrtr_request_state_is_bound_to_the_principal(http: httpx.Client, issuer: TestIssuer) -> None:
    from tests.helpers.messages import META_CAPS

    def greet(token: str, **extra: Any) -> dict:
        msg = call("greet")
        msg["params"]["_meta"][META_CAPS] = {"elicitation": {"form": {}}}
        msg["params"].update(extra)
        resp = post(http, msg, token)
        assert resp.status_code == 200, resp.text
        return resp.json()

    first = greet(issuer.token(ASGI_URL))["result"]
    assert first["resultType"] == "input_required"
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    # Bob replays Alice's requestState with a valid token of his own: refused.
    stolen = greet(issuer.token(ASGI_URL, sub="bob"), requestState=first["requestState"], inputResponses=answer)
    assert stolen["error"]["code"] == -32602, stolen
    done = greet(issuer.token(ASGI_URL), requestState=first["requestState"], inputResponses=answer)
    assert done["result"]["content"][0]["text"] == "Hello, Ada"


def test_wildcard_host_needs_a_configured_resource(issuer: TestIssuer) -> None:
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()))
    with pytest.raises(ValueError, match="resource"):
        make_server().http_app(auth=auth, allowed_hosts=["*"])
    pinned = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), resource="https://mcp.example.com/mcp")
    with asgi_client(make_server().http_app(auth=pinned, allowed_hosts=["*"])) as c:
        # The Host header cannot move the audience: a token for the Host's URL is not for this server.
        msg = call("echo", {"text": "x"})
        h = headers_for(msg) | {"Host": "evil.example", "Authorization": "Bearer " + issuer.token("http://evil.example/mcp")}
        assert c.post(ASGI_URL, json=msg, headers=h).status_code == 401
        h["Authorization"] = "Bearer " + issuer.token("https://mcp.example.com/mcp")
        assert c.post(ASGI_URL, json=msg, headers=h).status_code == 200


def test_tasks_are_visible_only_to_their_creator(http: httpx.Client, issuer: TestIssuer) -> None:
    from tests.helpers.messages import META_CAPS

    msg = call("slow")
    msg["params"]["_meta"][META_CAPS] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    resp = post(http, msg, issuer.token(ASGI_URL))
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    task_id = (result.get("task") or {}).get("taskId") or result.get("taskId")
    if task_id is None:
        pytest.skip(f"the tool ran inline: {result}")
    get = body("tasks/get", {"taskId": task_id})
    get["params"]["_meta"][META_CAPS] = msg["params"]["_meta"][META_CAPS]
    assert post(http, get, issuer.token(ASGI_URL), **{"Mcp-Name": task_id}).json().get("result") is not None
    other = post(http, get, issuer.token(ASGI_URL, sub="bob"), **{"Mcp-Name": task_id}).json()
    assert "error" in other, other


# ====================================================================== introspection
def test_introspection_with_client_auth_and_a_short_cache(issuer: TestIssuer) -> None:
    now = int(time.time())
    issuer.active["opaque-good"] = {"active": True, "sub": "carol", "client_id": "svc", "scope": "mcp:tools",
                                    "aud": ASGI_URL, "iss": ISSUER, "exp": now + 600}
    issuer.active["opaque-other-aud"] = {"active": True, "sub": "carol", "scope": "mcp:tools", "aud": "https://x.test",
                                         "exp": now + 600}
    verifier = IntrospectionVerifier(client_id="rs-client", client_secret="rs-secret", issuer=ISSUER,
                                     http_client=issuer.http(), cache_ttl=30)
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(verifier, scopes=["mcp:tools"]))) as c:
        who = ok_text(post(c, call("whoami"), "opaque-good"))
        assert who["sub"] == "carol" and who["client"] == "svc"
        ok_text(post(c, call("whoami"), "opaque-good"))
        assert verifier.calls == 1  # the second call came from the cache
        assert issuer.introspections[-1]["token_type_hint"] == "access_token"
        assert post(c, call("whoami"), "opaque-revoked").status_code == 401
        assert post(c, call("whoami"), "opaque-other-aud").status_code == 401
    bad = IntrospectionVerifier(f"{ISSUER}/introspect", client_id="rs-client", client_secret="wrong",
                                http_client=issuer.http())
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(bad, authorization_servers=[ISSUER]))) as c:
        assert post(c, call("whoami"), "opaque-good").status_code == 401


# ====================================================================== the CLI options
def test_build_auth_from_cli() -> None:
    import argparse

    ns = argparse.Namespace(auth_issuer=ISSUER, auth_audience=None, auth_scope=["mcp:tools"], public_url=None,
                            auth_introspect=None, host="127.0.0.1", port=8123, path="/mcp")
    auth = build_auth_from_cli(ns)
    assert auth is not None and auth.resource == "http://127.0.0.1:8123/mcp" and auth.scopes == ("mcp:tools",)
    assert isinstance(auth.verifier, JWTVerifier) and auth.verifier.issuer == ISSUER
    auth = build_auth_from_cli(auth_issuer=ISSUER, public_url="https://mcp.example.com/api/mcp")
    assert auth is not None and auth.metadata("https://mcp.example.com/api/mcp")["resource"] == auth.resource
    assert build_auth_from_cli(argparse.Namespace(auth_issuer=None)) is None
    env = {"MCPKIT_AUTH_CLIENT_ID": "rs", "MCPKIT_AUTH_CLIENT_SECRET": "s"}
    auth = build_auth_from_cli(auth_issuer=ISSUER, auth_introspect=f"{ISSUER}/introspect", environ=env)
    assert auth is not None and isinstance(auth.verifier, IntrospectionVerifier)
    with pytest.raises(SystemExit):
        build_auth_from_cli(auth_issuer=ISSUER, auth_introspect=f"{ISSUER}/introspect", environ={})


def test_unprotected_server_and_import_cost() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import mcpkit, sys; s = mcpkit.Server('x'); s.http_app(); "
                          "print(sorted(m for m in sys.modules if m.startswith(('mcpkit.auth', 'joserfc', 'httpx'))))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ====================================================================== verifier details
def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def _request(resource: str = ASGI_URL) -> Any:
    from mcpkit.auth.server import TokenRequest

    return TokenRequest("POST", resource, "Bearer", {})


def test_discovery_falls_back_to_openid_and_checks_the_issuer(issuer: TestIssuer) -> None:
    from mcpkit.auth.server import InvalidToken

    def oidc_only(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/oauth-authorization-server":
            return httpx.Response(404)
        return issuer.handler(request)

    v = JWTVerifier(ISSUER, http_client=httpx.AsyncClient(transport=httpx.MockTransport(oidc_only)))
    assert _run(v.verify(issuer.token(ASGI_URL), _request())).subject == "alice"

    def liar(request: httpx.Request) -> httpx.Response:  # metadata naming another issuer: ignored
        if request.url.path.startswith("/.well-known/"):
            return httpx.Response(200, json={"issuer": "https://evil.test", "jwks_uri": f"{ISSUER}/jwks"})
        return issuer.handler(request)

    v = JWTVerifier(ISSUER, http_client=httpx.AsyncClient(transport=httpx.MockTransport(liar)))
    with pytest.raises(InvalidToken, match="unavailable"):
        _run(v.verify(issuer.token(ASGI_URL), _request()))


def test_issuer_down_is_401_and_the_server_recovers(issuer: TestIssuer) -> None:
    state = {"down": True}

    def flaky(request: httpx.Request) -> httpx.Response:
        if state["down"]:
            raise httpx.ConnectError("down")
        return issuer.handler(request)

    verifier = JWTVerifier(ISSUER, http_client=httpx.AsyncClient(transport=httpx.MockTransport(flaky)),
                           refresh_interval=0, failure_backoff=0.2)
    with asgi_client(make_server().http_app(auth=ResourceServerAuth(verifier))) as c:
        resp = post(c, call("echo", {"text": "x"}), issuer.token(ASGI_URL))
        assert resp.status_code == 401 and "unavailable" in challenge(resp)["error_description"]
        state["down"] = False
        time.sleep(0.25)  # a failed fetch is not tried again before the backoff (see tests/security/test_tokens.py)
        assert ok_text(post(c, call("echo", {"text": "x"}), issuer.token(ASGI_URL))) == "x"


def test_audience_options(issuer: TestIssuer) -> None:
    from mcpkit.auth.server import InvalidToken

    other = issuer.token("https://api.example.com")
    explicit = JWTVerifier(ISSUER, http_client=issuer.http(), audience="https://api.example.com")
    assert _run(explicit.verify(other, _request())).subject == "alice"
    with pytest.raises(InvalidToken):
        _run(JWTVerifier(ISSUER, http_client=issuer.http()).verify(other, _request()))
    unchecked = JWTVerifier(ISSUER, http_client=issuer.http(), audience=False)  # explicit opt-out only
    assert _run(unchecked.verify(other, _request())).subject == "alice"


def test_scope_rules() -> None:
    from mcpkit.auth.server import Principal, exact_scopes

    rule = hierarchical_scopes()
    assert rule(frozenset({"mcp"}), "mcp:tools:write") and rule(frozenset({"mcp:tools"}), "mcp:tools")
    assert not rule(frozenset({"mcp:tool"}), "mcp:tools") and not rule(frozenset({"mcp:tools"}), "mcp")
    assert not exact_scopes(frozenset({"mcp"}), "mcp:tools")
    p = Principal("s", "c", frozenset({"a", "b"}))
    assert p.allows(["a"]) and not p.allows(["a", "c"]) and p.missing(["a", "c", "d"]) == ["c", "d"]
    assert p.key == '[null,"sub","s"]' and Principal(None, "c", frozenset()).key == '[null,"client","c"]'



def test_introspection_client_secret_post(issuer: TestIssuer) -> None:
    seen: list[str] = []

    def endpoint(request: httpx.Request) -> httpx.Response:
        seen.append(request.content.decode())
        return httpx.Response(200, json={"active": True, "sub": "dave", "scope": "mcp:tools", "aud": [ASGI_URL]})

    v = IntrospectionVerifier("https://as.test/introspect", client_id="rs", client_secret="s3", auth_method="client_secret_post",
                              http_client=httpx.AsyncClient(transport=httpx.MockTransport(endpoint)))
    p = _run(v.verify("opaque", _request()))
    assert p.subject == "dave" and p.expires_at is None
    assert "client_id=rs" in seen[0] and "client_secret=s3" in seen[0] and "token=opaque" in seen[0]
