"""A server that serves skills (the ``io.modelcontextprotocol/skills`` extension, SEP-2640).

    mcpkit skills list examples/skills_server.py
    mcpkit skills get skill://git-workflow/SKILL.md examples/skills_server.py
    mcpkit skills get skill://git-workflow/SKILL.md --file references/commits.md examples/skills_server.py

``skills/git-workflow`` (next to this file) is read once at startup: every file becomes a
``skill://git-workflow/...`` resource, listed by ``skills/list`` with its digest and size.
A second skill is defined in code, under the organizational prefix ``acme/support``.
"""

from pathlib import Path

from mcpkit import Server
from mcpkit.extensions.skills import Skills

HERE = Path(__file__).parent

server = Server("skills-demo", "1.0.0", instructions="Skills: see skills/list (skill://git-workflow/SKILL.md).")
skills = server.use(Skills(HERE / "skills" / "git-workflow", directory_read=True))
skills.add({
    "SKILL.md": "---\nname: refunds\ndescription: Answer refund requests the way support does\n---\n\n"
                "Check the order date, then follow `examples/email.md`.\n",
    "examples/email.md": "Hello {name},\n\nYour refund of {amount} is on its way.\n",
}, prefix="acme/support")

if __name__ == "__main__":
    server.run()
