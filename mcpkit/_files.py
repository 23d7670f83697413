"""Writing a file all at once: a temporary file beside it, renamed over it (a reader sees the
old text or the new, never half), with its mode set before any byte is written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], text: str, *, mode: int = 0o600, prefix: str = ".mcpkit-") -> None:
    """Replace ``path`` with ``text`` (UTF-8, newlines as given), the file's mode ``mode``."""
    folder = os.path.dirname(os.fspath(path)) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
