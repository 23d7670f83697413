"""FastMCP's proxy (``fastmcp.server.create_proxy``) in front of a backend, for bench/proxy.py.

argv: ``PORT URL`` (an HTTP backend) | ``PORT -- COMMAND [ARGS...]`` (a stdio backend).
Serves Streamable HTTP at http://127.0.0.1:PORT/mcp; library defaults, warnings-only logging.
"""

import os
import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main() -> None:
    port = int(sys.argv[1])
    rest = sys.argv[2:]
    target: object
    if rest[:1] == ["--"]:
        target = StdioTransport(command=rest[1], args=rest[2:], env=dict(os.environ))
    else:
        target = rest[0]
    create_proxy(target, name="fastmcp-proxy").run(transport="http", host="127.0.0.1", port=port,
                                                   log_level="warning", show_banner=False)


if __name__ == "__main__":
    main()
