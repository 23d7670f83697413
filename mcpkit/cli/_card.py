"""``mcpkit discover --card URL``: read a server card (SEP-2127, a Draft) over HTTP, without
connecting to the server.

``URL`` is a card (``.../server-card``), an MCP endpoint (its card is ``URL/server-card``) or
a domain catalog (``.../.well-known/ai-catalog.json``, whose MCP entries' cards are read
too). Each document is checked against the Draft's shape; a problem is one line on stderr
and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import urlsplit

from .._wakeup import run as run_loop
from ..protocol import cards as C
from ._safe import clean
from ._target import dump_json


class CardProblem(Exception):
    """One line saying why a card or catalog could not be read."""


def card_url(url: str) -> tuple[str, str]:
    """(``"card"`` or ``"catalog"``, the URL to fetch) for what the user gave."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CardProblem(f"{url!r} is not an http(s) URL")
    path = parts.path.rstrip("/")
    if path.endswith(C.CATALOG_PATH):
        return "catalog", url
    if path.endswith("/" + C.CARD_SUFFIX):
        return "card", url
    return "card", url.split("?", 1)[0].split("#", 1)[0].rstrip("/") + "/" + C.CARD_SUFFIX


async def _get(client: Any, url: str, accept: str) -> Any:
    import httpx

    try:
        resp = await client.get(url, headers={"Accept": accept})
    except httpx.HTTPError as exc:
        raise CardProblem(f"GET {url}: {type(exc).__name__}: {exc or 'no answer'}") from None
    if resp.status_code == 404:
        raise CardProblem(f"GET {url}: HTTP 404 (no server card there: a server serves one only when it enables it)")
    if resp.status_code != 200:
        raise CardProblem(f"GET {url}: HTTP {resp.status_code}")
    try:
        return json.loads(resp.content)
    except ValueError:
        raise CardProblem(f"GET {url}: the answer is not JSON") from None


async def read(url: str, *, timeout: float = 10.0, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"card": ...}`` or ``{"catalog": ..., "cards": [...]}``, each checked."""
    import httpx

    kind, target = card_url(url)
    async with httpx.AsyncClient(timeout=timeout, headers=headers, follow_redirects=False) as client:
        if kind == "card":
            doc = await _get(client, target, C.CARD_MEDIA_TYPE)
            try:
                return {"card": C.check_card(doc)}
            except C.CardError as exc:
                raise CardProblem(f"{target} is not a server card: {exc}") from None
        catalog = await _get(client, target, f"{C.CATALOG_MEDIA_TYPE}, application/json")
        try:
            C.check_catalog(catalog)
        except C.CardError as exc:
            raise CardProblem(f"{target} is not an AI catalog: {exc}") from None
        cards = []
        for entry in catalog["entries"]:
            if entry.get("type") != C.CARD_MEDIA_TYPE:
                continue
            if "data" in entry:
                cards.append(entry["data"])
                continue
            doc = await _get(client, entry["url"], C.CARD_MEDIA_TYPE)
            try:
                cards.append(C.check_card(doc))
            except C.CardError as exc:
                raise CardProblem(f"{entry['url']} (entry {entry['identifier']}) is not a server card: {exc}") from None
        return {"catalog": catalog, "cards": cards}


def render(card: dict[str, Any]) -> str:
    title = card.get("title")
    out = [f"{title} ({card['name']})" if title else card["name"]]
    out[-1] += f"  v{card['version']}"
    out.append(f"  {card['description']}")
    if card.get("websiteUrl"):
        out.append(f"Website:       {card['websiteUrl']}")
    if card.get("repository"):
        out.append(f"Repository:    {card['repository'].get('url')} ({card['repository'].get('source')})")
    for remote in card.get("remotes") or []:
        out.append(f"Remote:        {remote['type']} {remote['url']}")
        if remote.get("supportedProtocolVersions"):
            out.append(f"  Versions:    {', '.join(remote['supportedProtocolVersions'])}")
        for h in remote.get("headers") or []:
            flags = [f for f in ("isRequired", "isSecret") if h.get(f)]
            out.append(f"  Header:      {h['name']}" + (f" ({', '.join(flags)})" if flags else ""))
    return "\n".join(out) + "\n"


def main(ns: argparse.Namespace, items: list[str]) -> int:
    if len(items) != 1:
        sys.stderr.write("mcpkit discover: --card takes one URL (a server card, an MCP endpoint or an AI catalog)\n")
        return 2
    headers = {}
    for h in ns.header or []:
        k, sep, v = h.partition(":")
        if not sep:
            sys.stderr.write(f"mcpkit discover: --header {h!r} is not K:V\n")
            return 2
        headers[k.strip()] = v.strip()
    try:
        found = run_loop(read(items[0], timeout=ns.timeout, headers=headers))
    except CardProblem as exc:
        sys.stderr.write(clean(f"mcpkit discover: {exc}") + "\n")
        return 1
    if ns.json:
        sys.stdout.write(dump_json(found) + "\n")
        return 0
    if "card" in found:
        sys.stdout.write(clean(render(found["card"])))
        return 0
    entries = [e for e in found["catalog"]["entries"] if e.get("type") == C.CARD_MEDIA_TYPE]
    sys.stdout.write(f"AI catalog: {len(entries)} MCP server card(s)\n")
    for entry, card in zip(entries, found["cards"], strict=True):
        sys.stdout.write(clean(f"\n{entry['identifier']}\n" + render(card)))
    return 0
