"""The official Python SDK's server (``MCPServer``) over stdio, run by the peer's own interpreter:
``python sdk_caps_server.py``. Its one tool, ``client_capabilities``, answers with the
capabilities the client declared (``initialize`` on 2025-11-25), as JSON text."""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-caps-peer")


@server.tool()
def client_capabilities(ctx: Context) -> str:
    """The client's declared capabilities, as JSON."""
    caps = ctx.client_capabilities
    return json.dumps(caps.model_dump(mode="json", exclude_none=True) if caps is not None else None)


if __name__ == "__main__":
    server.run("stdio")
