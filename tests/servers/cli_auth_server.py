"""The demo behind a bearer-token check, for the CLI's 401 and --header/--bearer tests.

Usage: cli_auth_server.py PORT  (serves http://127.0.0.1:PORT/mcp; the token is ``s3cret``)
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers.paths import DEMO, load_module

TOKEN = "s3cret"
app = load_module(DEMO).server.http_app()


async def guarded(scope, receive, send):
    if scope["type"] == "http":
        auth = dict(scope["headers"]).get(b"authorization", b"")
        if auth != f"Bearer {TOKEN}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"text/plain"),
                (b"www-authenticate", b'Bearer realm="cli-tests", error="invalid_token", '
                                      b'error_description="a bearer token is required"')]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
    await app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(guarded, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
