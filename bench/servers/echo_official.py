"""Echo MCP server built on the official MCP Python SDK (mcp==2.3.0).

argv: ``stdio`` | ``http PORT`` (endpoint http://127.0.0.1:PORT/mcp).

Library defaults everywhere except logging: the SDK's own INFO logging and
uvicorn's per-request access log are turned off so neither side pays for
log formatting. The Streamable HTTP app is the SDK's stock
``streamable_http_app()`` (path ``/mcp``, defaults for stateful/json
options); requests carrying ``MCP-Protocol-Version: 2026-07-28`` are routed
by the SDK to its single-exchange (stateless) 2026-07-28 entry.
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", version="1.0.0", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


def main() -> None:
    argv = sys.argv[1:] or ["stdio"]
    if argv[0] == "stdio":
        server.run("stdio")
    elif argv[0] == "http":
        import anyio
        import uvicorn

        port = int(argv[1])
        app = server.streamable_http_app(host="127.0.0.1")
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        anyio.run(uvicorn.Server(config).serve)
    else:
        raise SystemExit("usage: echo_official.py stdio | http PORT")


if __name__ == "__main__":
    main()
