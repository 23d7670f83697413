"""``mcpkit install HOST TARGET`` and ``mcpkit uninstall HOST NAME``: add a server to an MCP
host's config (Claude Desktop, Claude Code, Cursor, VS Code, Gemini CLI, Windsurf, Goose, or
any ``mcp.json`` with ``--config FILE``), or take it out again.

The entry (name, command and arguments or URL, environment, headers) is written in the shape
the host reads (:mod:`mcpkit.cli._hosts`); a unified diff of the change is printed, the file
as it was is kept next to it as ``FILE.bak``, and it is replaced atomically (its permissions
kept; a new file is readable by its owner only, as it may hold tokens). Other entries and
settings are never changed: an entry of the same name that differs is refused unless
``--force``, an entry that is already there as given changes nothing. ``--dry-run`` prints
the diff and writes nothing. JSON with comments (JSONC) and Goose YAML that is not in the
plain form :mod:`mcpkit.cli._goose` edits are refused with one line, never rewritten.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from typing import Any
from urllib.parse import urlsplit

from .._files import write_atomic
from ..errors import CliError
from . import _goose
from ._hosts import HOSTS, Host, find_host, strip_jsonc
from ._safe import clean
from ._target import _file_part, command_for_file, looks_like_file, looks_like_url, parse_pairs, split_command

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HOST_LIST = ", ".join(HOSTS)


def install_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit install",
        description="Add a server to an MCP host's config: prints the change as a diff, keeps the old file as "
        "FILE.bak, never touches other entries. Running it again with the same arguments changes nothing.",
        epilog="examples:\n"
               "  mcpkit install claude-desktop examples/demo.py\n"
               "  mcpkit install cursor https://example.com/mcp -H 'Authorization: Bearer TOKEN'\n"
               "  mcpkit install vscode --name everything -- npx -y @modelcontextprotocol/server-everything\n"
               "  mcpkit install mcp-json examples/demo.py          (prints the mcp.json entry)\n"
               f"\nHOST: {_HOST_LIST}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host", metavar="HOST", help=f"where to install it: {_HOST_LIST}")
    p.add_argument("target", nargs="?", metavar="TARGET",
                   help="FILE.py[:attr] (run with this Python), an http(s) URL, or -- COMMAND [ARGS...] at the end")
    p.add_argument("--name", help="the entry's name (default: the server's name in FILE.py, the file's, URL host's "
                   "or package's name)")
    p.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VAL",
                   help="an environment variable for a stdio server (repeatable)")
    p.add_argument("--header", "-H", action="append", default=[], metavar="K:V",
                   help="an HTTP header for a URL server (repeatable)")
    _common(p)
    p.add_argument("--force", action="store_true", help="replace an entry of the same name that differs")
    return p


def uninstall_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit uninstall", description="Remove a server's entry from an MCP host's config (diff shown, the "
        "old file kept as FILE.bak).", epilog=f"example: mcpkit uninstall cursor demo\n\nHOST: {_HOST_LIST}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host", metavar="HOST", help=f"the host: {_HOST_LIST}")
    p.add_argument("name", metavar="NAME", help="the entry's name")
    _common(p)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="the config file to edit instead of the host's own "
                   "(needed for mcp-json to write a file)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")


# ---------------------------------------------------------------- the entry
def _host(name: str) -> Host:
    host = find_host(name)
    if host is None:
        raise CliError(f"unknown HOST {name!r} (choose from {_HOST_LIST})", 2)
    return host


def default_name(*, url: str | None = None, argv: list[str] | None = None, file: str | None = None) -> str:
    """A name for the entry: the ``Server("NAME")`` a file declares, else its stem; a URL's
    host; a command's package (``npx -y @scope/pkg@1`` is ``pkg``) or program."""
    raw = ""
    if file is not None:
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                m = re.search(r"""\bServer\(\s*(?:name\s*=\s*)?(["'])([^"'\n]{1,64})\1""", f.read(200_000))
        except OSError:
            m = None
        raw = m.group(2) if m else os.path.splitext(os.path.basename(file))[0]
    elif url is not None:
        raw = urlsplit(url).hostname or ""
    elif argv:
        args = [a for a in argv[1:] if not a.startswith("-")]
        raw = args[0] if args else argv[0]
        raw = os.path.basename(raw.rstrip("/\\"))
        raw = re.sub(r"@[^@/]*$", "", raw) if not raw.startswith("@") else raw
        raw = os.path.splitext(raw)[0] if raw.endswith((".py", ".js", ".mjs", ".exe")) else raw
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-._")[:64]
    return name or "mcp-server"


def _entry(host: Host, ns: argparse.Namespace, command: list[str] | None) -> tuple[str, dict[str, Any]]:
    env = parse_pairs(ns.env, "-e", "=")
    headers = parse_pairs(ns.header, "--header", ":")
    url: str | None = None
    argv: list[str] | None = None
    file: str | None = None
    if command is not None:
        if ns.target is not None:
            raise CliError("give a TARGET or -- COMMAND [ARGS...], not both", 2)
        if not command:
            raise CliError("nothing after --: give the server's command, e.g. -- npx -y PACKAGE", 2)
        if len(command) == 1 and looks_like_url(command[0]):
            url = command[0]
        else:
            argv = list(command)
    elif ns.target is None:
        raise CliError("give a TARGET: FILE.py, an http(s) URL, or -- COMMAND [ARGS...]", 2)
    elif looks_like_url(ns.target):
        url = ns.target
    elif looks_like_file(ns.target):
        file = os.path.abspath(_file_part(ns.target))
        attr = ns.target[len(_file_part(ns.target)):]
        argv = command_for_file(file + attr)
    else:
        raise CliError(f"{ns.target!r} is not a TARGET: give FILE.py, an http(s) URL, or -- COMMAND [ARGS...]", 2)
    if url is not None and env:
        raise CliError("-e sets a stdio server's environment; a URL takes --header", 2)
    if url is None and headers:
        raise CliError("--header is for a URL; a stdio server takes -e KEY=VAL", 2)
    name = ns.name if ns.name is not None else default_name(url=url, argv=argv, file=file)
    _check_name(name)
    if url is not None:
        if host.url_key is None and host.shape != "goose":
            raise CliError(f"{host.label} reads only stdio servers from its config; add {url} as a connector in "
                           "its settings, or install a stdio command")
        return name, host.http_entry(name, url, headers)
    assert argv is not None
    return name, host.stdio_entry(name, argv[0], argv[1:], env)


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise CliError(f"--name {name!r}: use letters, digits, '.', '_' and '-' (up to 64, starting with a letter "
                       "or digit)", 2)


# ---------------------------------------------------------------- the file
def _config_path(host: Host, given: str | None) -> str | None:
    path = given or host.config_path()
    return None if path is None else os.path.realpath(os.path.expanduser(path))


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None


def _load(path: str, text: str | None, block_key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the whole config, its servers block) of JSON ``text`` (CliError when not editable)."""
    data: Any = {}
    if text is not None and text.strip():
        try:
            data = json.loads(text)
        except ValueError:
            try:
                json.loads(strip_jsonc(text))
            except ValueError as exc:
                raise CliError(f"{path} is not valid JSON ({exc}); fix it first") from None
            raise CliError(f"{path} has comments or trailing commas; mcpkit will not rewrite it (add the entry "
                           f"under \"{block_key}\" by hand)") from None
    if not isinstance(data, dict):
        raise CliError(f"{path} does not hold a JSON object; fix it first")
    block = data.setdefault(block_key, {})
    if not isinstance(block, dict):
        raise CliError(f"{path}: \"{block_key}\" is not an object; fix it first")
    return data, block


def _dump(data: dict[str, Any], old: str | None) -> str:
    indent: str | int = 2
    m = re.search(r"^([ \t]+)\S", old or "", re.M)
    if m:
        indent = m.group(1) if "\t" in m.group(1) else len(m.group(1))
    newline = "\r\n" if old and "\r\n" in old else "\n"
    return json.dumps(data, indent=indent, ensure_ascii=False).replace("\n", newline) + newline


def _write(path: str, old: str | None, new: str, *, dry_run: bool) -> None:
    """Print the diff; unless ``dry_run``, keep ``old`` as ``path.bak`` and replace ``path``."""
    diff = difflib.unified_diff((old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                                fromfile=path if old is not None else "/dev/null", tofile=path)
    for line in diff:
        sys.stdout.write(clean(line if line.endswith("\n") else line + "\n").replace("\r\n", "\n"))
    if dry_run:
        return
    mode = 0o600
    if old is not None:
        mode = os.stat(path).st_mode & 0o7777
        write_atomic(path + ".bak", old, mode=mode)
    else:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomic(path, new, mode=mode)




# ---------------------------------------------------------------- the commands
def install(argv: list[str]) -> int:
    """``mcpkit install``: the exit status."""
    before, command = split_command(argv)
    p = install_parser()
    ns = p.parse_intermixed_args(before)
    try:
        return _install(ns, command)
    except CliError as exc:
        print(clean(f"mcpkit install: {exc}"), file=sys.stderr)
        return exc.code


def _install(ns: argparse.Namespace, command: list[str] | None) -> int:
    host = _host(ns.host)
    name, entry = _entry(host, ns, command)
    path = _config_path(host, ns.config)
    if path is None:  # mcp-json without --config: the entry to paste
        sys.stdout.write(clean(json.dumps({"mcpServers": {name: entry}}, indent=2, ensure_ascii=False)) + "\n")
        return 0
    old = _read(path)
    if host.shape == "goose":
        try:
            new, status = _goose.add(old or "", name, entry, replace=ns.force)
        except _goose.Unsafe as exc:
            raise CliError(f"{path}: not edited, {exc}; add {name!r} under extensions: by hand") from None
    else:
        data, block = _load(path, old, "servers" if host.shape == "servers" else "mcpServers")
        current = block.get(name)
        status = "added" if current is None else "same" if current == entry else "replaced" if ns.force else "differs"
        if status in ("added", "replaced"):
            block[name] = entry
        new = _dump(data, old) if status in ("added", "replaced") else old or ""
    if status == "same":
        print(clean(f"{name} is already installed in {path}; nothing changed"))
        return 0
    if status == "differs":
        raise CliError(f"{path} already has a different {name!r} entry; pass --force to replace it, or --name to "
                       "install this one under another name")
    _write(path, old, new, dry_run=ns.dry_run)
    if ns.dry_run:
        print(clean(f"dry run: {path} not changed"))
    else:
        verb = "replaced" if status == "replaced" else "installed"
        kept = f" (the old file is {path}.bak)" if old is not None else ""
        print(clean(f"{verb} {name} in {host.label}: {path}{kept}; restart {host.label} to load it"))
    return 0


def uninstall(argv: list[str]) -> int:
    """``mcpkit uninstall``: the exit status."""
    ns = uninstall_parser().parse_args(argv)
    try:
        return _uninstall(ns)
    except CliError as exc:
        print(clean(f"mcpkit uninstall: {exc}"), file=sys.stderr)
        return exc.code


def _uninstall(ns: argparse.Namespace) -> int:
    host = _host(ns.host)
    path = _config_path(host, ns.config)
    if path is None:
        raise CliError(f"{host.label} has no config of its own: give --config FILE", 2)
    old = _read(path)
    if old is None:
        raise CliError(f"{path} does not exist; nothing to remove")
    if host.shape == "goose":
        try:
            new = _goose.remove(old, ns.name)
        except _goose.Unsafe as exc:
            raise CliError(f"{path}: not edited, {exc}; remove {ns.name!r} by hand") from None
    else:
        data, block = _load(path, old, "servers" if host.shape == "servers" else "mcpServers")
        new = None
        if ns.name in block:
            del block[ns.name]
            new = _dump(data, old)
    if new is None:
        raise CliError(f"{path} has no {ns.name!r} entry (nothing changed)")
    _write(path, old, new, dry_run=ns.dry_run)
    if ns.dry_run:
        print(clean(f"dry run: {path} not changed"))
    else:
        print(clean(f"removed {ns.name} from {host.label}: {path} (the old file is {path}.bak)"))
    return 0


__all__ = ["default_name", "install", "uninstall"]
