"""One line for an optional dependency that is not installed, naming the extra that brings it."""

from __future__ import annotations

#: the first part of a missing module's name -> the extra that installs it
EXTRAS = {"redis": "redis", "uvicorn": "http", "httpx": "http", "joserfc": "oauth"}


def missing_extra(exc: ImportError, what: str, extra: str | None = None) -> str:
    """``WHAT needs the EXTRA extra: pip install 'mcpkit[EXTRA]' (MODULE is not installed)``;
    ``extra`` overrides the one looked up from the missing module's name."""
    root = (exc.name or "").split(".")[0]
    extra = extra or EXTRAS.get(root)
    if extra is None or not root:
        return f"{what}: {exc}"
    return f"{what} needs the {extra} extra: pip install 'mcpkit[{extra}]' ({root} is not installed)"


__all__ = ["EXTRAS", "missing_extra"]
