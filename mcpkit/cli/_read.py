"""``mcpkit read URI TARGET``: read a resource and print its contents."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from . import _session
from ._help import HelpFormatter, examples
from ._safe import clean
from ._target import add_target_options, dump_json, result_dict

if TYPE_CHECKING:
    from ..client import Client


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit read", description="Read a resource: text contents as they are, binary contents as a "
        "short note (or everything with --json).",
        epilog=examples("mcpkit read notes://ideas -- python examples/demo.py"), formatter_class=HelpFormatter)
    p.add_argument("uri", metavar="URI", help="the resource's URI, as `mcpkit list resources` (or a template) gives it")
    p.add_argument("items", nargs="*", metavar="TARGET", help="an http(s) URL or FILE.py (or -- COMMAND [ARGS...])")
    p.add_argument("--json", action="store_true", help="print the whole ReadResourceResult as JSON")
    add_target_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    ns, command = _session.parse(p, argv)
    target = _session.target_or_usage(p, list(ns.items), command, ns)
    if isinstance(target, int):
        return target

    async def body(client: Client) -> int:
        result: dict[str, Any] = result_dict(client, await client.read_resource(ns.uri))
        if ns.json:
            sys.stdout.write(dump_json(result) + "\n")
            return 0
        contents = result.get("contents") or []
        for item in contents:
            if len(contents) > 1:
                sys.stdout.write(clean(f"--- {item.get('uri')}") + "\n")
            if "text" in item:
                text = clean(item["text"])
                sys.stdout.write(text if text.endswith("\n") else text + "\n")
            else:
                size = len(item.get("blob", "")) * 3 // 4
                sys.stdout.write(clean(f"[binary {item.get('mimeType', '')}, {size} bytes: use --json]") + "\n")
        return 0

    return _session.run("mcpkit read", target, body)
