"""Protocol versions mcpkit knows, and which era each belongs to."""

from __future__ import annotations

from typing import Literal

Era = Literal["modern", "legacy"]

LATEST = "2026-07-28"
#: Versions that carry per-request ``_meta`` (no handshake), newest first.
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
#: ``initialize``-handshake versions, newest first.
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY = LEGACY_VERSIONS[0]

_ERAS: dict[str, Era] = {v: "modern" for v in MODERN_VERSIONS}
_ERAS.update({v: "legacy" for v in LEGACY_VERSIONS})


def era_of(version: str) -> Era | None:
    """The era of a known version, or None for a version mcpkit has never heard of."""
    return _ERAS.get(version)


def is_modern(version: str) -> bool:
    return _ERAS.get(version) == "modern"


def pick_version(offered: list[str] | tuple[str, ...], ours: tuple[str, ...] = MODERN_VERSIONS) -> str | None:
    """The newest of ``ours`` that the peer also offers, or None."""
    offered_set = set(offered)
    for v in ours:
        if v in offered_set:
            return v
    return None
