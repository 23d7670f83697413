"""The Pydantic workload's server on mcpkit: ``norm(p: Point) -> Result`` with Pydantic models.

argv: ``stdio``. Pydantic validates the argument and serialises the result; the rest is
mcpkit's (msgspec) path. Library defaults except logging, as ``echo_mcpkit.py``.
"""

import sys

from _norm import Point, Result, norm_of

from mcpkit import Server

server = Server("norm", "1.0.0")


@server.tool()
async def norm(p: Point) -> Result:
    """The distance of a point from the origin."""
    return norm_of(p)


if __name__ == "__main__":
    if (sys.argv[1:] or ["stdio"])[0] != "stdio":
        raise SystemExit("usage: pydantic_mcpkit.py stdio")
    server.run(fast_exit=True)
