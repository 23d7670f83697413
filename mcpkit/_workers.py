"""Serve one server on N worker processes sharing one listening socket (``mcpkit serve --workers N``).

The parent binds the port (one ``SO_REUSEPORT`` socket per worker where the OS has it, see
:func:`listening_sockets`), settles the MRTR key ring once (configured keys, else the ring
kept in Redis, so every worker on every machine seals and opens the same ``requestState``)
and starts N children (``python -m mcpkit._workers``) that inherit the sockets. Each child
loads the server, backs it with Redis (listen fan-out, tasks, legacy sessions) and serves.
The parent restarts a child that dies and stops them all on SIGINT/SIGTERM.

Without Redis, more than one worker would answer wrongly (a change on one worker would not
reach listeners on another, a task or a session would be unknown on the next request), so
``workers > 1`` without a Redis URL is refused.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

NEEDS_REDIS = ("--workers {n} needs Redis: with several workers, listen streams, tasks and legacy sessions must be "
               "shared between them, and without a shared store they would get wrong answers. "
               "Pass --redis redis://HOST:PORT (or set MCPKIT_REDIS_URL), or run one worker.")


def serve_workers(spec: str, *, workers: int = 1, redis_url: str | None = None, host: str = "127.0.0.1",
                  port: int = 8000, path: str = "/mcp", log_level: str = "warning", otel: bool = False,
                  rate_limits: list[str] | None = None, operating: dict[str, Any] | None = None,
                  proxy: dict[str, Any] | None = None,
                  **app_options: Any) -> None:
    """Serve the server in ``spec`` (``FILE.py[:attr]`` or ``module[:attr]``) over HTTP on
    ``workers`` processes sharing one socket, backed by Redis at ``redis_url`` (default:
    ``MCPKIT_REDIS_URL``). Blocks until SIGINT/SIGTERM.

    Raises ValueError when ``workers > 1`` without Redis (the message says why and what to do).
    ``app_options`` go to the ASGI app (``allowed_hosts``, ``session_idle_timeout``,
    ``public_url``...) and must be JSON-serialisable. The server's own ``Server(auth=...)``
    protects every worker; its audience is the bound address unless it names ``resource=``
    (a wildcard ``host`` needs ``resource=`` or ``public_url``). ``operating``: the options of
    :func:`mcpkit._operating.operate` (request logs, budgets...; ``otel`` and ``rate_limits``
    too). A worker that dies is replaced; when they keep dying as soon
    as they start (a broken server file), RuntimeError is raised once they are all stopped.

    ``proxy``: serve :func:`mcpkit.proxy.proxy` ``(proxy["target"], **proxy["options"])``
    instead of ``spec`` (``mcpkit proxy --workers``): each worker connects its own backend
    (a stdio backend runs once per worker) and serves its front on the backend's loop.
    """
    redis_url = redis_url or os.environ.get("MCPKIT_REDIS_URL") or None
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if workers > 1 and not redis_url:
        raise ValueError(NEEDS_REDIS.format(n=workers))
    ops = {"otel": otel, "rate_limits": list(rate_limits or ()), **(operating or {})}
    config = {"spec": spec, "redis_url": redis_url, "path": path, "log_level": log_level, "app_options": app_options,
              "operating": ops, "proxy": proxy}
    try:
        json.dumps(config)
    except TypeError as exc:
        raise ValueError(f"app_options must be JSON-serialisable to reach the workers: {exc}") from None
    env = dict(os.environ)
    if redis_url and not env.get("MCPKIT_STATE_KEYS"):
        from .backends.redis import shared_state_keys

        try:
            env["MCPKIT_STATE_KEYS"] = ",".join(shared_state_keys(redis_url))
        except Exception as exc:
            raise ValueError(f"cannot reach Redis at {redis_url}: {exc}") from None
    if env.get("MCPKIT_STATE_KEYS"):
        from .server import parse_state_keys

        parse_state_keys(env["MCPKIT_STATE_KEYS"])  # a weak key: WeakKeyError (a ValueError), one line
    if workers == 1:
        os.environ.update(env)
        _serve(config, sockets=None, host=host, port=port)
        return
    _Supervisor(listening_sockets(host, port, workers), config, env).run()


def listening_sockets(host: str, port: int, n: int) -> list[socket.socket]:
    """The workers' listening sockets, all on one port, made here so that workers (and their
    replacements) inherit them and no connection is refused while one restarts.

    Where the OS has ``SO_REUSEPORT`` (Linux, BSDs) each worker gets its own socket on the
    shared port and the kernel spreads new connections evenly over them; with one socket
    shared by all, the worker that wakes first accepts a whole burst of connections (asyncio
    and libuv accept in a loop), which leaves the other workers idle. Elsewhere: one socket.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    reuse_port = hasattr(socket, "SO_REUSEPORT") and sys.platform != "win32"
    if not reuse_port:
        sock = socket.create_server((host, port), family=family, backlog=2048)
        sock.set_inheritable(True)
        return [sock] * n
    socks: list[socket.socket] = []
    for _ in range(n):
        sock = socket.create_server((host, port), family=family, backlog=2048, reuse_port=True)
        port = sock.getsockname()[1]  # port 0: the others join the port the first one got
        sock.set_inheritable(True)
        socks.append(sock)
    return socks


#: A worker that dies sooner than this after starting counts towards giving up.
STARTUP_GRACE = 3.0


class _Supervisor:
    def __init__(self, socks: list[socket.socket], config: dict[str, Any], env: dict[str, str]) -> None:
        self.socks = socks
        self.config = json.dumps(config)
        self.env = env
        #: pid -> (process, index of its socket, when it started)
        self.children: dict[int, tuple[subprocess.Popen[bytes], int, float]] = {}
        self.stopping = False
        #: Workers in a row that died within STARTUP_GRACE of starting (a broken server file...).
        self.early_deaths = 0

    def spawn(self, index: int) -> None:
        fd = self.socks[index].fileno()
        argv = [sys.executable, "-m", "mcpkit._workers", str(fd), self.config]
        # Its own session: Ctrl-C reaches the parent only, which stops the workers in order.
        proc = subprocess.Popen(argv, pass_fds=(fd,), env=self.env, start_new_session=True)
        self.children[proc.pid] = (proc, index, time.monotonic())

    def stop(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        for proc, _index, _started in self.children.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    def run(self) -> None:
        failed = False
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        for index in range(len(self.socks)):
            self.spawn(index)
        try:
            while self.children:
                try:
                    pid, status = os.wait()
                except ChildProcessError:
                    break
                except InterruptedError:
                    continue
                child = self.children.pop(pid, None)
                if child is None:
                    continue
                proc, index, started = child
                proc.returncode = os.waitstatus_to_exitcode(status)
                if self.stopping:
                    continue
                self.early_deaths = self.early_deaths + 1 if time.monotonic() - started < STARTUP_GRACE else 0
                if self.early_deaths > len(self.socks) + 1:
                    self.stop(signal.SIGTERM, None)
                    failed = True
                    continue
                print(f"mcpkit: worker {pid} exited ({proc.returncode}); starting another", file=sys.stderr)
                time.sleep(0.2)
                self.spawn(index)
        finally:
            for sock in set(self.socks):
                sock.close()
        if failed:
            raise RuntimeError("the workers exit as soon as they start (their errors are above); not restarting them")


def _serve(config: dict[str, Any], *, sockets: list[socket.socket] | None, host: str = "127.0.0.1",
           port: int = 8000) -> None:
    from .server import load_server

    # run_http_server applies the server's own auth (Server(auth=...)), with the audience fixed
    # from the socket the worker serves (or app_options["public_url"]).
    proxied = config.get("proxy")
    server: Any
    if proxied:
        from .proxy import proxy

        server = proxy(proxied["target"], **proxied.get("options", {}))
        runner = server.runner()
    else:
        server = load_server(config["spec"])
        runner = None
    try:
        _serve_loaded(server, config, sockets=sockets, host=host, port=port, runner=runner)
    finally:
        if proxied:
            server.close()


def _serve_loaded(server: Any, config: dict[str, Any], *, sockets: list[socket.socket] | None, host: str, port: int,
                  runner: Any) -> None:
    from ._operating import operate
    from .transports.http import run_http_server

    on_shutdown = None
    store = None
    if config.get("redis_url"):
        from .backends.redis import RedisBackend

        backend = RedisBackend(config["redis_url"])
        backend.install(server)
        if config.get("proxy"):  # a legacy backend's MRTR retry relayed to the worker holding it
            server.relay_through(backend.node)
        on_shutdown = backend.aclose
        store = backend.rate_buckets
    operate(server, "http", rate_store=store, **config.get("operating", {}))
    run_http_server(server, host=host, port=port, path=config["path"], log_level=config["log_level"],
                    sockets=sockets, on_shutdown=on_shutdown, runner=runner, **config["app_options"])


def _worker_main(argv: list[str]) -> None:
    """A child: serve on the inherited socket ``argv[0]`` with the JSON config ``argv[1]``."""
    fd, config = int(argv[0]), json.loads(argv[1])
    sock = socket.socket(fileno=fd)
    from .errors import LifespanError, ServerLoadError, TransportError

    try:
        _serve(config, sockets=[sock])
    except (ServerLoadError, ValueError, LifespanError, TransportError) as exc:  # a broken file, a failed
        # lifespan, a backend that is down: one line
        print(f"mcpkit: worker {os.getpid()}: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
