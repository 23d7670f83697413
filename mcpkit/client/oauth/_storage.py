"""Where tokens and client registrations live between runs.

``TokenStorage`` is the interface: tokens are kept per protected resource (the MCP server's
canonical URI) together with the issuer that granted them; client registrations are kept
per authorization server ``issuer`` (a changed authorization server means registering anew,
never reusing another server's credentials). ``InMemoryTokenStorage`` lives as long as the
process; ``FileTokenStorage`` keeps one JSON file, mode 0600, under the user's data dir.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any


class TokenStorage:
    """Override the four ``get``/``set`` methods (they may block briefly; they are not async so
    that a file store needs no thread pool). Values are plain JSON-able dicts."""

    def get_tokens(self, resource: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def set_tokens(self, resource: str, tokens: dict[str, Any] | None) -> None:
        raise NotImplementedError

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def set_client(self, issuer: str, client: dict[str, Any] | None) -> None:
        raise NotImplementedError

    def forget(self, resource: str) -> bool:
        """Drop the tokens for ``resource`` (logout). True if there were any."""
        had = self.get_tokens(resource) is not None
        self.set_tokens(resource, None)
        return had


class InMemoryTokenStorage(TokenStorage):
    def __init__(self) -> None:
        self._tokens: dict[str, dict[str, Any]] = {}
        self._clients: dict[str, dict[str, Any]] = {}

    def get_tokens(self, resource: str) -> dict[str, Any] | None:
        return self._tokens.get(resource)

    def set_tokens(self, resource: str, tokens: dict[str, Any] | None) -> None:
        if tokens is None:
            self._tokens.pop(resource, None)
        else:
            self._tokens[resource] = dict(tokens)

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        return self._clients.get(issuer)

    def set_client(self, issuer: str, client: dict[str, Any] | None) -> None:
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = dict(client)


def default_storage_dir() -> Path:
    """The user's data directory for mcpkit (``$XDG_DATA_HOME/mcpkit`` or the platform's)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "mcpkit"


class FileTokenStorage(TokenStorage):
    """One JSON file (``{"tokens": {resource: ...}, "clients": {issuer: ...}}``), written
    atomically with mode 0600 in a 0700 directory. The default file is
    ``default_storage_dir() / "oauth.json"``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_storage_dir() / "oauth.json"
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except (OSError, ValueError):
            return {"tokens": {}, "clients": {}}  # a damaged store is treated as empty
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}}
        data.setdefault("tokens", {})
        data.setdefault("clients", {})
        return data

    def _save(self, data: dict[str, Any]) -> None:
        from ..._files import write_atomic

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(self.path, json.dumps(data, indent=1, sort_keys=True), mode=0o600, prefix=".oauth-")

    def _update(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        with self._lock:
            data = self._load()
            if value is None:
                data[section].pop(key, None)
            else:
                data[section][key] = value
            self._save(data)

    def get_tokens(self, resource: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._load()["tokens"].get(resource)
        return value if isinstance(value, dict) else None

    def set_tokens(self, resource: str, tokens: dict[str, Any] | None) -> None:
        self._update("tokens", resource, tokens)

    def get_client(self, issuer: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._load()["clients"].get(issuer)
        return value if isinstance(value, dict) else None

    def set_client(self, issuer: str, client: dict[str, Any] | None) -> None:
        self._update("clients", issuer, client)
