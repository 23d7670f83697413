"""``mcpkit scan [CONFIG ...]``: probe every MCP server a host on this machine is configured
with (or those of the given config files), in parallel, and print one row each.

Configs found without arguments: Claude Desktop, Claude Code (``~/.claude.json`` and
``.mcp.json`` here), Cursor (``~/.cursor/mcp.json``, ``.cursor/mcp.json``), VS Code (user
``mcp.json``, ``.vscode/mcp.json``), Gemini CLI (``~/.gemini/settings.json``) and Windsurf
(``~/.codeium/windsurf/mcp_config.json``); where each lives is :mod:`mcpkit.cli._hosts`.
Both shapes are read: ``{"mcpServers": {...}}`` and VS Code's ``{"servers": {...}}``, with
``command``/``args``/``env`` (stdio) or ``url``/``headers`` (HTTP) entries.

Project configs (this directory's, or CONFIG files named like them) are not trusted: their
entries are listed, not started or connected to, unless ``--trust-project`` (or a yes on a
terminal) says so; see :mod:`mcpkit.cli._trust`. What servers say is printed through
:func:`mcpkit.cli._safe.clean`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Any

from .._wakeup import run as run_loop
from . import _trust
from ._hosts import load_json as _load_json
from ._hosts import scan_candidates
from ._safe import add_raw_option, clean, set_raw
from ._target import Target, describe_error, dump_json, errors_to_catch

PROG = "mcpkit scan"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Probe every MCP server in the configs of the common hosts (Claude Desktop, "
        "Claude Code, Cursor, VS Code, Gemini CLI, Windsurf), or in the CONFIG files given, in parallel. Prints a table: "
        "name, transport, era, versions, server, tools, latency, auth, error. Exits 1 when any server failed.")
    p.add_argument("configs", nargs="*", metavar="CONFIG", help="MCP config files (JSON) to scan instead")
    p.add_argument("--json", action="store_true", help='print {"servers": [...]} as JSON')
    p.add_argument("--timeout", type=float, default=15.0, metavar="SECONDS",
                   help="give up on a server after this many seconds, everything included (default 15)")
    p.add_argument("--trust-project", action="store_true",
                   help="also start the commands and connect to the URLs of project configs (.mcp.json, "
                        ".cursor/mcp.json, .vscode/mcp.json here, or CONFIG files named so); by default they "
                        "are only listed (on a terminal you are asked once per file)")
    add_raw_option(p)
    return p


def host_configs() -> list[tuple[str, str, bool]]:
    """(host, path, project) of the MCP configs that exist on this machine and in this directory
    (``project``: it is this directory's, not the user's)."""
    candidates = scan_candidates()
    # The user's own configs come first: a project path that is one of them (the home
    # directory's .cursor/mcp.json, scanned from home) stays the user's.
    seen: set[str] = set()
    out = []
    for (host, path), project in [*((c, False) for c in candidates),
                                  *((c, True) for c in _trust.project_paths(os.getcwd()))]:
        real = os.path.realpath(path)
        if real not in seen and os.path.isfile(path):
            seen.add(real)
            out.append((host, path, project))
    return out


def user_config_paths() -> set[str]:
    """The real paths of the user-level configs that exist (for CONFIG files given)."""
    return {os.path.realpath(path) for _host, path, project in host_configs() if not project}


def servers_in(data: Any) -> dict[str, Any]:
    """The server entries of one config, by name (both shapes; Claude Code's projects too)."""
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return out
    for block in (data.get("mcpServers"), data.get("servers"), (data.get("mcp") or {}).get("servers")
                  if isinstance(data.get("mcp"), dict) else None):
        if isinstance(block, dict):
            out.update({k: v for k, v in block.items() if isinstance(v, dict)})
    projects = data.get("projects")
    if isinstance(projects, dict):
        for project in projects.values():
            if isinstance(project, dict) and isinstance(project.get("mcpServers"), dict):
                for k, v in project["mcpServers"].items():
                    if isinstance(v, dict):
                        out.setdefault(k, v)
    return out


def entry_target(entry: dict[str, Any], ns: argparse.Namespace) -> Target | str:
    """The Target of one config entry, or why it cannot be probed."""
    kind = entry.get("type") or entry.get("transport")
    url = entry.get("url") or entry.get("serverUrl") or entry.get("httpUrl")
    if kind == "sse":
        return "the HTTP+SSE transport (2024-11-05) is not supported"
    if isinstance(url, str):
        given = entry.get("headers")
        headers: dict[str, Any] = given if isinstance(given, dict) else {}
        return Target(url=url, headers={str(k): str(v) for k, v in headers.items()}, timeout=ns.timeout)
    command = entry.get("command")
    if isinstance(command, str) and command:
        given_args, given_env = entry.get("args"), entry.get("env")
        args: list[Any] = given_args if isinstance(given_args, list) else []
        env: dict[str, Any] = given_env if isinstance(given_env, dict) else {}
        target = Target(argv=[command, *[str(a) for a in args]], env={str(k): str(v) for k, v in env.items()},
                        timeout=ns.timeout)
        return target
    return "neither a command nor a url"


async def probe_one(name: str, source: str, entry: dict[str, Any], ns: argparse.Namespace,
                    progress: _Progress | None, trusted: bool = True) -> dict[str, Any]:
    from ..errors import HttpStatusError
    from ..protocol import meta as M
    from ._discover import probe

    row: dict[str, Any] = {"name": name, "source": source, "transport": None, "target": None, "era": None,
                           "versions": [], "server": None, "tools": None, "latencyMs": None, "auth": False,
                           "error": None, "skipped": None}
    target = entry_target(entry, ns)
    if isinstance(target, str):
        row["error"] = target
        if progress:
            progress.done(name)
        return row
    row["transport"] = target.transport
    row["target"] = target.url or " ".join(target.argv or [])
    if not trusted:
        row["skipped"] = _trust.NOT_PROBED if target.url else _trust.NOT_STARTED
        if progress:
            progress.done(name)
        return row
    t0 = time.monotonic()
    try:
        client = target.client()
        try:
            target.deadline = asyncio.get_running_loop().time() + ns.timeout
            async with asyncio.timeout_at(target.deadline):
                await client.start()
                report = await probe(client, target, lists=False)
                raw = report["discover"]
                row["latencyMs"] = round((report["discoveredAt"] - t0) * 1000)
                row["era"] = report["era"]
                row["versions"] = raw.get("supportedVersions") or []
                info = (raw.get("_meta") or {}).get(M.SERVER_INFO) or {}
                row["server"] = {"name": info.get("name"), "version": info.get("version")} if info else None
                if "tools" in (raw.get("capabilities") or {}):
                    row["tools"] = len(await client.list_tools())
                else:
                    row["tools"] = 0
        finally:
            try:
                await asyncio.wait_for(client.close(), 5.0)
            except Exception:
                pass
    except Exception as exc:
        if not isinstance(exc, errors_to_catch()) and type(exc).__name__ != "CliError":
            raise
        row["error"] = describe_error(exc, ns.timeout, credentials=target.sends_credentials)
        if isinstance(exc, HttpStatusError) and exc.status in (401, 403):
            row["auth"] = True
        output = target.server_output(10)
        if output:  # as discover shows it: the server's stderr (and what it wrote to stdout that is not JSON-RPC)
            row["stderr"] = [ln.strip() for ln in output if ln.startswith("  ")]
            row["serverOutput"] = output
    finally:
        target.close()
    if progress:
        progress.done(name)
    return row


class _Progress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0

    def show(self, last: str = "") -> None:
        last = clean(last)
        sys.stderr.write(f"\r\x1b[Kprobing {self.total} servers: {self.finished} done{'  (' + last + ')' if last else ''}")
        sys.stderr.flush()

    def done(self, name: str) -> None:
        self.finished += 1
        self.show(name)

    def clear(self) -> None:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def main(argv: list[str]) -> int:
    p = parser()
    ns = p.parse_intermixed_args(argv)
    set_raw(ns.raw)
    sources: list[tuple[str, str, bool]]
    if ns.configs:
        mine = user_config_paths()
        sources = [("", path, _trust.has_project_shape(path) and os.path.realpath(path) not in mine)
                   for path in ns.configs]
    else:
        sources = host_configs()
        if not sources:
            print(f"{PROG}: no MCP host configs found (looked for Claude Desktop, Claude Code, Cursor, VS Code, "
                  "Gemini CLI and Windsurf); give CONFIG files", file=sys.stderr)
            return 1
    entries: list[tuple[str, str, dict[str, Any], bool]] = []
    for host, path, project in sources:
        try:
            data = _load_json(path)
        except (OSError, ValueError) as exc:
            print(f"{PROG}: {clean(path)}: {clean(getattr(exc, 'strerror', None) or exc)}", file=sys.stderr)
            return 1
        label = f"{host}: {path}" if host else path
        found = servers_in(data)
        trusted = not project or ns.trust_project or (bool(found) and _trust.interactive() and _trust.ask(path, found))
        for name, entry in found.items():
            entries.append((name, label, entry, trusted))
    if not entries:
        print(f"{PROG}: no servers in {clean(', '.join(path for _h, path, _p in sources))}", file=sys.stderr)
        return 1 if ns.configs else 0
    rows = run_loop(_probe_all(entries, ns))
    if ns.json:
        sys.stdout.write(dump_json({"servers": rows}) + "\n")
    else:
        sys.stdout.write(render_table(rows))
    return 1 if any(r["error"] for r in rows) else 0


async def _probe_all(entries: list[tuple[str, str, dict[str, Any], bool]],
                     ns: argparse.Namespace) -> list[dict[str, Any]]:
    progress = _Progress(len(entries)) if sys.stderr.isatty() else None
    if progress:
        progress.show()
    try:
        return list(await asyncio.gather(*(probe_one(n, s, e, ns, progress, t) for n, s, e, t in entries)))
    finally:
        if progress:
            progress.clear()


def render_table(rows: list[dict[str, Any]]) -> str:
    """The table, then a line for each server that failed or was not started; what servers
    and configs say goes through :func:`~mcpkit.cli._safe.clean`."""
    head = ["NAME", "TRANSPORT", "ERA", "VERSIONS", "SERVER", "TOOLS", "LATENCY", "AUTH"]
    table = [head]
    for r in rows:
        server = r.get("server") or {}
        table.append([
            r["name"], r["transport"] or "-", r["era"] or "-", ", ".join(r["versions"]) or "-",
            " ".join(str(x) for x in (server.get("name"), server.get("version")) if x) or "-",
            "-" if r["tools"] is None else str(r["tools"]),
            "-" if r["latencyMs"] is None else f"{r['latencyMs']} ms",
            "required" if r["auth"] else "-",
        ])
        table[-1] = [clean(cell) for cell in table[-1]]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    failed = [r for r in rows if r["error"]]
    if failed:
        out.append("")
        for r in failed:
            out.append(clean(f"{r['name']}: {r['error']}"))
            out.extend(clean(f"  {ln}") for ln in r.get("serverOutput") or [])
    skipped = [r for r in rows if r.get("skipped")]
    if skipped:
        out.append("")
        for r in skipped:
            out.append(clean(f"{r['name']}: {r['skipped']}"))
            out.append(clean(f"    {r['source']}: {r['target']}"))
    return "\n".join(out) + "\n"
