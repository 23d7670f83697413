"""A test authorization server in process: signs JWT access tokens with joserfc and serves
its RFC 8414 metadata, JWKS and an RFC 7662 introspection endpoint through an
``httpx.MockTransport`` (give ``issuer.http()`` to a verifier as its ``http_client``), or
over real HTTP on a loopback port (:class:`HttpIssuer`, which can also fail on purpose).
Also makes DPoP proofs (RFC 9449) for bound tokens.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

ISSUER = "https://issuer.test"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TestIssuer:
    __test__ = False

    def __init__(self, issuer: str = ISSUER) -> None:
        self.issuer = issuer
        self.keys = [ECKey.generate_key("P-256", parameters={"kid": "ec-1", "alg": "ES256", "use": "sig"}, private=True),
                     RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "alg": "RS256", "use": "sig"}, private=True)]
        self.jwks_fetches = 0
        self.metadata_fetches = 0
        self.introspections: list[dict[str, Any]] = []
        self.active: dict[str, dict[str, Any]] = {}  # opaque token -> introspection answer
        self.rs_client = ("rs-client", "rs-secret")

    # ------------------------------------------------------------------ keys
    def rotate(self) -> ECKey:
        key = ECKey.generate_key("P-256", parameters={"kid": f"ec-{secrets.token_hex(4)}", "alg": "ES256", "use": "sig"},
                                 private=True)
        self.keys.append(key)
        return key

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.as_dict(private=False) for k in self.keys]}

    # ------------------------------------------------------------------ tokens
    def claims(self, audience: str, **over: Any) -> dict[str, Any]:
        now = int(time.time())
        c = {"iss": self.issuer, "sub": "alice", "aud": audience, "client_id": "app-1", "scope": "mcp:tools",
             "iat": now, "exp": now + 600, "jti": secrets.token_hex(8)}
        for k, v in over.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        return c

    def token(self, audience: str, *, key: Any = None, alg: str = "ES256", header: dict[str, Any] | None = None,
              typ: str | None = "at+jwt", **claims: Any) -> str:
        """A signed access token; ``typ=None`` leaves ``typ`` out of the header (RFC 9068 wants ``at+jwt``)."""
        key = key if key is not None else self.keys[0]
        h = {"alg": alg, "kid": key.kid, **(header or {})}
        if typ is not None:
            h.setdefault("typ", typ)
        return jwt.encode(h, self.claims(audience, **claims), key, algorithms=[alg])

    # ------------------------------------------------------------------ the HTTP side
    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            self.metadata_fetches += 1
            return httpx.Response(200, json={"issuer": self.issuer, "jwks_uri": f"{self.issuer}/jwks",
                                             "introspection_endpoint": f"{self.issuer}/introspect",
                                             "token_endpoint": f"{self.issuer}/token"})
        if path == "/jwks":
            self.jwks_fetches += 1
            return httpx.Response(200, json=self.jwks())
        if path == "/introspect":
            auth = request.headers.get("authorization", "")
            expected = "Basic " + base64.b64encode(f"{self.rs_client[0]}:{self.rs_client[1]}".encode()).decode()
            if auth != expected:
                return httpx.Response(401, json={"error": "invalid_client"})
            form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
            self.introspections.append(form)
            return httpx.Response(200, json=self.active.get(form.get("token", ""), {"active": False}))
        return httpx.Response(404)

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))


class HttpIssuer(TestIssuer):
    """The test issuer over real HTTP on ``http://127.0.0.1:PORT`` (a thread of this process).

    ``fail`` makes every answer that HTTP status (e.g. 503) until set back to None;
    ``hits`` counts every request by path, failed ones included.
    """

    def __init__(self) -> None:
        self.fail: int | None = None
        self.hits: dict[str, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                with outer._lock:
                    outer.hits[path] = outer.hits.get(path, 0) + 1
                if outer.fail is not None:
                    status, content, ctype = outer.fail, b'{"error":"temporarily_unavailable"}', "application/json"
                else:
                    req = httpx.Request(self.command, outer.issuer + self.path, headers=dict(self.headers.items()),
                                        content=body)
                    resp = outer.handler(req)
                    status, content = resp.status_code, resp.content
                    ctype = resp.headers.get("content-type", "application/json")
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        super().__init__(f"http://127.0.0.1:{self._server.server_address[1]}")
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def fetches(self) -> int:
        """Metadata and JWKS requests so far (failed ones included)."""
        return sum(n for p, n in self.hits.items() if p.startswith("/.well-known/") or p == "/jwks")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def http_issuer() -> Iterator[HttpIssuer]:
    issuer = HttpIssuer()
    try:
        yield issuer
    finally:
        issuer.close()


class DPoPKey:
    """A client's DPoP key: binds tokens (``jkt``) and signs proofs."""

    __test__ = False

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256", private=True)

    @property
    def jkt(self) -> str:
        return self.key.thumbprint()

    def proof(self, method: str, url: str, token: str | None, *, iat: float | None = None, jti: str | None = None,
              nonce: str | None = None, ath: str | None = None, typ: str = "dpop+jwt") -> str:
        claims: dict[str, Any] = {"htm": method, "htu": url, "iat": int(iat if iat is not None else time.time()),
                                  "jti": jti or secrets.token_hex(12)}
        if token is not None:
            claims["ath"] = ath or b64u(hashlib.sha256(token.encode()).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"alg": "ES256", "typ": typ, "jwk": self.key.as_dict(private=False)}
        return jwt.encode(header, claims, self.key, algorithms=["ES256"])


def unsigned(claims: dict[str, Any]) -> str:
    """An ``alg: none`` token (what an attacker would send)."""
    head = b64u(json.dumps({"alg": "none", "typ": "at+jwt"}).encode())
    return f"{head}.{b64u(json.dumps(claims).encode())}."
