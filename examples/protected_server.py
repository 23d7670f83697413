"""An MCP server protected by OAuth: JWT access tokens from one authorization server, the
audience checked against this server's URL, a scope for everyone and one more for writes.

    MCPKIT_AUTH_ISSUER=https://auth.example.com mcpkit serve --http --port 8000 examples/protected_server.py
    MCPKIT_AUTH_ISSUER=https://auth.example.com python examples/protected_server.py [PORT]

A request without a token gets 401 and a challenge naming the protected resource metadata
(``/.well-known/oauth-protected-resource/mcp``), which names the issuer: MCP clients with
OAuth support (mcpkit's, the official SDKs') log in from there. The audience tokens must
name is the URL the server is bound to (``http://127.0.0.1:8000/mcp``); behind a proxy, set
``MCPKIT_PUBLIC_URL`` to the URL clients use.
"""

from __future__ import annotations

import os
import sys

from mcpkit import Context, Server
from mcpkit.auth.server import ResourceServerAuth

ISSUER = os.environ.get("MCPKIT_AUTH_ISSUER", "http://127.0.0.1:9000")
PUBLIC_URL = os.environ.get("MCPKIT_PUBLIC_URL")  # None: the bound address

server = Server(
    "protected-notes",
    "1.0.0",
    auth=ResourceServerAuth(issuer=ISSUER, resource=PUBLIC_URL, scopes=["notes:read"]),
)
NOTES: dict[str, dict[str, str]] = {}  # per caller


@server.tool()
def whoami(ctx: Context) -> dict:
    """Who the token says you are."""
    a = ctx.auth
    return {"subject": a.subject, "client_id": a.client_id, "scopes": sorted(a.scopes)}


@server.tool()
def list_notes(ctx: Context) -> list[str]:
    """Your notes' titles."""
    return sorted(NOTES.get(ctx.auth.key, {}))


@server.tool(scopes=["notes:write"])
def add_note(ctx: Context, title: str, text: str) -> str:
    """Save a note (needs the notes:write scope; without it the tool is not even listed)."""
    NOTES.setdefault(ctx.auth.key, {})[title] = text
    return f"saved {title!r}"


if __name__ == "__main__":
    server.run("http", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
