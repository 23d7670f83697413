"""The HTTP floor: a bare ASGI app on the same uvicorn stack as mcpkit's server, answering
every POST with a fixed echo result. Its CPU per request is what no MCP library can go under.

argv: ``http PORT`` (the same as the echo servers).
"""

import sys

import uvicorn

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"bench-echo-payload"}]}}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:  # read the whole body, as any server must
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), access_log=False, log_level="warning",
                lifespan="off", server_header=False, date_header=False)
