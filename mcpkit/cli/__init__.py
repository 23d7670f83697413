"""The ``mcpkit`` command: use a server from the shell, look at it, and serve one.

- ``mcpkit call TOOL [key=value ...] TARGET``, ``mcpkit list [WHAT] TARGET``,
  ``mcpkit read URI TARGET``, ``mcpkit prompt NAME [key=value ...] TARGET``,
  ``mcpkit skills list|get URI TARGET``;
- ``mcpkit discover TARGET`` prints a server's card, ``mcpkit scan [CONFIG ...]`` probes every
  server the MCP hosts on this machine (or the given configs) know;
- ``mcpkit inspect TARGET`` serves a web inspector for a server on 127.0.0.1;
- ``mcpkit serve FILE.py|module[:attr]`` runs a server over stdio or Streamable HTTP;
- ``mcpkit install HOST TARGET`` / ``mcpkit uninstall HOST NAME`` add a server to an MCP host's
  config (Claude Desktop, Claude Code, Cursor, VS Code, Gemini CLI, Windsurf, Goose, mcp.json);
- ``mcpkit proxy TARGET`` serves another server again (stdio or HTTP), translating eras.

TARGET is an ``http(s)://`` URL, a server file ``FILE.py``, or ``-- COMMAND [ARGS...]`` at the
end of the line. Each command lives in its own module and is imported only when it runs, so
``mcpkit --help`` loads neither the client nor the HTTP stack.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

#: command -> (module[:function], one-line help); the function defaults to ``main``
COMMANDS: dict[str, tuple[str, str]] = {
    "call": ("_call", "call a tool and print its result"),
    "list": ("_list", "list a server's tools, resources, resource templates or prompts"),
    "read": ("_read", "read a resource"),
    "prompt": ("_prompt", "get a prompt"),
    "skills": ("_skills", "list a server's skills, or load one verified (skills extension)"),
    "discover": ("_discover", "show what a server is: identity, era, versions, capabilities, tools"),
    "scan": ("_scan", "probe every MCP server configured on this machine (or in CONFIG files)"),
    "inspect": ("_inspect", "open a web inspector for a server (tools with forms, resources, prompts, history)"),
    "serve": ("_serve", "run a server defined in FILE.py or module[:attr]"),
    "proxy": ("_proxy", "serve another MCP server (a URL or -- COMMAND) again, to clients of both eras"),
    "login": ("_login:login", "authorize to a server (OAuth) and keep the tokens (needs mcpkit[oauth])"),
    "logout": ("_login:logout", "forget (and revoke) the stored tokens for a server"),
    "install": ("_install:install", "add a server to an MCP host's config (Claude Desktop, Cursor, VS Code, ...)"),
    "uninstall": ("_install:uninstall", "remove a server from an MCP host's config"),
}

EPILOG = """\
TARGET (for call, list, read, prompt, skills, discover, inspect):
  http(s)://HOST/PATH       a Streamable HTTP server (needs the http extra: pip install 'mcpkit[http]';
                            --bearer TOKEN, or the tokens `mcpkit login URL` kept)
  FILE.py[:attr]            a server file, run with this Python
  -- COMMAND [ARGS...]      a stdio server command, at the end of the line

examples:
  mcpkit call add a=2 b=3 -- python examples/demo.py
  mcpkit list tools examples/demo.py
  mcpkit serve --http examples/demo.py
  mcpkit scan
"""


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcpkit", description="Model Context Protocol toolkit.", epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print mcpkit's version")
    sub = parser.add_subparsers(dest="cmd", metavar="COMMAND")
    for name, (_mod, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcpkit`` command line (``argv`` without the program name); the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        parser = _top_parser()
        if args and not args[0].startswith("-"):
            parser.print_usage(sys.stderr)
            print(f"mcpkit: error: unknown command {args[0]!r} (choose from {', '.join(COMMANDS)})", file=sys.stderr)
            return EXIT_USAGE
        ns = parser.parse_args(args)
        if ns.version:
            from .._version import __version__

            print(f"mcpkit {__version__}")
            return EXIT_OK
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    import importlib

    modname, _, func = COMMANDS[args[0]][0].partition(":")
    module = importlib.import_module(f"{__name__}.{modname}")
    run: Callable[[list[str]], int] = getattr(module, func or "main")
    try:
        return run(args[1:])
    except KeyboardInterrupt:
        print(f"mcpkit {args[0]}: interrupted", file=sys.stderr)
        return 130


__all__ = ["main"]
