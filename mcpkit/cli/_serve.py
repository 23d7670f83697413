"""``mcpkit serve FILE.py|module[:attr]``: run a server over stdio, or Streamable HTTP.

The serve command owns the transport: a server file that calls ``server.run()`` when it is
imported (a common pattern) does not start a second server; that server is served here, with
a note saying so. Failures (no such file, a syntax error, a port out of range or in use) are
one line; Ctrl-C and SIGTERM end with one line too.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _serve_ops
from ._extras import missing_extra
from ._help import HelpFormatter, examples

if TYPE_CHECKING:
    from ..server import Server

PROG = "mcpkit serve"
_CHILD_ENV = "MCPKIT_SERVE_RELOAD_CHILD"


def _port(text: str) -> int | str:
    """The port, or why ``text`` is not one (said in one line by :func:`main`)."""
    try:
        value = int(text)
    except ValueError:
        return f"--port {text!r} is not a port number"
    if not 0 <= value <= 65535:
        return f"--port {value} is out of range (0-65535)"
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Run the mcpkit Server defined in FILE.py or module[:attr] (attr defaults to "
        "the module's one Server; it may also be a function returning one). Over stdio by default; "
        "--http serves Streamable HTTP (both the 2026-07-28 and the 2025-11-25 transports) at /mcp.",
        epilog=examples("mcpkit serve server.py", "mcpkit serve --http --port 9000 app.server:build"),
        formatter_class=HelpFormatter)
    p.add_argument("spec", metavar="FILE.py[:attr] | module[:attr]")
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio (needs mcpkit[http])")
    p.add_argument("--host", help="bind address for --http (default 127.0.0.1)")
    p.add_argument("--port", help="port for --http (default 8000)")
    p.add_argument("--path", help="the endpoint path for --http (default /mcp)")
    p.add_argument("--allowed-host", action="append", metavar="HOST[:PORT]",
                   help="a Host header to accept (repeatable; default: loopback names only)")
    p.add_argument("--allowed-origin", action="append", metavar="ORIGIN",
                   help="an Origin to accept, e.g. https://app.example (repeatable; default: loopback origins)")
    scale = p.add_argument_group("several workers (--http; needs mcpkit[redis])")
    scale.add_argument("--workers", type=int, metavar="N",
                       help="serve on N worker processes sharing the port (above 1 needs --redis)")
    scale.add_argument("--redis", metavar="URL",
                       help="Redis for listen fan-out, tasks and legacy sessions across workers: redis://HOST:PORT/DB "
                            "or redis+sentinel://SENTINEL:PORT[,...]/SERVICE[/DB] (default: $MCPKIT_REDIS_URL)")
    auth = p.add_argument_group("protecting the server (--http; needs mcpkit[oauth])")
    auth.add_argument("--auth-issuer", metavar="URL",
                      help="accept JWT access tokens from this authorization server (keys found via its metadata)")
    auth.add_argument("--auth-audience", metavar="URL",
                      help="the audience tokens must name (default: this server's URL, with the mount path)")
    auth.add_argument("--auth-scope", action="append", metavar="SCOPE",
                      help="a scope every request needs (repeatable); named in the 401/403 challenges")
    auth.add_argument("--auth-introspect", metavar="URL",
                      help="check tokens at this RFC 7662 endpoint instead (client credentials from "
                           "MCPKIT_AUTH_CLIENT_ID and MCPKIT_AUTH_CLIENT_SECRET)")
    auth.add_argument("--auth-no-typ-check", action="store_true",
                      help="accept JWT access tokens whose header lacks typ: at+jwt (RFC 9068 requires it; only for "
                           "issuers that omit it)")
    auth.add_argument("--public-url", metavar="URL",
                      help="the URL clients use, behind a proxy (the protected resource's canonical URL)")
    ops = p.add_argument_group("operating")
    ops.add_argument("--otel", action="store_true",
                     help="OpenTelemetry spans and metrics (needs mcpkit[otel]); without it they are on when "
                          "OpenTelemetry is set up, e.g. under opentelemetry-instrument")
    ops.add_argument("--rate-limit", action="append", metavar="[METHOD[:NAME]:]N/PERIOD", default=[],
                     help="a token bucket per caller, e.g. 100/s, tools/call:10/s, tools/call:search:5/m (repeatable; "
                          "shared through --redis when given)")
    _serve_ops.add_arguments(ops)
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                   help="the event loop: uvloop where it is installed (auto, the default), or asyncio's")
    p.add_argument("--reload", action="store_true",
                   help="for development (with --http): restart when a .py file next to the server changes")
    return p


class _Stop(BaseException):
    """SIGTERM (or SIGINT) while serving."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stopped_line(signum: int) -> None:
    if not os.environ.get(_CHILD_ENV):
        name = signal.Signals(signum).name if signum else "interrupt"
        print(f"{PROG}: stopped ({name})", file=sys.stderr, flush=True)


#: (dest, option) of the options that only mean something with --http
_HTTP_ONLY = (("host", "--host"), ("port", "--port"), ("path", "--path"), ("workers", "--workers"), ("redis", "--redis"),
              ("allowed_host", "--allowed-host"), ("allowed_origin", "--allowed-origin"), ("auth_issuer", "--auth-issuer"),
              ("auth_audience", "--auth-audience"), ("auth_scope", "--auth-scope"),
              ("auth_introspect", "--auth-introspect"), ("auth_no_typ_check", "--auth-no-typ-check"),
              ("public_url", "--public-url"), *_serve_ops.HTTP_ONLY)


def http_options(ns: argparse.Namespace, port: int, auth: Any, public_url: str | None) -> dict[str, Any]:
    """``run_http_server``'s options from ``--host``, ``--path``, ``--allowed-host``,
    ``--allowed-origin`` (``mcpkit serve --http`` and ``mcpkit proxy --http``)."""
    options: dict[str, Any] = {"host": ns.host, "port": port, "path": ns.path, "auth": auth}
    if public_url:
        options["public_url"] = public_url
    if ns.allowed_host:
        options["allowed_hosts"] = ns.allowed_host
    if ns.allowed_origin:
        options["allowed_origins"] = ns.allowed_origin
    return options


def main(argv: list[str]) -> int:
    p = parser()
    ns = p.parse_args(argv)
    if not ns.http:
        given = [opt for dest, opt in _HTTP_ONLY if getattr(ns, dest) not in (None, False)]
        if given:
            said = f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'}"
            print(f"{PROG}: {said} for Streamable HTTP: add --http (without it the server is served over stdio)",
                  file=sys.stderr)
            return 2
    ns.host = ns.host or "127.0.0.1"
    ns.port = ns.port or "8000"
    ns.workers = 1 if ns.workers is None else ns.workers
    ns.redis = ns.redis or os.environ.get("MCPKIT_REDIS_URL") or None
    ns.path = ns.path or "/mcp"
    if not ns.path.startswith("/"):
        ns.path = "/" + ns.path  # --path mcp is /mcp
    port = _port(ns.port)
    if isinstance(port, str):
        print(f"{PROG}: {port}", file=sys.stderr)
        return 2
    ns.port = port
    if ns.reload:
        if not ns.http:
            print(f"{PROG}: --reload needs --http (a stdio server belongs to the one host that started it)",
                  file=sys.stderr)
            return 2
        return _reload(ns, argv)
    if ns.http:
        return _serve_http(ns)
    return _serve_stdio(ns)


# ---------------------------------------------------------------- stdio
def _serve_stdio(ns: argparse.Namespace) -> int:
    # Before the user's module runs: an import-time print() must not reach the MCP stream.
    from ..transports import claim_stdout, run_stdio_server

    out_fd = claim_stdout()

    def on_signal(signum: int, frame: Any) -> None:
        _stopped_line(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        server = _load_or_report(ns.spec)
    except KeyboardInterrupt:
        return 0
    if server is None or not _operate(server, ns, "stdio"):
        return 2
    if sys.stderr.isatty():
        print(startup_line(server, "stdio"), file=sys.stderr)
    signal.signal(signal.SIGINT, on_signal)
    options: dict[str, Any] = {"out_fd": out_fd}
    if ns.loop != "auto":
        options["loop"] = ns.loop
    if _accepts(run_stdio_server, "fast_exit"):
        options["fast_exit"] = True
    from ..errors import LifespanError

    try:
        run_stdio_server(server, **options)
    except LifespanError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def _accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` names the keyword ``name`` (cheaply: no ``inspect`` import)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    return name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


# ---------------------------------------------------------------- http
def _load_planned(ns: argparse.Namespace) -> tuple[Server, Any, str | None] | int:
    """The server file loaded and the auth it is served with (its own, or built from the
    ``--auth-*`` options), with the public URL; or the exit status after one line saying why not."""
    from ._serve_auth import plan_auth

    server = _load_or_report(ns.spec)
    if server is None or not _operate(server, ns, "http"):
        return 2
    plan = plan_auth(ns, server)
    if isinstance(plan, str):
        print(f"{PROG}: {plan}", file=sys.stderr)
        return 2
    return (server, *plan)


def _serve_workers(ns: argparse.Namespace, options: dict[str, Any]) -> int:
    from .._workers import serve_workers

    if ns.auth_issuer or ns.auth_introspect:
        print(f"{PROG}: --auth-* with --workers/--redis is not supported yet; protect each worker with "
              "Server(auth=...) in the server file instead", file=sys.stderr)
        return 2
    if ns.redis:
        try:
            import redis  # noqa: F401
        except ImportError as exc:
            print(f"{PROG}: {missing_extra(exc, '--redis')}", file=sys.stderr)
            return 1
    if ns.workers > 1 and not ns.redis:
        from .._workers import NEEDS_REDIS

        print(f"{PROG}: {NEEDS_REDIS.format(n=ns.workers)}", file=sys.stderr)
        return 2
    # Loaded here too (each worker loads its own): a broken file is one line before any
    # worker starts, and the startup line can say what protects the endpoint.
    loaded = _load_planned(ns)
    if isinstance(loaded, int):
        return loaded
    server, auth, public_url = loaded
    if public_url:
        options["public_url"] = public_url
    where = f"http://{_hostport(ns.host, ns.port)}{ns.path}"
    print(startup_line(server, where, auth), file=sys.stderr, flush=True)
    print(f"{PROG}: {ns.workers} worker(s) on {where}" + (" with Redis" if ns.redis else ""), file=sys.stderr, flush=True)
    return run_workers(PROG, lambda: serve_workers(ns.spec, workers=ns.workers, redis_url=ns.redis,
                                                   operating=_serve_ops.middleware_options(ns), **options,
                                                   **_serve_ops.http_options(ns)))


def run_workers(prog: str, start: Callable[[], None]) -> int:
    """Run ``start()`` (a ``serve_workers`` call) until it returns; its failures as one line
    under ``prog`` and exit status 1, Ctrl-C as the stopped line."""
    try:
        start()
    except ImportError as exc:
        print(f"{prog}: {missing_extra(exc, '--workers/--redis')}", file=sys.stderr)
        return 1
    except (ValueError, RuntimeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if not os.environ.get(_CHILD_ENV):
            print(f"{prog}: stopped (SIGINT)", file=sys.stderr, flush=True)
    return 0


def _serve_http(ns: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        print(f"{PROG}: --http needs the http extra: pip install 'mcpkit[http]'", file=sys.stderr)
        return 1

    def on_signal(signum: int, frame: Any) -> None:
        raise _Stop(signum)

    if ns.workers != 1 or ns.redis:
        if ns.workers < 1:
            print(f"{PROG}: --workers must be at least 1", file=sys.stderr)
            return 2
        shared: dict[str, Any] = {"host": ns.host, "port": ns.port, "path": ns.path}
        if ns.allowed_host:
            shared["allowed_hosts"] = ns.allowed_host
        if ns.allowed_origin:
            shared["allowed_origins"] = ns.allowed_origin
        if ns.loop != "auto":
            shared["loop"] = ns.loop
        return _serve_workers(ns, shared)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        loaded = _load_planned(ns)
        if isinstance(loaded, int):
            return loaded
        server, auth, public_url = loaded
        problem = _check_bind(ns.host, ns.port)
        if problem:
            print(f"{PROG}: cannot listen on {_hostport(ns.host, ns.port)}: {problem}", file=sys.stderr)
            return 1
        from ..transports.http import run_http_server

        options = http_options(ns, ns.port, auth, public_url)
        options.update(_serve_ops.http_options(ns))
        if ns.loop != "auto":
            options["loop"] = ns.loop
        print(startup_line(server, f"http://{_hostport(ns.host, ns.port)}{ns.path}", auth), file=sys.stderr, flush=True)
        from ..errors import LifespanError

        try:
            run_http_server(server, **options)
        except ValueError as exc:  # a configuration the app refuses (said before serving anything)
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
        except LifespanError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
            return 1
    except _Stop as stop:
        _stopped_line(stop.signum)
    except KeyboardInterrupt:
        _stopped_line(signal.SIGINT)
    except SystemExit as exc:  # uvicorn exits 1 when it cannot start
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def startup_line(server: Server, where: str, auth: Any = None) -> str:
    """``serving NAME VERSION on WHERE (ERAS)``; over HTTP the parenthesis also says what guards
    the endpoint: ``OAuth: ISSUER`` or ``unprotected``."""
    eras = "modern + legacy" if getattr(server, "legacy", True) else "modern only"
    if where.startswith(("http://", "https://")):
        from ._serve_auth import protection

        eras += ", " + protection(auth)
    return f"serving {server.name} {server.version} on {where} ({eras})"


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_bind(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (None: it can)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"unknown host ({exc.strerror})"
    family, kind, proto, _name, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        sock.close()
    return None


# ---------------------------------------------------------------- --reload
def _reload(ns: argparse.Namespace, argv: list[str]) -> int:
    """Run the server in a child process; restart it when a watched file changes."""
    import subprocess
    import time

    # -P: a folder named mcpkit in the current directory cannot stand in for mcpkit (the
    # loader adds what a FILE.py or module:attr needs to sys.path itself).
    child_argv = [sys.executable, "-P", "-m", "mcpkit", "serve", *[a for a in argv if a != "--reload"]]
    roots = _watch_roots(ns.spec)
    env = {**os.environ, _CHILD_ENV: "1"}

    def on_signal(signum: int, frame: Any) -> None:
        raise _Stop(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    child: subprocess.Popen[bytes] | None = None
    try:
        while True:
            seen = _snapshot(roots)
            child = subprocess.Popen(child_argv, env=env)
            while _snapshot(roots) == seen:
                time.sleep(0.3)
            changed = _changed(seen, _snapshot(roots))
            print(f"{PROG}: {changed} changed, restarting", file=sys.stderr, flush=True)
            _end(child)
    except _Stop as stop:
        if child is not None:
            _end(child)
        _stopped_line(stop.signum)
    return 0


def _end(child: Any) -> None:
    import subprocess

    if child.poll() is None:
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _watch_roots(spec: str) -> list[str]:
    from ..server import spec_file

    path = spec_file(spec)[0]
    if path is not None:
        return [os.path.dirname(os.path.abspath(path)) or "."]
    return [os.getcwd()]


_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def _snapshot(roots: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
            for name in filenames:
                if name.endswith(".py"):
                    full = os.path.join(dirpath, name)
                    try:
                        out[full] = os.stat(full).st_mtime
                    except OSError:
                        pass
                if len(out) > 5000:
                    return out
    return out


def _changed(before: dict[str, float], after: dict[str, float]) -> str:
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            return os.path.relpath(path)
    return "a file"


def _operate(server: Server, ns: argparse.Namespace, transport: str) -> bool:
    """Telemetry, request logs, rate limits and budgets (see :mod:`mcpkit._operating`); False
    after one line saying why not. Workers install their own (on Redis): here they are only checked."""
    from .._operating import operate

    options = _serve_ops.middleware_options(ns)
    if transport != "stdio" and (ns.redis or ns.workers != 1):
        options["rate_limits"] = []  # each worker counts on Redis; the rules are checked here
        try:
            from ..server.ratelimit import RateLimits

            if ns.rate_limit:
                RateLimits(ns.rate_limit)
        except ValueError as exc:
            print(f"{PROG}: --rate-limit: {exc}", file=sys.stderr)
            return False
    try:
        operate(server, transport, **options)
    except ImportError as exc:
        print(f"{PROG}: --otel: {exc}", file=sys.stderr)
        return False
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return False
    return True


# ---------------------------------------------------------------- finding the server
def _load_or_report(spec: str) -> Server | None:
    """The server, or None after printing one line saying why not."""
    from ..errors import ServerLoadError
    from ..server import load_spec

    try:
        server, ran = load_spec(spec)
    except ServerLoadError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return None
    if ran:
        print(f"{PROG}: {spec} calls server.run() when imported; mcpkit serve runs the server itself "
              "(guard the call with `if __name__ == \"__main__\":`)", file=sys.stderr)
    return server
