"""``mcpkit list [tools|resources|templates|prompts] TARGET``: what a server offers."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from . import _args, _session
from ._help import HelpFormatter, examples
from ._safe import clean
from ._target import add_target_options, dump_json

if TYPE_CHECKING:
    from ..client import Client

KINDS = {
    # kind: (capability, client method, JSON key, label)
    "tools": ("tools", "list_tools", "tools", "Tools"),
    "resources": ("resources", "list_resources", "resources", "Resources"),
    "templates": ("resources", "list_resource_templates", "resourceTemplates", "Resource templates"),
    "prompts": ("prompts", "list_prompts", "prompts", "Prompts"),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit list", description="List a server's tools (with their arguments, types, defaults and "
        "first docstring line), resources, resource templates or prompts; all of them when WHAT is left out.",
        epilog=examples("mcpkit list tools -- python examples/demo.py", "mcpkit list --json prompts http://127.0.0.1:8000/mcp"),
        formatter_class=HelpFormatter)
    p.add_argument("items", nargs="*", metavar="[WHAT] TARGET",
                   help=f"WHAT is one of {', '.join(KINDS)}; TARGET an http(s) URL or FILE.py "
                   "(or give -- COMMAND [ARGS...] at the end)")
    p.add_argument("--json", action="store_true", help="print the full lists as JSON")
    add_target_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    ns, command = _session.parse(p, argv)
    items = list(ns.items)
    kinds = list(KINDS)
    if items and items[0] in KINDS:
        kinds = [items.pop(0)]
    elif items and (items[0] in ("tool", "resource", "template", "prompt")):
        kinds = [items.pop(0) + "s"]
    target = _session.target_or_usage(p, items, command, ns)
    if isinstance(target, int):
        return target
    if items:
        from ._target import usage_error

        return usage_error(p, f"unexpected argument {items[0]!r} (WHAT is one of {', '.join(KINDS)})")
    explicit = len(kinds) == 1

    async def body(client: Client) -> int:
        import msgspec

        caps = (await client.discover_raw()).get("capabilities") or {}
        found: dict[str, list[dict[str, Any]]] = {}
        for kind in kinds:
            cap, method, _key, _label = KINDS[kind]
            if cap not in caps:
                if explicit:
                    found[kind] = []
                continue
            found[kind] = [msgspec.to_builtins(x) for x in await getattr(client, method)()]
        if ns.json:
            sys.stdout.write(dump_json({KINDS[k][2]: v for k, v in found.items()}) + "\n")
            return 0
        sys.stdout.write(clean(render(found, explicit=explicit)))
        return 0

    return _session.run("mcpkit list", target, body)


def first_line(text: Any, width: int = 100) -> str:
    if not isinstance(text, str) or not text.strip():
        return ""
    first = text.strip().splitlines()[0]
    return first if len(first) <= width else first[: width - 1] + "…"


def tool_lines(tool: dict[str, Any], indent: str = "") -> list[str]:
    """``add(a: integer, b: integer)`` then its first docstring line, indented."""
    out = [f"{indent}{tool.get('name')}({_args.format_signature(tool.get('inputSchema'))})"]
    desc = first_line(tool.get("description") or tool.get("title"))
    if desc:
        out.append(f"{indent}    {desc}")
    return out


def render(found: dict[str, list[dict[str, Any]]], *, explicit: bool) -> str:
    out: list[str] = []
    for kind, items in found.items():
        if not items and not explicit:
            continue
        if not explicit:
            if out:
                out.append("")
            out.append(f"{KINDS[kind][3]} ({len(items)}):")
        indent = "" if explicit else "  "
        if not items:
            out.append(f"(no {kind})")
        for item in items:
            if kind == "tools":
                out.extend(tool_lines(item, indent))
            elif kind == "prompts":
                args = ", ".join(a.get("name", "") + ("" if a.get("required") else "?")
                                 for a in item.get("arguments") or [])
                out.append(f"{indent}{item.get('name')}({args})")
                desc = first_line(item.get("description") or item.get("title"))
                if desc:
                    out.append(f"{indent}    {desc}")
            else:
                ident = item.get("uri") or item.get("uriTemplate")
                mime = f"  [{item['mimeType']}]" if item.get("mimeType") else ""
                out.append(f"{indent}{ident}{mime}")
                desc = first_line(item.get("description") or item.get("title") or item.get("name"))
                if desc:
                    out.append(f"{indent}    {desc}")
    return "\n".join(out) + "\n" if out else ""
