"""A server file that calls ``server.run()`` at module level, as many tutorials do.

``mcpkit serve`` must serve it once (stdio or HTTP), not start a stdio server while importing.
"""

from mcpkit import Server

server = Server("runs-at-import", "2.0.0")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


server.run()
