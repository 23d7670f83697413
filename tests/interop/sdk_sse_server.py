"""The official Python SDK's 2024-11-05 HTTP+SSE server (``MCPServer.sse_app``), run by the peer's
own interpreter: ``python sdk_sse_server.py PORT SSE_PATH``. Tools ``echo`` and ``add``."""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-sse-peer")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return f"sdk echo: {message}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


if __name__ == "__main__":
    port, path = int(sys.argv[1]), sys.argv[2]
    app = server.sse_app(sse_path=path, message_path="/messages/")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
