"""The resource server's token handling under attack (issue 18, items 7, 8 and 15), over real HTTP.

- 7: every malformed access token or DPoP proof (bad base64, bad JSON, a header that is not
  an object, a ``kid``/``alg``/``typ``/``jwk`` of the wrong type, deep nesting, huge sizes)
  is a 401 with a ``WWW-Authenticate`` challenge and a JSON-RPC body, never a 500, and the
  server keeps serving.
- 8: while the issuer fails, forged tokens do not each trigger fresh metadata/JWKS fetches
  (backoff per issuer), and the issuer is picked up again once it is back.
- 15: ``typ: at+jwt`` is required by default (RFC 9068 §4), with an opt-out.

The protected server is tests/servers/token_server.py on a real uvicorn; the issuer is
tests/helpers/issuer.py's :class:`HttpIssuer` on a real loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc")
from joserfc import jws
from joserfc.jwk import ECKey

from mcpkit.auth.server import IntrospectionVerifier, InvalidToken, JWTVerifier, TokenRequest, build_auth_from_cli
from tests.helpers.issuer import DPoPKey, HttpIssuer, b64u, http_issuer
from tests.helpers.messages import body, headers_for
from tests.helpers.paths import SERVERS, subprocess_env
from tests.helpers.servers import running_server

TOKEN_SERVER = SERVERS / "token_server.py"
DEEP = 5000


def _argv(port: int) -> list[str]:
    return [sys.executable, str(TOKEN_SERVER), str(port)]


@contextlib.contextmanager
def protected(issuer: HttpIssuer, **env: str) -> Iterator[str]:
    """The token server on a real uvicorn, trusting ``issuer``; yields its MCP URL."""
    with running_server(_argv, env=subprocess_env(TOKEN_ISSUER=issuer.issuer, **env)) as url:
        yield url


@pytest.fixture(scope="module")
def issuer() -> Iterator[HttpIssuer]:
    with http_issuer() as iss:
        yield iss


@pytest.fixture(scope="module")
def url(issuer: HttpIssuer) -> Iterator[str]:
    with protected(issuer) as u:
        yield u


def call(name: str = "echo", args: dict[str, Any] | None = None) -> dict[str, Any]:
    return body("tools/call", {"name": name, "arguments": args if args is not None else {"text": "hi"}})


def post(url: str, authorization: str | bytes | None, **extra: str | bytes) -> httpx.Response:
    msg = call()
    headers: dict[str, Any] = headers_for(msg)
    if authorization is not None:
        headers["Authorization"] = authorization
    headers.update(extra)
    return httpx.post(url, json=msg, headers=headers, timeout=10.0, trust_env=False)


def challenge(resp: httpx.Response) -> dict[str, str]:
    value = resp.headers["www-authenticate"]
    return dict(re.findall(r'(\w+)="([^"]*)"', value)) | {"_scheme": value.split(" ", 1)[0]}


def assert_refused(resp: httpx.Response, error: str, scheme: str | None = None) -> None:
    assert resp.status_code == 401, (resp.status_code, resp.text[:300])
    c = challenge(resp)
    assert c["error"] == error, c
    if scheme is not None:
        assert c["_scheme"] == scheme, c
    assert resp.headers["content-type"].startswith("application/json")
    err = resp.json()["error"]
    assert err["code"] == -32001 and err["data"] == {"error": error}
    assert "Traceback" not in resp.text


def assert_serves(url: str, issuer: HttpIssuer) -> None:
    resp = post(url, "Bearer " + issuer.token(url))
    assert resp.status_code == 200, (resp.status_code, resp.text)
    assert resp.json()["result"]["content"][0]["text"] == "hi"


# ====================================================================== 7: malformed access tokens
def _seg(value: Any) -> str:
    return b64u(value if isinstance(value, bytes) else json.dumps(value).encode())


def _jwt(header: Any, payload: Any = None, sig: str = "c2ln") -> str:
    return f"{_seg(header)}.{_seg(payload if payload is not None else {'sub': 'x'})}.{sig}"


def _signed(issuer: HttpIssuer, header: dict[str, Any], payload: bytes) -> str:
    """A compact JWS the issuer really signed, over any payload bytes."""
    key = issuer.keys[0]
    return jws.serialize_compact({"alg": "ES256", "typ": "at+jwt", "kid": key.kid, **header}, payload, key,
                                 algorithms=["ES256"])


def _deep(n: int = DEEP) -> Any:
    v: Any = "x"
    for _ in range(n):
        v = [v]
    return v


def _deep_text(n: int = DEEP) -> bytes:
    return b"[" * n + b"]" * n


def _raw(header: bytes, claims: Any) -> str:
    """A token whose header segment is exactly ``header`` (bytes, not necessarily JSON)."""
    return f"{b64u(header)}.{_seg(claims)}.c2ln"


def _malformed_tokens(issuer: HttpIssuer, url: str) -> dict[str, str | bytes]:
    good = {"alg": "ES256", "typ": "at+jwt"}
    claims = issuer.claims(url)
    deep_header = b'{"alg":"ES256","typ":"at+jwt","x":' + _deep_text() + b"}"
    return {
        "bad base64 header": "!!!." + _seg(claims) + ".c2ln",
        "base64 with stray characters": _jwt(good).replace(".", "*.", 1),
        "header not JSON": _raw(b"not json", claims),
        "header not UTF-8": _raw(b'{"alg": "\xff\xfe"}', claims),
        "header a list": _jwt([1, 2]),
        "header a string": _jwt("ES256"),
        "header a number": _jwt(42),
        "header null": _raw(b"null", claims),
        "kid a list": _jwt(good | {"kid": ["ec-1"]}),
        "kid an object": _jwt(good | {"kid": {"id": "ec-1"}}),
        "kid a number": _jwt(good | {"kid": 7}),
        "kid nested deep": _jwt(good | {"kid": _deep(40)}),
        "alg a list": _jwt({"alg": ["ES256"], "typ": "at+jwt"}),
        "alg an object": _jwt({"alg": {"name": "ES256"}, "typ": "at+jwt"}),
        "alg missing": _jwt({"typ": "at+jwt", "kid": "ec-1"}),
        "typ a list": _jwt({"alg": "ES256", "typ": ["at+jwt"]}),
        "jwk a string": _jwt(good | {"jwk": "key"}),
        "crit extension": _jwt(good | {"crit": ["exp"], "exp": 1}),
        "header nested thousands deep": _raw(deep_header, claims),
        "header nothing but brackets": _raw(_deep_text(), claims),
        "claims nested thousands deep": f"{_seg(good)}.{b64u(_deep_text())}.c2ln",
        "signed claims nested deep": _signed(issuer, {}, b'{"a":' + _deep_text(2000) + b"}"),
        "signed claims a list": _signed(issuer, {}, b"[1, 2]"),
        "signed claims not JSON": _signed(issuer, {}, b"hello"),
        "signed, cnf not an object": issuer.token(url, cnf="bound"),
        "signed, cnf.jkt a list": issuer.token(url, cnf={"jkt": ["a"]}),
        "two segments": f"{_seg(good)}.{_seg(claims)}",
        "four segments": _jwt(good) + ".more",
        "empty header": "." + _seg(claims) + ".c2ln",
        "huge token": _jwt(good | {"pad": "a" * 20000}),
        "non-ASCII token": ("Bearer " + _jwt(good) + "\u00e9").encode("latin-1"),
    }


MALFORMED = ["bad base64 header", "base64 with stray characters", "header not JSON", "header not UTF-8",
             "header a list", "header a string", "header a number", "header null", "kid a list", "kid an object",
             "kid a number", "kid nested deep", "alg a list", "alg an object", "alg missing", "typ a list",
             "jwk a string", "crit extension", "header nested thousands deep", "header nothing but brackets",
             "claims nested thousands deep", "signed claims nested deep", "signed claims a list",
             "signed claims not JSON", "signed, cnf not an object", "signed, cnf.jkt a list", "two segments",
             "four segments", "empty header", "huge token", "non-ASCII token"]


@pytest.mark.parametrize("scheme", ["Bearer", "DPoP"])
@pytest.mark.parametrize("kind", MALFORMED)
def test_malformed_access_token_is_401_invalid_token(url: str, issuer: HttpIssuer, kind: str, scheme: str) -> None:
    token = _malformed_tokens(issuer, url)[kind]
    header = token if isinstance(token, bytes) else f"{scheme} {token}"
    if isinstance(token, bytes) and scheme == "DPoP":
        header = b"DPoP " + token.split(b" ", 1)[1]
    assert_refused(post(url, header), "invalid_token")
    assert_serves(url, issuer)


# ====================================================================== 7: malformed DPoP proofs
def _proof_parts(key: DPoPKey, url: str, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header = {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.key.as_dict(private=False)}
    claims = {"htm": "POST", "htu": url, "iat": int(time.time()), "jti": "j",
              "ath": b64u(hashlib.sha256(token.encode()).digest())}
    return header, claims


def _malformed_proofs(key: DPoPKey, url: str, token: str) -> dict[str, str]:
    header, claims = _proof_parts(key, url, token)
    jwk = header["jwk"]
    deep_jwk = b'{"alg":"ES256","typ":"dpop+jwt","jwk":' + _deep_text() + b"}"
    return {
        "bad base64": "!!!." + _seg(claims) + ".c2ln",
        "header not JSON": _raw(b"{{{", claims),
        "header a list": _jwt([header], claims),
        "header null": _raw(b"null", claims),
        "jwk a string": _jwt(header | {"jwk": "key"}, claims),
        "jwk a list": _jwt(header | {"jwk": [jwk]}, claims),
        "jwk nested thousands deep": _raw(deep_jwk, claims),
        "jwk kty a list": _jwt(header | {"jwk": jwk | {"kty": ["EC"]}}, claims),
        "jwk crv an object": _jwt(header | {"jwk": jwk | {"crv": {"name": "P-256"}}}, claims),
        "jwk x a number": _jwt(header | {"jwk": jwk | {"x": 12}}, claims),
        "jwk unknown kty": _jwt(header | {"jwk": {"kty": "XYZ"}}, claims),
        "jwk empty": _jwt(header | {"jwk": {}}, claims),
        "alg a list": _jwt(header | {"alg": ["ES256"]}, claims),
        "typ a list": _jwt(header | {"typ": ["dpop+jwt"]}, claims),
        "claims nested thousands deep": f"{_seg(header)}.{b64u(_deep_text())}.c2ln",
        "huge proof": _jwt(header | {"pad": "a" * 9000}, claims),
        "two segments": f"{_seg(header)}.{_seg(claims)}",
    }


PROOFS = ["bad base64", "header not JSON", "header a list", "header null", "jwk a string", "jwk a list",
          "jwk nested thousands deep", "jwk kty a list", "jwk crv an object", "jwk x a number", "jwk unknown kty",
          "jwk empty", "alg a list", "typ a list", "claims nested thousands deep", "huge proof", "two segments"]


@pytest.fixture(scope="module")
def dpop_key() -> DPoPKey:
    return DPoPKey()


@pytest.mark.parametrize("kind", PROOFS)
def test_malformed_dpop_proof_is_401_invalid_dpop_proof(url: str, issuer: HttpIssuer, dpop_key: DPoPKey,
                                                        kind: str) -> None:
    token = issuer.token(url, cnf={"jkt": dpop_key.jkt})
    proof = _malformed_proofs(dpop_key, url, token)[kind]
    assert_refused(post(url, f"DPoP {token}", DPoP=proof), "invalid_dpop_proof", scheme="DPoP")
    # The same token with a good proof still passes: the server kept serving.
    good = post(url, f"DPoP {token}", DPoP=dpop_key.proof("POST", url, token))
    assert good.status_code == 200, good.text


# ====================================================================== 15: typ at+jwt
def test_typ_at_jwt_is_required_by_default(url: str, issuer: HttpIssuer) -> None:
    for typ in (None, "JWT", "jwt", "application/jwt", "dpop+jwt"):
        resp = post(url, "Bearer " + issuer.token(url, typ=typ))
        assert_refused(resp, "invalid_token")
        assert "at+jwt" in challenge(resp)["error_description"], typ
    for typ in ("at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+JWT"):
        resp = post(url, "Bearer " + issuer.token(url, typ=typ))
        assert resp.status_code == 200, (typ, resp.text)


def test_typ_check_opt_out(issuer: HttpIssuer) -> None:
    with protected(issuer, TOKEN_AT_JWT="0") as url:
        resp = post(url, "Bearer " + issuer.token(url, typ=None))
        assert resp.status_code == 200, resp.text
    verifier = JWTVerifier(issuer.issuer)
    assert verifier.require_at_jwt_typ is True
    assert JWTVerifier(issuer.issuer, require_at_jwt_typ=False).require_at_jwt_typ is False


def test_typ_check_from_the_cli() -> None:
    on = build_auth_from_cli(auth_issuer="https://issuer.example", port=8123)
    off = build_auth_from_cli(auth_issuer="https://issuer.example", port=8123, auth_no_typ_check=True)
    assert on is not None and off is not None
    assert on.verifier.require_at_jwt_typ is True  # type: ignore[attr-defined]
    assert off.verifier.require_at_jwt_typ is False  # type: ignore[attr-defined]
    from mcpkit.cli._serve import parser

    ns = parser().parse_args(["--http", "--auth-issuer", "https://issuer.example", "--auth-no-typ-check", "x.py"])
    assert ns.auth_no_typ_check is True


# ====================================================================== 8: failing issuer
def _forged(issuer: HttpIssuer, url: str, i: int) -> str:
    stranger = ECKey.generate_key("P-256", parameters={"kid": f"forged-{i}"}, private=True)
    return issuer.token(url, key=stranger)


def test_failing_issuer_is_not_hammered_by_forged_tokens(issuer: HttpIssuer) -> None:
    # A server that has not fetched the issuer's keys yet, then the issuer goes down.
    with protected(issuer) as url:
        issuer.fail = 503
        try:
            before = issuer.fetches()
            started = time.monotonic()
            for i in range(30):
                assert_refused(post(url, "Bearer " + _forged(issuer, url, i)), "invalid_token")
            elapsed = time.monotonic() - started
            fetched = issuer.fetches() - before
            # One attempt (metadata: two well-known forms) and at most a few retries after the backoff, however
            # many tokens: without the backoff every token fetched the metadata again (60 requests and more).
            attempts = 1 + max(0, int(elapsed).bit_length())
            assert 1 <= fetched <= 2 * attempts + 2, (fetched, elapsed)
        finally:
            issuer.fail = None
        # Recovered: picked up after the backoff, and good tokens pass again.
        deadline = time.monotonic() + 15
        while True:
            resp = post(url, "Bearer " + issuer.token(url))
            if resp.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert resp.status_code == 200, resp.text


def test_failing_issuer_with_keys_already_held(issuer: HttpIssuer) -> None:
    with protected(issuer) as url:
        assert_serves(url, issuer)
        issuer.fail = 503
        try:
            before = issuer.fetches()
            for i in range(20):
                assert_refused(post(url, "Bearer " + _forged(issuer, url, i)), "invalid_token")
            assert issuer.fetches() - before <= 2
            assert_serves(url, issuer)  # the keys it holds still work during the outage
        finally:
            issuer.fail = None


def _request(url: str) -> TokenRequest:
    return TokenRequest("POST", url, "Bearer", {})


def test_verifier_backoff_is_bounded_and_resets(issuer: HttpIssuer) -> None:
    url = "http://127.0.0.1:1/mcp"

    async def run() -> None:
        v = JWTVerifier(issuer.issuer, failure_backoff=0.2, max_failure_backoff=0.4)
        issuer.fail = 503
        try:
            before = issuer.fetches()
            results = await asyncio.gather(*(v.verify(_forged(issuer, url, i), _request(url)) for i in range(25)),
                                           return_exceptions=True)
            assert all(isinstance(r, InvalidToken) for r in results)
            assert issuer.fetches() - before == 2  # 25 tokens at once: one attempt (the two metadata forms)
            for _ in range(3):
                await asyncio.sleep(0.45)  # past the (capped) backoff: one more attempt each time
                with pytest.raises(InvalidToken):
                    await v.verify(_forged(issuer, url, 99), _request(url))
            assert issuer.fetches() - before == 8
            assert v.backoff.failures == 4
        finally:
            issuer.fail = None
        await asyncio.sleep(0.45)
        assert (await v.verify(issuer.token(url), _request(url))).subject == "alice"
        assert v.backoff.failures == 0
        await v.aclose()

    asyncio.run(run())


def test_introspection_discovery_backs_off(issuer: HttpIssuer) -> None:
    url = "http://127.0.0.1:1/mcp"

    async def run() -> None:
        v = IntrospectionVerifier(client_id="rs-client", client_secret="rs-secret", issuer=issuer.issuer,
                                  failure_backoff=30.0)
        issuer.fail = 503
        try:
            before = issuer.fetches()
            for i in range(10):
                with pytest.raises(InvalidToken):
                    await v.verify(f"opaque-{i}", _request(url))
            assert issuer.fetches() - before == 2
            assert v.calls == 0
        finally:
            issuer.fail = None
        await v.aclose()

    asyncio.run(run())
