"""Opaque list cursors: clients must not parse them, servers must reject bad ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..protocol import errors

T = TypeVar("T")
_PREFIX = b"mcpkit:o:"


def encode_cursor(offset: int) -> str:
    import base64

    return base64.urlsafe_b64encode(_PREFIX + str(offset).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    import base64

    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if raw.startswith(_PREFIX):
            n = int(raw[len(_PREFIX):])
            if n >= 0:
                return n
    except (ValueError, TypeError):
        pass
    raise errors.invalid_params("Invalid cursor", {"cursor": cursor})


def page(items: Sequence[T], cursor: str | None, size: int | None) -> tuple[Sequence[T], str | None]:
    """One page of ``items`` and the next cursor (None at the end)."""
    start = 0 if cursor is None else decode_cursor(cursor)
    if start > len(items):
        raise errors.invalid_params("Invalid cursor", {"cursor": cursor})
    if size is None:
        return items[start:], None
    end = start + size
    return items[start:end], (encode_cursor(end) if end < len(items) else None)
