"""The MCP hosts on this machine: where each keeps its config, and what an entry looks like.

Shared by ``mcpkit scan`` (which reads every config it finds) and ``mcpkit install`` /
``mcpkit uninstall`` (which write one entry into one host's config). Paths follow the
environment as the hosts do: ``HOME`` (``~``), ``APPDATA`` on Windows, ``XDG_CONFIG_HOME`` on
Linux, ``~/Library/Application Support`` on macOS.

Shapes: ``{"mcpServers": {NAME: ENTRY}}`` (Claude Desktop, Claude Code, Cursor, Gemini CLI,
Windsurf, a generic ``mcp.json``), VS Code's ``{"servers": {NAME: ENTRY}}``, and Goose's YAML
``extensions:`` mapping. A stdio entry has a command, its arguments and environment; an HTTP
entry a URL (under the key the host reads) and headers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Host:
    """One MCP host: its command-line key, its name, its config file and entry shape."""

    key: str
    label: str
    #: The config paths it may use, most likely first (every platform's: a config is found
    #: wherever it is); ``default`` picks the one to create on this platform.
    paths: Callable[[], list[str]]
    default: Callable[[str], str | None]
    #: ``mcpServers``, ``servers`` (VS Code) or ``goose`` (YAML ``extensions:``).
    shape: str = "mcpServers"
    #: The key of an HTTP entry's URL (None: the host's config takes no HTTP servers).
    url_key: str | None = "url"
    #: ``type`` written into entries (``stdio``/``http``), as the host expects.
    typed: bool = False
    #: Whether ``mcpkit scan`` reads it.
    scanned: bool = True

    def config_path(self, platform: str | None = None) -> str | None:
        """The config to write: the first that exists, else this platform's default."""
        for path in self.paths():
            if os.path.isfile(path):
                return path
        return self.default(platform or sys.platform)

    def stdio_entry(self, name: str, command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
        if self.shape == "goose":
            return {"name": name, "type": "stdio", "enabled": True, "cmd": command, "args": args, "envs": env,
                    "timeout": 300}
        entry: dict[str, Any] = {"type": "stdio"} if self.typed else {}
        entry.update(command=command, args=args)
        if env:
            entry["env"] = env
        return entry

    def http_entry(self, name: str, url: str, headers: dict[str, str]) -> dict[str, Any]:
        if self.shape == "goose":
            return {"name": name, "type": "streamable_http", "enabled": True, "uri": url, "headers": headers,
                    "envs": {}, "timeout": 300}
        assert self.url_key is not None
        entry: dict[str, Any] = {"type": "http"} if self.typed else {}
        entry[self.url_key] = url
        if headers:
            entry["headers"] = headers
        return entry


def home() -> str:
    return os.path.expanduser("~")


def appdata() -> str:
    return os.environ.get("APPDATA") or os.path.join(home(), "AppData", "Roaming")


def mac_support() -> str:
    return os.path.join(home(), "Library", "Application Support")


def xdg_config() -> str:
    return os.environ.get("XDG_CONFIG_HOME") or os.path.join(home(), ".config")


def _per_platform(*parts: str) -> tuple[Callable[[], list[str]], Callable[[str], str]]:
    """(every platform's paths, this platform's) of an app-data config (``APP/.../FILE``)."""
    def paths() -> list[str]:
        return [os.path.join(mac_support(), *parts), os.path.join(xdg_config(), *parts), os.path.join(appdata(), *parts)]

    def default(platform: str) -> str:
        base = mac_support() if platform == "darwin" else appdata() if platform == "win32" else xdg_config()
        return os.path.join(base, *parts)

    return paths, default


def _in_home(*parts: str) -> tuple[Callable[[], list[str]], Callable[[str], str]]:
    return (lambda: [os.path.join(home(), *parts)]), (lambda _platform: os.path.join(home(), *parts))


def _goose() -> tuple[Callable[[], list[str]], Callable[[str], str]]:
    def paths() -> list[str]:
        return [os.path.join(xdg_config(), "goose", "config.yaml"),
                os.path.join(appdata(), "Block", "goose", "config", "config.yaml")]

    def default(platform: str) -> str:
        if platform == "win32":
            return os.path.join(appdata(), "Block", "goose", "config", "config.yaml")
        return os.path.join(xdg_config(), "goose", "config.yaml")

    return paths, default


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("claude-desktop", "Claude Desktop", *_per_platform("Claude", "claude_desktop_config.json"),
                           url_key=None),
    "claude-code": Host("claude-code", "Claude Code", *_in_home(".claude.json"), typed=True),
    "cursor": Host("cursor", "Cursor", *_in_home(".cursor", "mcp.json")),
    "vscode": Host("vscode", "VS Code", *_per_platform("Code", "User", "mcp.json"), shape="servers", typed=True),
    "gemini-cli": Host("gemini-cli", "Gemini CLI", *_in_home(".gemini", "settings.json"), url_key="httpUrl"),
    "windsurf": Host("windsurf", "Windsurf", *_in_home(".codeium", "windsurf", "mcp_config.json"), url_key="serverUrl"),
    "goose": Host("goose", "Goose", *_goose(), shape="goose", scanned=False),
    "mcp-json": Host("mcp-json", "mcp.json", lambda: [], lambda _platform: None, typed=False, scanned=False),
}
#: ``mcp.json`` on the command line is the generic host too.
ALIASES = {"mcp.json": "mcp-json", "code": "vscode", "gemini": "gemini-cli", "claude": "claude-code"}


def scan_candidates() -> list[tuple[str, str]]:
    """(host name, path) of every user-level JSON config ``mcpkit scan`` looks for."""
    return [(host.label, path) for host in HOSTS.values() if host.scanned for path in host.paths()]


def find_host(name: str) -> Host | None:
    return HOSTS.get(ALIASES.get(name, name))


def load_json(path: str) -> Any:
    """A JSON config; VS Code's JSONC (``//`` comments, trailing commas) is read too."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(strip_jsonc(text))


def strip_jsonc(text: str) -> str:
    """``text`` without ``//`` comments and trailing commas (strings left alone)."""
    stripped = re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*', lambda m: m.group(1) or "", text)
    return re.sub(r",(\s*[}\]])", r"\1", stripped)
