"""A server protected by ResourceServerAuth on a real uvicorn, for the token-handling tests.

Usage: token_server.py PORT. Configured by the environment:
``TOKEN_ISSUER`` (the issuer URL, its metadata and JWKS fetched over HTTP),
``TOKEN_RESOURCE`` (the canonical resource URL; default ``http://127.0.0.1:PORT/mcp``),
``TOKEN_REDIS`` (back the server with Redis: sessions, tasks, DPoP replay cache and nonces),
``TOKEN_DPOP_NONCE=1`` (demand DPoP nonces), ``TOKEN_AT_JWT=0`` (accept tokens without ``typ: at+jwt``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpkit import Context, Server
from mcpkit.auth.server import JWTVerifier, ResourceServerAuth
from mcpkit.transports.http import run_http_server


def build(port: int) -> tuple[Server, ResourceServerAuth]:
    issuer = os.environ["TOKEN_ISSUER"]
    resource = os.environ.get("TOKEN_RESOURCE") or f"http://127.0.0.1:{port}/mcp"
    # The verifier's defaults, but for the one opt-out under test.
    options = {"require_at_jwt_typ": False} if os.environ.get("TOKEN_AT_JWT") == "0" else {}
    verifier = JWTVerifier(issuer, **options)
    auth = ResourceServerAuth(verifier, resource=resource, use_dpop_nonce=os.environ.get("TOKEN_DPOP_NONCE") == "1")
    server = Server("tokens", "1.0.0", auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def whoami(ctx: Context) -> dict:
        assert ctx.auth is not None
        return {"sub": ctx.auth.subject, "key": ctx.principal}

    return server, auth


def main() -> None:
    port = int(sys.argv[1])
    server, auth = build(port)
    on_shutdown = None
    redis_url = os.environ.get("TOKEN_REDIS")
    if redis_url:
        from mcpkit.backends.redis import RedisBackend

        backend = RedisBackend(redis_url)
        backend.install(server)
        on_shutdown = backend.aclose
    run_http_server(server, port=port, auth=auth, on_shutdown=on_shutdown)


if __name__ == "__main__":
    main()
