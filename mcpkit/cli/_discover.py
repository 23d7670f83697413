"""``mcpkit discover TARGET``: probe a server and print its card (or everything as JSON).

The era verdict: ``modern`` (2026-07-28 only), ``legacy`` (the 2025-11-25 initialize
handshake only) or ``dual`` (both: a second, legacy-only connection is tried). ``--timeout``
bounds the whole probe, that second connection included.

``mcpkit discover --card URL`` reads a server card (SEP-2127, a Draft) instead, without
connecting: see :mod:`._card`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .._probe import SECTIONS as SECTIONS
from .._probe import probe as probe
from . import _session
from ._help import HelpFormatter, examples
from ._list import first_line, tool_lines
from ._safe import clean
from ._target import add_target_options, dump_json

if TYPE_CHECKING:
    from ..client import Client

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit discover", description="Probe a server and print its card: identity, era (modern, legacy "
        "or dual), versions, capabilities, and its tools, resources and prompts.",
        epilog=examples("mcpkit discover -- python examples/demo.py", "mcpkit discover examples/demo.py",
                         "mcpkit discover http://127.0.0.1:8000/mcp",
                         "mcpkit discover --card http://127.0.0.1:8000/mcp/server-card",
                         "mcpkit discover --card https://example.com/.well-known/ai-catalog.json"),
        formatter_class=HelpFormatter)
    p.add_argument("items", nargs="*", metavar="TARGET", help="an http(s) URL or FILE.py (or -- COMMAND [ARGS...])")
    p.add_argument("--json", action="store_true",
                   help="print the DiscoverResult, the era and the tools, resources and prompts as one JSON object")
    p.add_argument("-v", "--verbose", action="store_true", help="show each tool's arguments")
    p.add_argument("--card", action="store_true",
                   help="read the server card (SEP-2127, a Draft) at URL instead of connecting: a card, an MCP "
                   "endpoint (its URL/server-card) or an AI catalog (/.well-known/ai-catalog.json)")
    add_target_options(p, timeout=10.0)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    if "--card" in argv:
        from . import _card

        ns, _command = _session.parse(p, argv)
        return _card.main(ns, list(ns.items))
    begun = _session.begin(p, argv, no_extra=True)
    if isinstance(begun, int):
        return begun
    ns, _items, target = begun

    async def body(client: Client) -> int:
        report = await probe(client, target)
        report.pop("discoveredAt", None)
        if ns.json:
            sys.stdout.write(dump_json(report) + "\n")
        else:
            sys.stdout.write(clean(render_card(report, verbose=ns.verbose)))
        return 0

    return _session.run("mcpkit discover", target, body)


ERA_TEXT = {
    "modern": "modern (2026-07-28, stateless)",
    "dual": "dual (2026-07-28 stateless, and the 2025-11-25 initialize handshake)",
}


def render_card(report: dict[str, Any], *, verbose: bool = False) -> str:
    from ..protocol import meta as M

    raw = report["discover"]
    info = (raw.get("_meta") or {}).get(M.SERVER_INFO) or {}
    out: list[str] = []
    name = info.get("name", "(unnamed server)")
    title = info.get("title")
    out.append(f"{title} ({name})" if title and title != name else name)
    if info.get("version"):
        out[-1] += f"  v{info['version']}"
    if info.get("description"):
        out.append(f"  {first_line(info['description'], 72)}")
    out.append("")
    era = report.get("era") or "modern"
    era_text = ERA_TEXT.get(era, f"legacy ({report.get('legacyVersion')}, initialize handshake)" if era == "legacy" else era)
    out.append(f"Era:           {era_text}")
    out.append(f"Versions:      {', '.join(raw.get('supportedVersions') or [])}")
    caps = raw.get("capabilities") or {}
    cap_bits = []
    for k, v in caps.items():
        flags = [f for f, on in (v or {}).items() if on is True] if isinstance(v, dict) else []
        cap_bits.append(f"{k} ({', '.join(flags)})" if flags else k)
    out.append(f"Capabilities:  {', '.join(cap_bits) or '(none)'}")
    if era != "legacy" and ("ttlMs" in raw or "cacheScope" in raw):
        out.append(f"Caching:       ttlMs={raw.get('ttlMs')} cacheScope={raw.get('cacheScope')}")
    if raw.get("instructions"):
        out.append("")
        out.append("Instructions:")
        out.extend(f"  {ln}" for ln in raw["instructions"].strip().splitlines())
    for _cap, _method, key, label, ident in SECTIONS:
        items = report.get(key)
        failed = (report.get("errors") or {}).get(key)
        if failed:
            out.append("")
            out.append(f"{label}: ({failed})")
            continue
        if not items:
            continue  # empty sections are left out
        out.append("")
        out.append(f"{label} ({len(items)}):")
        if key == "tools" and verbose:
            for tool in items:
                out.extend(tool_lines(tool, "  "))
            continue
        width = max((len(str(i.get(ident, ""))) for i in items), default=0)
        for i in items:
            if key in ("tools", "prompts"):
                desc = first_line(i.get("description") or i.get("title"), 72)
            else:
                desc = first_line(i.get("description") or i.get("title") or i.get("name"), 72)
            out.append(f"  {str(i.get(ident, '')).ljust(width)}  {desc}".rstrip())
    return "\n".join(out) + "\n"
