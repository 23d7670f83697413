"""Remembering which era a server speaks, per stdio command line or per HTTP origin."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Literal
from urllib.parse import urlsplit

log = logging.getLogger("mcpkit.client")

Era = Literal["modern", "legacy"]


def era_key(target: str | list[str]) -> str:
    """``stdio:<argv>`` or ``http:<scheme://host:port>``."""
    if isinstance(target, str):
        parts = urlsplit(target)
        return f"http:{parts.scheme}://{parts.netloc}"
    return "stdio:" + json.dumps(list(target))


class EraCache:
    """Era verdicts in memory, and optionally in a JSON file the host chooses (so a restart
    skips the probe). A verdict that stops working is dropped and the server re-probed."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._eras: dict[str, Era] = {}
        if self.path is not None:
            try:
                with open(self.path, encoding="utf-8") as f:
                    data = json.load(f)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                self._eras = {k: v for k, v in data.items() if v in ("modern", "legacy")}
            except FileNotFoundError:
                pass
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable era cache %s: %s", self.path, exc)

    def get(self, key: str) -> Era | None:
        return self._eras.get(key)

    def put(self, key: str, era: Era) -> None:
        if self._eras.get(key) != era:
            self._eras[key] = era
            self._save()

    def forget(self, key: str) -> None:
        if self._eras.pop(key, None) is not None:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            d = os.path.dirname(os.path.abspath(self.path))
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".era-cache-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self._eras, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not write the era cache %s: %s", self.path, exc)


#: The process-wide default cache (memory only).
DEFAULT_ERA_CACHE = EraCache()
