"""The ``mcpkit`` command: ``discover`` a server, ``serve`` one."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

EXIT_USAGE = 2
EXIT_FAIL = 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcpkit", description="Model Context Protocol toolkit.")
    parser.add_argument("--version", action="store_true", help="print mcpkit's version")
    sub = parser.add_subparsers(dest="cmd")

    d = sub.add_parser("discover", help="show what a server is: identity, versions, capabilities, tools",
                       description="Probe a server with server/discover and print its card. "
                                   "TARGET is an http(s) URL, or a command after --, e.g. "
                                   "`mcpkit discover -- python examples/demo.py`.")
    d.add_argument("--json", action="store_true", help="print exactly the DiscoverResult JSON object")
    d.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each answer (default 10)")
    d.add_argument("target", nargs=argparse.REMAINDER, help="URL, or -- COMMAND [ARGS...]")

    s = sub.add_parser("serve", help="run a server defined in FILE.py or module:attr")
    s.add_argument("spec", help="FILE.py or module:attr (attr defaults to the module's Server)")
    s.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="bind address for --http (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="port for --http (default 8000)")

    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(f"mcpkit {__version__}")
        return 0
    if args.cmd == "discover":
        target = list(args.target)
        if target and target[0] == "--":
            target = target[1:]
        if not target:
            d.print_usage(sys.stderr)
            print("mcpkit discover: give a URL or -- COMMAND [ARGS...]", file=sys.stderr)
            return EXIT_USAGE
        from ._discover_cli import run_discover

        return asyncio.run(run_discover(target, as_json=args.json, timeout=args.timeout))
    if args.cmd == "serve":
        out_fd = None
        if not args.http:
            # Before the user's module runs: an import-time print() must not reach the MCP stream.
            from .transports._stdio_main import claim_stdout

            out_fd = claim_stdout()
        try:
            server = load_server(args.spec)
        except (ImportError, OSError, AttributeError, LookupError, TypeError) as exc:
            print(f"mcpkit serve: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if args.http:
            server.run("http", host=args.host, port=args.port)
        else:
            # Nothing of ours runs after the server: skip the interpreter's teardown at EOF.
            server.run(out_fd=out_fd, fast_exit=True)
        return 0
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def load_server(spec: str) -> Any:
    """Find the Server in ``FILE.py`` or ``module[:attr]``."""
    import importlib
    import importlib.util
    import os

    from .server import Server

    attr = None
    if spec.endswith(".py") or os.sep in spec:
        path = spec
        if ":" in spec and not os.path.exists(spec):
            path, attr = spec.rsplit(":", 1)
        if not os.path.exists(path):
            raise OSError(f"no such file: {path}")
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        modspec = importlib.util.spec_from_file_location("_mcpkit_served", path)
        if modspec is None or modspec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(modspec)
        sys.modules["_mcpkit_served"] = module
        modspec.loader.exec_module(module)
    else:
        modname, _, attr = spec.partition(":")
        module = importlib.import_module(modname)
        attr = attr or None
    if attr:
        obj = getattr(module, attr)
        if callable(obj) and not isinstance(obj, Server):
            obj = obj()  # a factory
        if not isinstance(obj, Server):
            raise TypeError(f"{spec} is not an mcpkit Server")
        return obj
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    if len(found) != 1:
        raise LookupError(f"{spec}: expected exactly one mcpkit Server at module level, found {len(found)}; use FILE.py:attr")
    return found[0]


if __name__ == "__main__":
    sys.exit(main())
