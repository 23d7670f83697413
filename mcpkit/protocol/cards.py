"""MCP Server Cards (SEP-2127, a Draft, tracked by the experimental server-card extension):
the document shapes and their checks, sans-IO.

A **server card** (``application/mcp-server-card+json``) describes one remote server before a
client connects: ``$schema``, ``name`` (reverse-DNS ``namespace/name``), ``version``,
``description``, optionally ``title``, ``websiteUrl``, ``repository``, ``icons``, ``remotes``
(each a ``type`` of ``streamable-http`` or ``sse``, a ``url``, optional ``headers``,
``variables`` and ``supportedProtocolVersions``) and ``_meta``. It lists no tools, resources or
prompts: those stay runtime listings. The recommended location is ``<mcp-url>/server-card``.

An **AI catalog** (``application/ai-catalog+json``, at ``/.well-known/ai-catalog.json`` for a
domain) lists entries; an MCP entry has an ``identifier``, ``type``
``application/mcp-server-card+json`` and exactly one of ``url`` (where the card is) and
``data`` (the card inline).

The Draft may change: this module follows the extension's ``schema.ts`` and
``docs/discovery.md`` as of their 2026 revision.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "CARD_MEDIA_TYPE", "CARD_SCHEMA", "CATALOG_MEDIA_TYPE", "CATALOG_PATH", "CARD_SUFFIX", "CATALOG_SPEC_VERSION",
    "CardError", "catalog_identifier", "check_card", "check_catalog", "check_name",
]

CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_MEDIA_TYPE = "application/mcp-server-card+json"
CATALOG_MEDIA_TYPE = "application/ai-catalog+json"
CATALOG_PATH = "/.well-known/ai-catalog.json"
CARD_SUFFIX = "server-card"
CATALOG_SPEC_VERSION = "1.0"

_NAME_RE = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
_REMOTE_URL_RE = re.compile(r"^(https?://[^\s]+|\{[a-zA-Z_][a-zA-Z0-9_]*\}[^\s]*)$")
_VERSION_RANGE_RE = re.compile(r"^[\^~<>=]|(^|\.)[x*X](\.|$)")
_TRANSPORTS = ("streamable-http", "sse")


class CardError(ValueError):
    """A server card or catalog that does not have the Draft's shape (one-line message)."""


def check_name(name: Any) -> str:
    """A card ``name``: reverse-DNS ``namespace/name``, 3 to 200 characters."""
    if not isinstance(name, str) or not 3 <= len(name) <= 200 or not _NAME_RE.match(name):
        raise CardError(f"name must be reverse-DNS 'namespace/name' (e.g. 'com.example/weather'), not {name!r}")
    return name


def _string(doc: dict[str, Any], key: str, where: str, *, required: bool = False, max_len: int | None = None,
            min_len: int = 0) -> None:
    if key not in doc:
        if required:
            raise CardError(f"{where}: {key!r} is missing")
        return
    value = doc[key]
    if not isinstance(value, str) or len(value) < min_len:
        raise CardError(f"{where}: {key!r} must be a{' non-empty' if min_len else ''} string")
    if max_len is not None and len(value) > max_len:
        raise CardError(f"{where}: {key!r} is longer than {max_len} characters")


def _url(doc: dict[str, Any], key: str, where: str) -> None:
    value = doc.get(key)
    if key in doc and (not isinstance(value, str) or not re.match(r"^https?://\S+$", value)):
        raise CardError(f"{where}: {key!r} must be an http(s) URL")


def _inputs(value: Any, where: str) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in value.items()):
        raise CardError(f"{where}: 'variables' must map names to input objects")


def _remote(remote: Any, where: str) -> None:
    if not isinstance(remote, dict):
        raise CardError(f"{where} must be an object")
    if remote.get("type") not in _TRANSPORTS:
        raise CardError(f"{where}: 'type' must be 'streamable-http' or 'sse', not {remote.get('type')!r}")
    url = remote.get("url")
    if not isinstance(url, str) or not _REMOTE_URL_RE.match(url):
        raise CardError(f"{where}: 'url' must start with http://, https:// or a {{variable}}, not {url!r}")
    headers = remote.get("headers", [])
    if not isinstance(headers, list) or not all(isinstance(h, dict) and isinstance(h.get("name"), str) for h in headers):
        raise CardError(f"{where}: 'headers' must be a list of objects with a 'name'")
    if "variables" in remote:
        _inputs(remote["variables"], where)
    versions = remote.get("supportedProtocolVersions", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise CardError(f"{where}: 'supportedProtocolVersions' must be a list of strings")


def check_card(doc: Any) -> dict[str, Any]:
    """``doc`` if it is a server card of the Draft's shape, else :class:`CardError` naming the
    first problem. Unknown members pass (cards are open objects)."""
    if not isinstance(doc, dict):
        raise CardError(f"a server card is a JSON object, not {type(doc).__name__}")
    if doc.get("$schema") != CARD_SCHEMA:
        raise CardError(f"'$schema' must be {CARD_SCHEMA}, not {doc.get('$schema')!r}")
    if "name" not in doc:
        raise CardError("card: 'name' is missing")
    check_name(doc["name"])
    _string(doc, "version", "card", required=True, max_len=255, min_len=1)
    if _VERSION_RANGE_RE.search(doc["version"]):
        raise CardError(f"card: 'version' must be one version, not a range ({doc['version']!r})")
    _string(doc, "description", "card", required=True, max_len=100, min_len=1)
    _string(doc, "title", "card", max_len=100, min_len=1)
    _url(doc, "websiteUrl", "card")
    if "repository" in doc:
        repo = doc["repository"]
        if not isinstance(repo, dict) or not isinstance(repo.get("url"), str) or not isinstance(repo.get("source"), str):
            raise CardError("card: 'repository' must be an object with a 'url' and a 'source'")
    if "icons" in doc:
        icons = doc["icons"]
        if not isinstance(icons, list) or not all(isinstance(i, dict) and isinstance(i.get("src"), str) for i in icons):
            raise CardError("card: 'icons' must be a list of objects with a 'src'")
    if "remotes" in doc:
        remotes = doc["remotes"]
        if not isinstance(remotes, list):
            raise CardError("card: 'remotes' must be a list")
        for i, remote in enumerate(remotes):
            _remote(remote, f"card: remotes[{i}]")
    if "_meta" in doc and not isinstance(doc["_meta"], dict):
        raise CardError("card: '_meta' must be an object")
    return doc


def check_catalog(doc: Any) -> dict[str, Any]:
    """``doc`` if it is an AI catalog whose MCP entries have the Draft's shape, else
    :class:`CardError`. Entries of other types pass unchecked; inline cards are checked."""
    if not isinstance(doc, dict):
        raise CardError(f"an AI catalog is a JSON object, not {type(doc).__name__}")
    _string(doc, "specVersion", "catalog", required=True, min_len=1)
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise CardError("catalog: 'entries' must be a list")
    for i, entry in enumerate(entries):
        where = f"catalog: entries[{i}]"
        if not isinstance(entry, dict):
            raise CardError(f"{where} must be an object")
        _string(entry, "identifier", where, required=True, min_len=1)
        _string(entry, "type", where, required=True, min_len=1)
        if entry["type"] != CARD_MEDIA_TYPE:
            continue
        if ("url" in entry) == ("data" in entry):
            raise CardError(f"{where}: exactly one of 'url' and 'data' is given")
        if "url" in entry:
            _url(entry, "url", where)
        else:
            try:
                check_card(entry["data"])
            except CardError as exc:
                raise CardError(f"{where}: data: {exc}") from None
    return doc


def catalog_identifier(name: str) -> str:
    """The catalog identifier of a card named ``name``: ``com.example/weather`` is
    ``urn:air:example.com:mcp:weather`` (the domain-anchored form)."""
    namespace, _, short = check_name(name).partition("/")
    publisher = ".".join(reversed(namespace.split(".")))
    return f"urn:air:{publisher}:mcp:{short}"
