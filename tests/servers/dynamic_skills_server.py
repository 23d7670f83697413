"""Skills added, replaced and removed while serving (tests/test_skills_dynamic.py).

Tools: ``add_skill(name, body, replace=False)``, ``remove_skill(name)``, ``bus_size`` (how many
listen streams are subscribed). Skill files are cacheable (``ttl_ms`` 60 s, public)."""

from __future__ import annotations

from mcpkit import Server
from mcpkit.extensions.skills import Skills

server = Server("dynamic-skills")
skills = server.use(Skills({"SKILL.md": "---\nname: first\ndescription: The first skill\n---\nOne.\n"},
                           ttl_ms=60_000, cache_scope="public"))


def _md(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: The {name} skill\n---\n{body}\n"


@server.tool()
def add_skill(name: str, body: str, replace: bool = False) -> str:
    """Serve skill ``name`` (its SKILL.md body and a notes file), or replace it."""
    return skills.add({"SKILL.md": _md(name, body), "notes.md": f"notes of {name}\n"}, replace=replace).uri


@server.tool()
def remove_skill(name: str) -> str:
    """Stop serving skill ``name``."""
    uri = f"skill://{name}/SKILL.md"
    skills.remove(uri)
    return uri


@server.tool()
def bus_size() -> int:
    """How many listen streams are subscribed."""
    return len(server.bus)
