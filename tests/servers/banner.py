"""A server module that prints while it is imported (before it can serve)."""

from mcpkit import Server

print("IMPORT-TIME BANNER")

server = Server("banner")


@server.tool()
def hello() -> str:
    return "hello"
