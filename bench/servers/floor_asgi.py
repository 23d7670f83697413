"""The HTTP floor: a bare ASGI app on the same uvicorn stack as mcpkit's server. Every POST's
body is parsed with the standard library's json and answered with ``json.dumps`` of an echo
result (the request's ``params.arguments.text``, or a fixed text when there is none): the work
any JSON-RPC server does, and nothing of MCP. No MCP library on this stack can go much under it.

argv: ``http PORT`` (the same as the echo servers).
"""

import json
import sys

import uvicorn

META = {"io.modelcontextprotocol/serverInfo": {"name": "echo", "version": "1.0.0"}}


def answer(body: bytes) -> bytes:
    msg = json.loads(body)
    args = (msg.get("params") or {}).get("arguments") or {}
    text = args.get("text", "bench-echo-payload")
    result = {"resultType": "complete", "_meta": META, "content": [{"type": "text", "text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result}, separators=(",", ":")).encode()


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    chunks = []
    more = True
    while more:  # read the whole body, as any server must
        event = await receive()
        chunks.append(event.get("body", b""))
        more = event.get("more_body", False)
    body = answer(b"".join(chunks))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), access_log=False, log_level="warning",
                lifespan="off", server_header=False, date_header=False)
