"""A server that only answers requests with a valid bearer token, and tells OAuth clients
where to get one (RFC 9728 protected resource metadata, and ``WWW-Authenticate`` on a 401).

    EXAMPLE_TOKENS=s3cret AUTHORIZATION_SERVER=https://auth.example.com \\
        uvicorn examples.static_token_server:app --port 8000
    mcpkit call add a=1 b=2 --bearer s3cret http://127.0.0.1:8000/mcp     # 3
    mcpkit call add a=1 b=2 http://127.0.0.1:8000/mcp                     # a clear 401 message
    mcpkit login http://127.0.0.1:8000/mcp       # with a real authorization server (mcpkit[oauth])

The token check here is a set of static tokens (``EXAMPLE_TOKENS``, comma-separated) so the
example runs anywhere; a real deployment validates the JWT access tokens its authorization
server issues (signature, ``iss``, ``aud`` = this resource, expiry, scopes), e.g. with
joserfc, in :func:`check_token`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcpkit import Server

server = Server("mcpkit-protected", "1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOKENS = {t.strip() for t in os.environ.get("EXAMPLE_TOKENS", "").split(",") if t.strip()}
AUTHORIZATION_SERVER = os.environ.get("AUTHORIZATION_SERVER", "https://auth.example.com")
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
mcp = server.http_app()


def check_token(token: str) -> bool:
    """Whether ``token`` may call this server (replace with real access-token validation)."""
    return token in TOKENS


def _origin(scope: dict[str, Any]) -> str:
    host = dict(scope["headers"]).get(b"host", b"127.0.0.1").decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host}"


async def _send(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return await mcp(scope, receive, send)
    if scope["path"] == METADATA_PATH:  # public: how to authorize
        doc = {"resource": _origin(scope) + "/mcp", "authorization_servers": [AUTHORIZATION_SERVER],
               "bearer_methods_supported": ["header"]}
        return await _send(send, 200, json.dumps(doc).encode(), [(b"content-type", b"application/json")])
    auth = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not check_token(token.strip()):
        error = 'error="invalid_token", ' if token else ""
        challenge = (f'Bearer {error}error_description="a bearer token is required", '
                     f'resource_metadata="{_origin(scope)}{METADATA_PATH}"')
        return await _send(send, 401, b"unauthorized", [(b"www-authenticate", challenge.encode()),
                                                         (b"content-type", b"text/plain")])
    await mcp(scope, receive, send)
