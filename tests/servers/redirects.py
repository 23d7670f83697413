"""The demo behind redirects, for the client's redirect rules.

Usage: redirects.py PORT. ``/mcp`` serves the demo; ``/mcp/`` and ``/old`` answer 307 and
308 to ``/mcp`` (what Starlette and the official SDK do for a trailing slash); ``/found``
answers 302 to ``/mcp``; ``/loop`` redirects to itself; ``/away`` answers 307 to the same
path on ``127.0.0.1:OTHER`` (another origin; ``OTHER`` from ``REDIRECT_OTHER_PORT``). Every
request's path and Authorization header are appended to the file ``REDIRECT_LOG``, if set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers.paths import DEMO, load_module

app = load_module(DEMO).server.http_app()
REDIRECTS = {"/mcp/": (307, "/mcp"), "/old": (308, "/mcp"), "/found": (302, "/mcp"), "/loop": (307, "/loop")}


async def redirecting(scope, receive, send):
    if scope["type"] == "http":
        log = os.environ.get("REDIRECT_LOG")
        if log:
            auth = dict(scope["headers"]).get(b"authorization", b"-").decode()
            with open(log, "a") as f:
                f.write(f"{scope['method']} {scope['path']} {auth}\n")
        target = REDIRECTS.get(scope["path"])
        if scope["path"] == "/away":
            target = (307, f"http://127.0.0.1:{os.environ['REDIRECT_OTHER_PORT']}/mcp")
        if target is not None:
            await send({"type": "http.response.start", "status": target[0],
                        "headers": [(b"location", target[1].encode()), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["path"] != "/mcp":
            page = b"<!DOCTYPE html><html><head><title>404 Not Found</title><style>body{}</style></head><body>" \
                   b"<h1>Not Found</h1>" + b"<p>lorem ipsum</p>" * 50 + b"</body></html>"
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/html")]})
            await send({"type": "http.response.body", "body": page})
            return
    await app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(redirecting, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
