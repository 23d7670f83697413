"""A stdio server that exits on demand (client recovery tests, issue 10 hole 6).

``die_once``/``write_once`` exit the process the first time they run in a given ``marker``
directory (a file remembers it), then answer normally.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcpkit import Server

server = Server("crashy", "1.0")


@server.tool()
def pid() -> int:
    """This server process's id."""
    return os.getpid()


def _once(marker: str, name: str) -> None:
    flag = Path(marker) / name
    if not flag.exists():
        flag.write_text("died")
        os._exit(3)


@server.tool(annotations={"idempotentHint": True})
def die_once(marker: str) -> str:
    """Idempotent: exits the first time, then answers."""
    _once(marker, "die_once")
    return "alive"


@server.tool()
def write_once(marker: str) -> str:
    """Not idempotent: exits the first time, then answers."""
    _once(marker, "write_once")
    return "written"


@server.tool()
def die() -> str:
    """Always exits."""
    os._exit(4)


if __name__ == "__main__":
    server.run()
