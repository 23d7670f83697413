"""``mcpkit proxy``: re-serve any MCP server, of either era, to clients of both eras.

- ``mcpkit proxy --http [--port P] -- COMMAND [ARGS...]``: a stdio server as a Streamable HTTP endpoint;
- ``mcpkit proxy --http URL``: an HTTP server re-served (era translation, auth in front);
- ``mcpkit proxy URL``: a stdio server forwarding to a remote one (the way desktop hosts,
  which only start stdio servers, reach remote servers), with the OAuth login of ``mcpkit login``;
- ``mcpkit proxy [--http] --config mcp.json``: every server of a host config (``mcpServers`` or
  VS Code's ``servers``) mounted behind one endpoint, each under its name (``Server.mount``).

One startup line names the front, the backend and the backend's era. A backend that cannot be
reached (or never answers ``initialize``) is one line and exit status 1.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from ._target import CliError, add_target_options, resolve_target, split_command

PROG = "mcpkit proxy"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Serve the MCP server TARGET (a URL, FILE.py, or -- COMMAND [ARGS...]) again, "
        "to 2026-07-28 and 2025-11-25 clients alike: over stdio by default, or Streamable HTTP with --http.",
        epilog="examples: mcpkit proxy --http --port 9000 -- npx -y @modelcontextprotocol/server-everything   "
               "mcpkit proxy https://mcp.example.com/mcp")
    p.add_argument("positionals", nargs="*", metavar="TARGET")
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio (needs mcpkit[http])")
    p.add_argument("--host", default="127.0.0.1", help="bind address for --http (default 127.0.0.1)")
    p.add_argument("--port", default="8000", help="port for --http (default 8000)")
    p.add_argument("--path", default="/mcp", help="the endpoint path for --http (default /mcp)")
    p.add_argument("--allowed-host", action="append", metavar="HOST[:PORT]",
                   help="a Host header to accept (repeatable; default: loopback names only)")
    p.add_argument("--allowed-origin", action="append", metavar="ORIGIN",
                   help="an Origin to accept (repeatable; default: loopback origins)")
    p.add_argument("--ttl-ms", type=int, metavar="MS", help="ttlMs for a legacy backend's results (default 0)")
    p.add_argument("--cache-scope", choices=("public", "private"),
                   help="cacheScope for a legacy backend's results (default: private when protected, else public)")
    p.add_argument("--config", metavar="FILE",
                   help="mount every server of this host config (mcpServers or VS Code servers) behind one endpoint, "
                        "each under its name (tools NAME_tool, resources NAME+uri)")
    scale = p.add_argument_group("several workers (--http; needs mcpkit[redis])")
    scale.add_argument("--workers", type=int, default=1, metavar="N",
                       help="serve on N worker processes sharing the port, each with its own backend (above 1 "
                            "needs --redis)")
    scale.add_argument("--redis", metavar="URL", help="Redis for listen fan-out, legacy sessions and the MRTR key "
                       "ring across workers (default: $MCPKIT_REDIS_URL)")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up connecting to the backend after this long (default 10)")
    auth = p.add_argument_group("protecting the front (--http; needs mcpkit[oauth])")
    auth.add_argument("--auth-issuer", metavar="URL", help="accept JWT access tokens from this authorization server")
    auth.add_argument("--auth-audience", metavar="URL", help="the audience tokens must name (default: this URL)")
    auth.add_argument("--auth-scope", action="append", metavar="SCOPE", help="a scope every request needs")
    auth.add_argument("--auth-introspect", metavar="URL", help="check tokens at this RFC 7662 endpoint instead")
    auth.add_argument("--auth-no-typ-check", action="store_true", help="accept JWTs without typ: at+jwt")
    auth.add_argument("--public-url", metavar="URL", help="the URL clients use, behind a reverse proxy")
    add_target_options(p, timeout=600.0)
    return p


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CliError(f"--port {text!r} is not a port number", 2) from None
    if not 0 <= value <= 65535:
        raise CliError(f"--port {value} is out of range (0-65535)", 2)
    return value


class _Stop(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def main(argv: list[str]) -> int:
    before, command = split_command(argv)
    p = parser()
    ns = p.parse_args(before)
    try:
        port = _port(ns.port)
        if ns.config is not None:
            if ns.positionals or command is not None:
                raise CliError("give --config or a TARGET, not both", 2)
            target: Any = None
        else:
            target = resolve_target(list(ns.positionals), command, ns)
        if not ns.http and (ns.auth_issuer or ns.auth_introspect):
            raise CliError("--auth-* protects an HTTP front: add --http (stdio is never authenticated)", 2)
    except CliError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.code
    out_fd = None
    if not ns.http:
        from ..transports import claim_stdout

        out_fd = claim_stdout()  # nothing but MCP may reach our stdout from here on
    return _run(ns, target, port, out_fd)


def _run(ns: argparse.Namespace, target: Any, port: int, out_fd: int | None) -> int:
    from ..errors import MCPError, TransportError
    from ..proxy import proxy
    from ._target import describe_error

    if target is None:
        return _run_config(ns, port, out_fd)

    options: dict[str, Any] = {"connect_timeout": ns.connect_timeout, "call_timeout": target.timeout,
                               "ttl_ms": ns.ttl_ms, "cache_scope": ns.cache_scope, "label": target.label}
    if target.url is not None:
        from ._target import require_http_extra

        try:
            require_http_extra()
            client_auth = target.auth()
        except CliError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        backend: Any = target.url
        if target.headers:
            options["headers"] = target.headers
        if client_auth is not None:
            options["client_auth"] = client_auth
    else:
        backend = target.argv
        if target.headers or target.bearer:
            print(f"{PROG}: --header and --bearer are for http(s) URLs; use -e KEY=VAL for a stdio server",
                  file=sys.stderr)
            return 2
        if target.env:
            import os

            options["env"] = {**os.environ, **target.env}
    plan = _plan_auth(ns, target.label)
    if isinstance(plan, int):
        return plan
    auth, public_url = plan
    if ns.http:
        options["auth"] = auth
    if ns.workers != 1 or ns.redis:
        return _run_workers(ns, backend, options, port)
    try:
        server = proxy(backend, **options)
    except (MCPError, TransportError, OSError, ValueError, TimeoutError) as exc:
        print(f"{PROG}: {target.label}: {describe_error(exc, ns.connect_timeout)}", file=sys.stderr)
        return 1
    try:
        return _serve(ns, server, port, auth, public_url, out_fd, runner=server.runner())
    finally:
        server.close()


def _run_workers(ns: argparse.Namespace, backend: Any, options: dict[str, Any], port: int) -> int:
    """``--workers N --redis URL``: the workers machinery of ``mcpkit serve``, each worker
    with its own backend connection (a stdio backend runs once per worker)."""
    import os

    from .._workers import NEEDS_REDIS, serve_workers
    from ._serve import _hostport, run_workers

    if not ns.http:
        print(f"{PROG}: --workers and --redis are for an HTTP front: add --http", file=sys.stderr)
        return 2
    if ns.workers < 1:
        print(f"{PROG}: --workers must be at least 1", file=sys.stderr)
        return 2
    redis_url = ns.redis or os.environ.get("MCPKIT_REDIS_URL")
    if ns.workers > 1 and not redis_url:
        print(f"{PROG}: {NEEDS_REDIS.format(n=ns.workers)}", file=sys.stderr)
        return 2
    if options.get("auth") is not None or options.get("client_auth") is not None:
        print(f"{PROG}: --auth-* and an OAuth login for the backend are not supported with --workers yet; "
              "use --bearer/--header for the backend, or one worker", file=sys.stderr)
        return 2
    options.pop("auth", None)
    app: dict[str, Any] = {}
    if ns.allowed_host:
        app["allowed_hosts"] = ns.allowed_host
    if ns.allowed_origin:
        app["allowed_origins"] = ns.allowed_origin
    where = f"http://{_hostport(ns.host, port)}{ns.path}"
    print(f"{PROG}: {ns.workers} worker(s) on {where}" + (" with Redis" if redis_url else "") +
          f", each with its own backend: {options.get('label') or backend}", file=sys.stderr, flush=True)
    return run_workers(PROG, lambda: serve_workers("", workers=ns.workers, redis_url=redis_url, host=ns.host,
                                                   port=port, path=ns.path,
                                                   proxy={"target": backend, "options": options}, **app))


def _plan_auth(ns: argparse.Namespace, spec: str) -> tuple[Any, str | None] | int:
    """(auth, public URL) for ``--http`` from the auth options ((None, None) without
    ``--http``), or the exit code of a plan that cannot work (said on stderr)."""
    if not ns.http:
        return None, None
    from ._serve_auth import plan_auth

    ns.spec = spec
    plan = plan_auth(ns, None)
    if isinstance(plan, str):
        print(f"{PROG}: {plan}", file=sys.stderr)
        return 2
    return plan


def _prefix(name: str) -> str:
    """A config entry's name as a mount prefix (a letter, then letters, digits, '-')."""
    import re

    out = re.sub(r"[^A-Za-z0-9-]", "-", name)
    return out if out[:1].isalpha() else f"s-{out}"


def _run_config(ns: argparse.Namespace, port: int, out_fd: int | None) -> int:
    import os

    from ..server import Server
    from ._hosts import load_json
    from ._scan import entry_target, servers_in

    try:
        entries = servers_in(load_json(ns.config))
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {ns.config}: {exc}", file=sys.stderr)
        return 2
    if not entries:
        print(f"{PROG}: {ns.config}: no servers (neither mcpServers nor servers)", file=sys.stderr)
        return 2
    plan = _plan_auth(ns, ns.config)
    if isinstance(plan, int):
        return plan
    auth, public_url = plan
    host = Server("mcpkit-proxy", auth=auth)
    mounts = []
    for name, entry in entries.items():
        target = entry_target(entry, ns)
        prefix = _prefix(name)
        if isinstance(target, str):
            print(f"{PROG}: {name}: skipped: {target}", file=sys.stderr)
            continue
        options: dict[str, Any] = {"connect_timeout": ns.connect_timeout, "call_timeout": ns.timeout,
                                   "ttl_ms": ns.ttl_ms, "cache_scope": ns.cache_scope, "label": name}
        if target.url is not None:
            backend: Any = target.url
            if target.headers:
                options["headers"] = target.headers
        else:
            backend = target.argv
            options["env"] = {**os.environ, **target.env}
            options["stderr"] = sys.stderr
        mounts.append(host.mount(prefix, backend, **options))
    if not mounts:
        print(f"{PROG}: {ns.config}: no server could be mounted", file=sys.stderr)
        return 1
    parts = ", ".join(f"{m.prefix} ({m.backend.era} {m.backend.version})" if m.error is None
                      else f"{m.prefix} (unavailable: {m.error})" for m in mounts)
    every = mounts[0].mounts
    try:  # served on the mounts' loop: no thread hop per forwarded call
        return _serve(ns, host, port, auth, public_url, out_fd, lambda where: config_line(host, where, auth, parts),
                      runner=every.runner())
    finally:
        every.close()


def config_line(server: Any, where: str, auth: Any, parts: str) -> str:
    from ._serve import startup_line as serving

    return f"{PROG}: {serving(server, where, auth)} mounting {parts}"


def startup_line(server: Any, where: str, auth: Any = None) -> str:
    from ._serve import startup_line as serving

    b = server.backend
    kind = "HTTP" if isinstance(b.target, str) else "stdio"
    return f"{PROG}: {serving(server, where, auth)} for {b.label} ({b.era} {b.version} backend over {kind})"


def _serve(ns: argparse.Namespace, server: Any, port: int, auth: Any, public_url: str | None,
           out_fd: int | None, line: Any = None, runner: Any = None) -> int:
    if line is None:
        def line(where: str) -> str:
            return startup_line(server, where, auth)

    def on_signal(signum: int, frame: Any) -> None:
        raise _Stop(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    from ..observability import auto_instrument

    auto_instrument(server, "http" if ns.http else "stdio")  # spans when OpenTelemetry is set up (else nothing)
    try:
        if not ns.http:
            from ..transports import run_stdio_server

            print(line("stdio"), file=sys.stderr, flush=True)
            run_stdio_server(server, out_fd=out_fd, runner=runner)
            return 0
        from ..transports.http import run_http_server
        from ._serve import _hostport, http_options

        options = http_options(ns, port, auth, public_url)
        options["runner"] = runner
        print(line(f"http://{_hostport(ns.host, port)}{ns.path}"), file=sys.stderr, flush=True)
        try:
            run_http_server(server, **options)
        except ValueError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
    except (_Stop, KeyboardInterrupt) as stop:
        signum = stop.signum if isinstance(stop, _Stop) else signal.SIGINT
        print(f"{PROG}: stopped ({signal.Signals(signum).name})", file=sys.stderr, flush=True)
    except SystemExit as exc:  # uvicorn exits 1 when it cannot start
        return exc.code if isinstance(exc.code, int) else 1
    return 0
