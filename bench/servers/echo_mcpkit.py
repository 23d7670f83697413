"""Echo MCP server built on mcpkit.

argv: ``stdio`` | ``http PORT`` (endpoint http://127.0.0.1:PORT/mcp).
Library defaults except logging: no per-request access log.
"""

import sys

from mcpkit import Server

server = Server("echo", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


def main() -> None:
    argv = sys.argv[1:] or ["stdio"]
    if argv[0] == "stdio":
        # As `mcpkit serve` runs it: exit right after the last answer, without interpreter
        # teardown (server.run() alone returns normally and tears down, ~15 ms more).
        server.run(fast_exit=True)
    elif argv[0] == "http":
        server.run("http", host="127.0.0.1", port=int(argv[1]), access_log=False)
    else:
        raise SystemExit("usage: echo_mcpkit.py stdio | http PORT")


if __name__ == "__main__":
    main()
