"""An MCP Apps server (the ``io.modelcontextprotocol/ui`` extension, SEP-1865).

    mcpkit inspect examples/apps_server.py        # the inspector renders the app
    mcpkit serve --http examples/apps_server.py   # for any MCP Apps host

``roll_dice`` is linked to the app ``ui://dice/board.html`` (``apps/dice.html`` next to this
file): a host that renders apps shows the dice in it. The app's "Statistics" button calls
``dice_stats`` through the host; that tool is for the app only (``visibility: ["app"]``), so
clients that do not render apps never see it. They get ``roll_dice``'s text, plus a line
saying an app exists.
"""

from __future__ import annotations

import random
from pathlib import Path

from mcpkit import Server
from mcpkit.extensions.apps import Apps

BOARD = "ui://dice/board.html"

server = Server("dice", "1.0.0", instructions="Roll dice with roll_dice; an MCP Apps host shows them on a board.")
apps = server.use(Apps())
apps.app(BOARD, Path(__file__).parent / "apps" / "dice.html", name="Dice board",
         description="The dice of the last roll, and their statistics", prefers_border=True)


@server.tool(extensions={Apps.id: {"resource_uri": BOARD,
                                   "fallback": "(An MCP Apps host shows these dice on a board.)"}})
def roll_dice(count: int = 3, sides: int = 6) -> dict[str, list[int]]:
    """Roll COUNT dice with SIDES sides each."""
    if not 1 <= count <= 20 or not 2 <= sides <= 100:
        raise ValueError("count is 1-20 and sides 2-100")
    return {"rolls": [random.randint(1, sides) for _ in range(count)]}


@server.tool(extensions={Apps.id: {"resource_uri": BOARD, "visibility": ["app"]}})
def dice_stats(rolls: list[int]) -> str:
    """Statistics of a roll (for the dice board app)."""
    if not rolls:
        return "no dice"
    return f"total {sum(rolls)}, mean {sum(rolls) / len(rolls):.2f}, highest {max(rolls)}"


if __name__ == "__main__":
    server.run()
