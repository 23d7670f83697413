"""Skills generated when read (``DynamicSkill``), for tests/test_skills_generated.py.

``skill://reports/daily/SKILL.md`` counts its reads in its body; ``data/who.txt`` says which
method asked (the function takes the Context); ``logo.bin`` is bytes; ``notes.md`` a constant.
``skill://broken/SKILL.md`` generates a SKILL.md whose frontmatter contradicts its entry."""

from __future__ import annotations

import itertools

from mcpkit import Context, Server
from mcpkit.extensions.skills import DynamicSkill, Skills

server = Server("generated-skills", ttl_ms=60_000, cache_scope="public")
FRONT = {"name": "daily", "description": "Today's report", "metadata": {"team": "ops"}}
_reads = itertools.count(1)


def daily() -> str:
    return ("---\nname: daily\ndescription: Today's report\nmetadata:\n  team: ops\n---\n"
            f"# Daily report\n\nRead number {next(_reads)}.\n")


async def who(ctx: Context) -> str:
    return f"asked by {ctx.method}\n"


skills = server.use(Skills(
    {"SKILL.md": "---\nname: fixed\ndescription: A static skill\n---\nFixed.\n"},
    DynamicSkill(FRONT, daily, files={"data/who.txt": who, "logo.bin": lambda: b"\x89PNG\x00",
                                      "notes.md": "constant notes\n"}, prefix="reports"),
    DynamicSkill({"name": "broken", "description": "Says one thing"},
                 lambda: "---\nname: broken\ndescription: Says another\n---\n"),
    directory_read=True))

if __name__ == "__main__":
    server.run()
