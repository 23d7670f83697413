"""``mcpkit discover``: probe a server and print its card (or its DiscoverResult as JSON)."""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

from .client import Client, TransportError
from .protocol import meta as M
from .protocol.errors import MCPError


async def run_discover(target: list[str], *, as_json: bool, timeout: float) -> int:
    url = target[0] if len(target) == 1 and target[0].startswith(("http://", "https://")) else None
    client = Client(url or target, timeout=timeout)
    what = url or " ".join(target)
    try:
        async with client:
            raw = await client.discover_raw()
            if as_json:
                sys.stdout.write(json.dumps(raw, indent=2, ensure_ascii=False) + "\n")
                return 0
            card = await _gather(client, raw)
            card["era"] = client.era
            card["legacy_version"] = client.legacy_version
        if card["era"] == "modern":
            card["era"] = "dual" if await _answers_initialize(url or target, timeout) else "modern"
    except MCPError as exc:
        print(f"mcpkit discover: {what}: the server answered with error {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except TransportError as exc:
        print(f"mcpkit discover: {what}: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"mcpkit discover: {what}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render_card(card))
    return 0


async def _answers_initialize(target: Any, timeout: float) -> bool:
    """Whether a modern server also speaks 2025-11-25 (a second, legacy-only connection)."""
    import asyncio
    import subprocess

    probe = Client(target, mode="legacy", timeout=min(timeout, 5.0),
                   stderr=None if isinstance(target, str) else subprocess.DEVNULL)
    try:
        await asyncio.wait_for(probe.start(), min(timeout, 5.0))
        return probe.era == "legacy"
    except (TimeoutError, MCPError, TransportError, OSError):
        return False
    finally:
        try:
            await probe.close()
        except Exception:
            pass


async def _gather(client: Client, raw: dict[str, Any]) -> dict[str, Any]:
    caps = raw.get("capabilities") or {}
    card: dict[str, Any] = {"discover": raw}
    # Only ask for what the server advertises; a failing list is shown, not fatal.
    for cap, key, call in (
        ("tools", "tools", client.list_tools),
        ("resources", "resources", client.list_resources),
        ("resources", "templates", client.list_resource_templates),
        ("prompts", "prompts", client.list_prompts),
    ):
        if cap in caps:
            try:
                card[key] = [msgspec.to_builtins(x) for x in await call()]
            except (MCPError, TransportError) as exc:
                card[key] = f"(error: {exc})"
    return card


def _line(text: str | None, width: int = 72) -> str:
    if not text:
        return ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def render_card(card: dict[str, Any]) -> str:
    raw = card["discover"]
    info = (raw.get("_meta") or {}).get(M.SERVER_INFO) or {}
    out: list[str] = []
    name = info.get("name", "(unnamed server)")
    title = info.get("title")
    out.append(f"{title} ({name})" if title and title != name else name)
    if info.get("version"):
        out[-1] += f"  v{info['version']}"
    if info.get("description"):
        out.append(f"  {_line(info['description'])}")
    out.append("")
    era = card.get("era", "modern")
    era_text = {
        "modern": "modern (2026-07-28, stateless)",
        "dual": "dual (2026-07-28 stateless, and the 2025-11-25 initialize handshake)",
        "legacy": f"legacy ({card.get('legacy_version')}, initialize handshake)",
    }.get(era, era)
    out.append(f"Era:           {era_text}")
    out.append(f"Versions:      {', '.join(raw.get('supportedVersions') or [])}")
    caps = raw.get("capabilities") or {}
    cap_bits = []
    for k, v in caps.items():
        flags = [f for f, on in (v or {}).items() if on is True] if isinstance(v, dict) else []
        cap_bits.append(f"{k} ({', '.join(flags)})" if flags else k)
    out.append(f"Capabilities:  {', '.join(cap_bits) or '(none)'}")
    if era != "legacy":
        out.append(f"Caching:       ttlMs={raw.get('ttlMs')} cacheScope={raw.get('cacheScope')}")
    if raw.get("instructions"):
        out.append("")
        out.append("Instructions:")
        out.extend(f"  {ln}" for ln in raw["instructions"].strip().splitlines())
    for key, label, ident in (
        ("tools", "Tools", "name"),
        ("resources", "Resources", "uri"),
        ("templates", "Resource templates", "uriTemplate"),
        ("prompts", "Prompts", "name"),
    ):
        if key not in card:
            continue
        items = card[key]
        out.append("")
        if isinstance(items, str):
            out.append(f"{label}: {items}")
            continue
        out.append(f"{label} ({len(items)}):")
        width = max((len(str(i.get(ident, ""))) for i in items), default=0)
        for i in items:
            if key in ("tools", "prompts"):
                desc = _line(i.get("description") or i.get("title"))
            else:
                desc = _line(i.get("description") or i.get("title") or i.get("name"))
            out.append(f"  {str(i.get(ident, '')).ljust(width)}  {desc}".rstrip())
    return "\n".join(out) + "\n"
