"""The Pydantic workload's server on the official MCP Python SDK (mcp==2.3.0):
``norm(p: Point) -> Result`` with Pydantic models, as ``pydantic_mcpkit.py``.

argv: ``stdio``. Library defaults except logging, as ``echo_official.py``.
"""

import sys

from _norm import Point, Result, norm_of
from mcp.server.mcpserver import MCPServer

server = MCPServer("norm", version="1.0.0", log_level="WARNING")


@server.tool()
async def norm(p: Point) -> Result:
    """The distance of a point from the origin."""
    return norm_of(p)


if __name__ == "__main__":
    if (sys.argv[1:] or ["stdio"])[0] != "stdio":
        raise SystemExit("usage: pydantic_official.py stdio")
    server.run("stdio")
