"""``mcpkit prompt NAME [key=value ...] TARGET``: get a prompt and print its messages."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from . import _args, _session
from ._call import render_content
from ._help import HelpFormatter, examples
from ._safe import clean
from ._target import CliError, add_target_options, dump_json, result_dict

if TYPE_CHECKING:
    from ..client import Client
    from ._target import Target


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit prompt", description="Get a prompt and print its messages (or the whole GetPromptResult "
        "with --json). Prompt arguments are strings.",
        epilog=examples("mcpkit prompt summarize name=ideas -- python examples/demo.py"), formatter_class=HelpFormatter)
    p.add_argument("name", metavar="NAME", help="the prompt's name, as `mcpkit list prompts` gives it")
    p.add_argument("items", nargs="*", metavar="key=value | TARGET", help="arguments (strings), then the TARGET "
                   "(an http(s) URL or FILE.py; or give -- COMMAND [ARGS...] at the end)")
    p.add_argument("--json", action="store_true", help="print the whole GetPromptResult as JSON")
    add_target_options(p)
    return p


@_session.command(parser)
def main(p: argparse.ArgumentParser, ns: argparse.Namespace, items: list[str], target: Target) -> int:
    _values, raw = _args.parse_pairs(items, None)

    async def body(client: Client) -> int:

        prompts = {pr.name: pr for pr in await client.list_prompts()}
        prompt = prompts.get(ns.name)
        if prompt is None:
            raise CliError(f"{ns.name}: no such prompt (the server's prompts: {', '.join(sorted(prompts)) or 'none'})")
        declared = [a.name for a in (prompt.arguments or [])] if prompt.arguments else []
        unknown = [k for k in raw if declared and k not in declared]
        if unknown:
            raise CliError(f"{ns.name}: unknown argument {unknown[0]!r} (its arguments: {', '.join(declared)})", 2)
        missing = [a.name for a in (prompt.arguments or []) if a.required and a.name not in raw]
        if missing:
            raise CliError(f"{ns.name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}", 2)
        result: dict[str, Any] = result_dict(client, await client.get_prompt(ns.name, raw or None))
        if ns.json:
            sys.stdout.write(dump_json(result) + "\n")
            return 0
        for msg in result.get("messages") or []:
            content = msg.get("content")
            blocks = content if isinstance(content, list) else [content]
            sys.stdout.write(clean(f"[{msg.get('role')}]\n{render_content(blocks, None)}") + "\n")
        return 0

    from ._ask import interactive, terminal_elicitation

    options = {"elicitation": terminal_elicitation(target)} if interactive() else {}
    return _session.run("mcpkit prompt", target, body, **options)

