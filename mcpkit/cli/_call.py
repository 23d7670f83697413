"""``mcpkit call TOOL [key=value ...] TARGET``: call a tool and print what it returned."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from . import _args, _session
from ._help import HelpFormatter, examples
from ._safe import clean
from ._target import CliError, add_target_options, dump_json, result_dict

if TYPE_CHECKING:
    from ..client import Client
    from ._target import Target


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit call", description="Call a tool and print its result: the text content (and the "
        "structured content, pretty-printed, when it adds to the text), or the whole CallToolResult with --json. Values parse as "
        "JSON when they can, else as strings, and are checked against the tool's input schema first.",
        epilog=examples("mcpkit call add a=2 b=3 -- python examples/demo.py",
                         "mcpkit call --json add a=2 b=3 examples/demo.py",
                         "mcpkit call total --args '{\"items\": [{\"n\": 1}]}' server.py"),
        formatter_class=HelpFormatter)
    p.add_argument("tool", metavar="TOOL", help="the tool's name")
    p.add_argument("items", nargs="*", metavar="key=value | TARGET", help="arguments, then the TARGET "
                   "(an http(s) URL or FILE.py; or give -- COMMAND [ARGS...] at the end)")
    p.add_argument("--args", metavar="JSON", help="arguments as one JSON object (for nested input); "
                   "key=value items are applied on top")
    p.add_argument("--json", action="store_true", help="print the whole CallToolResult as JSON")
    p.add_argument("--task", action="store_true", help="run it as a task (the tasks extension, or 2025-11-25 tasks)"
                   " and wait for it")
    p.add_argument("--no-check", action="store_true", help="send the arguments without checking them against the schema")
    add_target_options(p)
    return p


@_session.command(parser)
def main(p: argparse.ArgumentParser, ns: argparse.Namespace, items: list[str], target: Target) -> int:
    values, raw = _args.parse_pairs(items, ns.args)

    async def body(client: Client) -> int:
        arguments = values
        if not ns.no_check:
            tools = {tool.name: tool for tool in await client.list_tools()}
            tool = tools.get(ns.tool)
            if tool is None:
                known = ", ".join(sorted(tools)) or "none"
                raise CliError(f"{ns.tool}: no such tool (the server's tools: {known})")
            arguments = _args.check(ns.tool, tool.inputSchema, values, raw)
        progress = _Progress() if sys.stderr.isatty() else None
        try:
            if ns.task:
                handle = await client.call_tool(ns.tool, arguments, task=True)
                result = await handle.result(on_status=progress.status if progress else None)
            else:
                result = await client.call_tool(ns.tool, arguments, progress=progress.update if progress else None)
        finally:
            if progress is not None:
                progress.clear()
        return show(ns.tool, result_dict(client, result), as_json=ns.json)

    from ._ask import interactive, terminal_elicitation

    options = {"elicitation": terminal_elicitation(target)} if interactive() else {}
    return _session.run("mcpkit call", target, body, **options)


def show(tool: str, result: dict[str, Any], *, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(dump_json(result) + "\n")
        return 1 if result.get("isError") else 0
    if result.get("isError"):
        text = " ".join(render_content(result.get("content") or [], None).split()) or "(no message)"
        print(clean(f"mcpkit call: {tool} failed: {text}"), file=sys.stderr)
        return 1
    out = render_result(result)
    if out:
        sys.stdout.write(clean(out.rstrip("\n")) + "\n")
    return 0


def render_result(result: dict[str, Any]) -> str:
    """A result's content, and its structured content only when that adds something: text
    that is the structured content's serialisation gives way to it (pretty-printed), and
    structured content that only repeats the text (``{"result": 42}`` after ``42``, a
    ``{"content": TEXT}`` wrapper) is left out."""
    content = result.get("content") or []
    sc = result.get("structuredContent")
    if sc is None:
        return render_content(content, None)
    shown = _unwrapped(sc)
    text = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if text.strip() and _repeats(sc, shown, text):
        return render_content(content, None)
    out = render_content(content, sc)
    return "\n".join(x for x in (out, shown if isinstance(shown, str) else dump_json(shown)) if x)


def _unwrapped(structured: Any) -> Any:
    """``{"result": X}`` (how scalars and lists travel) is X."""
    return structured["result"] if isinstance(structured, dict) and set(structured) == {"result"} else structured


def _repeats(structured: Any, shown: Any, text: str) -> bool:
    """Whether the structured content says nothing the text did not."""
    said = text.strip()
    if isinstance(shown, str):
        return shown.strip() == said
    if isinstance(structured, dict) and len(structured) == 1:
        (only,) = structured.values()
        if isinstance(only, str) and only.strip() == said:
            return True
    # A scalar printed as text (42, true): the text is as good as its JSON.
    return (shown is None or isinstance(shown, (bool, int, float))) and _same_json(text, shown)


def render_content(content: list[Any], structured: Any) -> str:
    """Text blocks as they are (a text block that merely repeats the structured content, or
    its ``{"result": ...}`` value, is left out); other blocks as a short bracketed line."""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text", "")
            if structured is not None and (_same_json(text, structured) or _same_json(text, _unwrapped(structured))):
                continue
            parts.append(text)
        elif kind in ("image", "audio"):
            size = len(block.get("data", "")) * 3 // 4
            parts.append(f"[{kind} {block.get('mimeType', '')}, {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.get('uri')}{' ' + block['name'] if block.get('name') else ''}]")
        elif kind == "resource":
            res = block.get("resource") or {}
            parts.append(res["text"] if "text" in res else f"[resource {res.get('uri')}, binary]")
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


class _Progress:
    """Progress on one stderr line, on a terminal only."""

    def __init__(self) -> None:
        self.shown = False

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        frac = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        self._line(f"{frac} {message or ''}")

    def status(self, status: str, message: str | None) -> None:
        self._line(f"task {status}{': ' + message if message else ''}")

    def _line(self, text: str) -> None:
        sys.stderr.write("\r\x1b[K" + clean(text[:200]))
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
