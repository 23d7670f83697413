"""``mcpkit skills list TARGET`` and ``mcpkit skills get URI TARGET``: a server's skills
(the ``io.modelcontextprotocol/skills`` extension).

``list`` prints each skill's URI, description and file count from ``skills/list`` (it reads
no skill file). ``get`` loads one skill: its SKILL.md is read and verified against the entry
(size, digest, frontmatter) before it is printed; ``--file PATH`` prints one of its other
files, verified the same way. A skill that fails verification is not printed (exit 1). A
``"dynamic"`` skill (generated, no digests) is loaded only with ``--allow-dynamic`` (its
frontmatter is still compared).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from . import _session
from ._safe import clean
from ._target import add_target_options, dump_json

if TYPE_CHECKING:
    from ..client import Client
    from ._target import Target


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit skills", description="List a server's skills, or load one (verified against its entry).",
        epilog="examples:\n  mcpkit skills list examples/skills_server.py\n"
        "  mcpkit skills get skill://git-workflow/SKILL.md examples/skills_server.py",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("items", nargs="*", metavar="list TARGET | get URI TARGET",
                   help="TARGET is an http(s) URL or FILE.py (or -- COMMAND [ARGS...] at the end)")
    p.add_argument("--json", action="store_true", help="print the entries (list) or the entry (get) as JSON")
    p.add_argument("--file", metavar="PATH", help="get: print this file of the skill instead of its SKILL.md")
    p.add_argument("--allow-dynamic", action="store_true",
                   help="get: load a dynamic skill (generated content, which no digest can verify)")
    add_target_options(p)
    return p


@_session.command(parser)
def main(p: argparse.ArgumentParser, ns: argparse.Namespace, items: list[str], target: Target) -> int:
    from ._target import usage_error

    if not items or items[0] not in ("list", "get"):
        return usage_error(p, "say what to do: list TARGET, or get URI TARGET")
    action, rest = items[0], items[1:]
    if action == "list" and rest:
        return usage_error(p, f"unexpected argument {rest[0]!r}")
    if action == "get" and len(rest) != 1:
        return usage_error(p, "get takes one URI (the skill's SKILL.md)")

    async def body(client: Client) -> int:
        import msgspec

        from ..errors import MCPKitError, SkillVerificationError

        try:
            if action == "list":
                entries = await client.list_skills()
                if ns.json:
                    sys.stdout.write(dump_json(msgspec.to_builtins(entries)) + "\n")
                    return 0
                if not entries:
                    sys.stdout.write("No skills.\n")
                for e in entries:
                    files = "dynamic" if e.resources == "dynamic" else f"{len(e.resources)} files"
                    desc = str(e.frontmatter.get("description", "")).splitlines()[0:1]
                    sys.stdout.write(clean(f"{e.uri}  ({files})  {desc[0] if desc else ''}") + "\n")
                return 0
            skill = await client.get_skill(rest[0], allow_dynamic=ns.allow_dynamic)
            if ns.json:
                sys.stdout.write(dump_json(msgspec.to_builtins(skill.entry)) + "\n")
                return 0
            if ns.file:
                data = await skill.read(ns.file)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    how = "unverified: dynamic" if skill.entry.resources == "dynamic" else "verified"
                    sys.stdout.write(clean(f"[binary, {len(data)} bytes, {how}]") + "\n")
                    return 0
            else:
                text = skill.text
            text = clean(text)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            return 0
        except MCPKitError as exc:
            # Refused (verification), or no skills extension; transport errors go up as usual.
            if not isinstance(exc, SkillVerificationError) and type(exc) is not MCPKitError:
                raise
            print(clean(f"mcpkit skills: {exc}"), file=sys.stderr)
            return 1

    return _session.run("mcpkit skills", target, body)
