"""A raw ASGI app on real uvicorn for the client's lean HTTP transport (tests/test_client_wire.py).

    python tests/servers/wire_app.py PORT [KEEP_ALIVE_SECONDS]

Paths: ``/peer`` (the client's address and port: which connection a request came on),
``/echo`` (the request body back, with its length), ``/chunks?n=N&gap=S`` (N chunked pieces,
S seconds apart), ``/sse?n=N&gap=S`` (N events), ``/slow?s=S`` (the answer after S seconds),
``/big?n=N[&chunked=1]`` (N bytes, with Content-Length or chunked), ``/die`` (half a body,
then the process exits).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any
from urllib.parse import parse_qs

from tests.helpers.aio import read_body


async def app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    q = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    path = scope["path"]
    body = await read_body(receive)

    async def answer(data: bytes, status: int = 200, ctype: bytes = b"text/plain", length: bool = True) -> None:
        headers = [(b"content-type", ctype)] + ([(b"content-length", str(len(data)).encode())] if length else [])
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    if path == "/peer":
        await answer(f"{scope['client'][0]}:{scope['client'][1]}".encode())
    elif path == "/echo":
        await answer(b"%d:%b" % (len(body), body))
    elif path in ("/chunks", "/sse"):
        n, gap = int(q.get("n", "3")), float(q.get("gap", "0.3"))
        ctype = b"text/event-stream" if path == "/sse" else b"text/plain"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", ctype)]})
        for i in range(n):
            piece = f"data: event {i}\n\n".encode() if path == "/sse" else f"piece {i};".encode()
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(gap)
        await send({"type": "http.response.body", "body": b""})
    elif path == "/slow":
        await asyncio.sleep(float(q.get("s", "2")))
        await answer(b"late")
    elif path == "/big":
        n = int(q.get("n", "100000"))
        if q.get("chunked"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            for _ in range(n // 1000):
                await send({"type": "http.response.body", "body": b" " * 1000, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        else:
            await answer(b" " * n, ctype=b"application/json")
    elif path == "/die":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain"), (b"content-length", b"1000")]})
        await send({"type": "http.response.body", "body": b"x" * 100, "more_body": True})
        await asyncio.sleep(0.2)
        os._exit(3)
    else:
        await answer(b"not here", status=404)


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                timeout_keep_alive=int(sys.argv[2]) if len(sys.argv) > 2 else 5)
