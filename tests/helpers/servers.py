"""Where an HTTP server under test lives: a real uvicorn (or other) server in a subprocess on a
free loopback port, or mcpkit's ASGI app in this process behind ``httpx.ASGITransport``.

In-process is for app-level checks (status codes, headers, JSON-RPC and SSE bodies): the
transport buffers a streaming response until it ends, and there is no socket, so tests that
need real streaming, disconnects, keep-alives or timing use a subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.paths import ROOT, serve_argv, subprocess_env

#: The base URL of in-process apps (any loopback Host passes mcpkit's default allow-list).
ASGI_BASE = "http://127.0.0.1:8000"
ASGI_URL = ASGI_BASE + "/mcp"

ArgvForPort = Callable[[int], list[str]]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mcpkit_serve_argv(spec: str | Path) -> ArgvForPort:
    """``python -m mcpkit serve --http --port PORT SPEC`` (uvicorn, as users run it)."""
    return lambda port: serve_argv(spec, port=port)


# ---------------------------------------------------------------- subprocess servers
class ServerProcess:
    """An HTTP server subprocess: ``argv_for_port(port)`` on a free loopback port, its stdout and
    stderr kept in a temporary file (see :meth:`output`)."""

    def __init__(self, argv_for_port: ArgvForPort, *, env: dict[str, str] | Callable[[int], dict[str, str]] | None = None,
                 cwd: Path | str = ROOT, path: str = "/mcp") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self._out = tempfile.TemporaryFile()
        env = env(self.port) if callable(env) else env
        self.proc = subprocess.Popen(argv_for_port(self.port), cwd=str(cwd), env=env or subprocess_env(),
                                     stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def wait_ready(self, timeout: float = 15.0) -> bool:
        """True once the server answers HTTP at all (a 405 for GET is an answer); False if it exits
        or stays silent for ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                httpx.get(self.url, timeout=1.0, trust_env=False)
                return True
            except httpx.TransportError:
                time.sleep(0.05)
        return False

    def output(self, lines: int = 40) -> str:
        """The last ``lines`` lines the server wrote (stdout and stderr)."""
        with contextlib.suppress(OSError, ValueError):
            self._out.flush()
            self._out.seek(0)
            return "\n".join(self._out.read().decode(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


@contextlib.contextmanager
def running_server(argv_for_port: ArgvForPort, *, timeout: float = 15.0, attempts: int = 3,
                   **kw: Any) -> Iterator[str]:
    """Start ``argv_for_port(port)`` and yield ``http://127.0.0.1:PORT/mcp`` once it answers; FAIL
    the test (never skip) when it does not start. Options as :class:`ServerProcess`."""
    output = ""
    for _attempt in range(attempts):  # a free port can be taken between probing and binding
        srv = ServerProcess(argv_for_port, **kw)
        if srv.wait_ready(timeout):
            try:
                yield srv.url
            finally:
                srv.stop()
            return
        output = srv.output()
        srv.stop()
    pytest.fail(f"the HTTP server {' '.join(argv_for_port(0)[1:])} did not start:\n{output}", pytrace=False)


# ---------------------------------------------------------------- in-process apps
class AsgiBridge(httpx.BaseTransport):
    """A synchronous httpx transport that runs ``httpx.ASGITransport(app)`` on a private event
    loop, so the same (synchronous) test bodies run against an in-process app or a real server.

    The loop lives as long as the client: state the app keeps between requests (legacy
    sessions, their tasks) stays on one loop. A chunked request body reaches the app chunk by
    chunk; the response is read whole (ASGITransport buffers it anyway).
    """

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.inner = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        chunks = [bytes(c) for c in request.stream]  # type: ignore[union-attr]

        async def body() -> Any:
            for chunk in chunks:
                yield chunk

        async def exchange() -> tuple[httpx.Response, bytes]:
            areq = httpx.Request(request.method, request.url, headers=request.headers, content=body(),
                                 extensions=request.extensions)
            resp = await self.inner.handle_async_request(areq)
            return resp, await resp.aread()

        resp, content = self.loop.run_until_complete(exchange())
        return httpx.Response(resp.status_code, headers=resp.headers, stream=httpx.ByteStream(content),
                              extensions=resp.extensions, request=request)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


@contextlib.contextmanager
def asgi_client(app: Any, *, base_url: str = ASGI_BASE, timeout: float = 10.0) -> Iterator[httpx.Client]:
    """An ``httpx.Client`` whose requests go to the ASGI ``app`` in this process."""
    with httpx.Client(transport=AsgiBridge(app), base_url=base_url, timeout=timeout) as client:
        yield client
