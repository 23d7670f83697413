"""Which MCP configs ``mcpkit scan`` may act on without asking.

A project config (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json`` in the current
directory, or a file of that shape given as CONFIG) comes with whatever was cloned or
unpacked there: its stdio entries are commands a stranger wrote, its HTTP entries addresses a
stranger chose (internal ones included). Those entries are listed but not started, nor
connected to, unless ``--trust-project`` says so or the person at the terminal answers yes
(asked once per file, default no, only when stdin and stdout are both terminals). User-level
configs (the home directory's, the host apps') are the user's own and are probed as before.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

from ._safe import clean

#: What a project entry shows instead of being probed.
NOT_STARTED = "not started: project config (pass --trust-project to run it)"
NOT_PROBED = "not probed: project config (pass --trust-project to connect to it)"


def project_paths(cwd: str) -> list[tuple[str, str]]:
    """(host, path) of the project configs a directory may hold."""
    return [("Claude Code", os.path.join(cwd, ".mcp.json")),
            ("Cursor", os.path.join(cwd, ".cursor", "mcp.json")),
            ("VS Code", os.path.join(cwd, ".vscode", "mcp.json"))]


def has_project_shape(path: str) -> bool:
    """A file named like a project config: ``.mcp.json``, or ``mcp.json`` in ``.cursor`` or ``.vscode``."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    return name == ".mcp.json" or (name == "mcp.json" and os.path.basename(os.path.dirname(real)) in
                                   (".cursor", ".vscode"))


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def describe(entry: dict[str, Any]) -> str:
    """What probing an entry would do, for the question (shown escaped)."""
    url = entry.get("url") or entry.get("serverUrl") or entry.get("httpUrl")
    if isinstance(url, str):
        return f"connects to {url}"
    command = entry.get("command")
    if isinstance(command, str) and command:
        args = entry.get("args") if isinstance(entry.get("args"), list) else []
        return "runs " + shlex.join([command, *[str(a) for a in args or []]])
    return "nothing (not a server entry)"


def ask(path: str, entries: dict[str, Any]) -> bool:
    """Ask once whether to run and connect to what the project config ``path`` names."""
    lines = [f"mcpkit scan: {clean(path)} is a project config (it came with this directory, not from you):"]
    lines.extend(f"  {clean(name)}: {clean(describe(entry))}" for name, entry in entries.items())
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.write("Start these servers (and connect to these URLs)? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        answer = ""
    if not answer:
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


__all__ = ["NOT_PROBED", "NOT_STARTED", "ask", "has_project_shape", "interactive", "project_paths"]
