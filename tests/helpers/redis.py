"""A real ``redis-server`` for a test: its own loopback port and temporary directory, no
persistence; stop and start it again (same port) to test outages."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers.paths import SCRIPTS
from tests.helpers.servers import ArgvForPort, free_port


def system_binary(name: str) -> str:
    """The path of a Debian-packaged binary, installing the packages once when missing
    (``scripts/install_system_deps.sh``); FAIL the test when it cannot be had."""
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if Path(p).exists()), None)
    if found is None:
        subprocess.run(["bash", str(SCRIPTS / "install_system_deps.sh")], check=False)
        found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}",) if Path(p).exists()), None)
    if found is None:
        pytest.fail(f"{name} is not installed and scripts/install_system_deps.sh could not install it", pytrace=False)
    return found


class RedisServer:
    def __init__(self) -> None:
        self.binary = system_binary("redis-server")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="mcpkit-redis-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--daemonize", "no", "--logfile", str(Path(self.dir) / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ping():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(f"redis-server did not start on port {self.port}", pytrace=False)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def command(self, *args: str) -> bytes:
        """One raw command, for checks (inline protocol)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as s:
            s.sendall((" ".join(args) + "\r\n").encode())
            return s.recv(65536)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def workers_argv(spec: str | Path, *, workers: int, redis_url: str | None, **options: object) -> ArgvForPort:
    """``serve_workers(spec, workers=N, redis_url=URL, port=PORT)`` in a child Python (what
    ``mcpkit serve --http --workers N --redis URL`` runs)."""
    def argv(port: int) -> list[str]:
        call = (f"from mcpkit._workers import serve_workers; "
                f"serve_workers({str(spec)!r}, workers={workers}, redis_url={redis_url!r}, port={port}, **{options!r})")
        return [sys.executable, "-c", call]
    return argv


def serving_pids(port: int) -> set[int]:
    """The processes holding established server-side connections on ``port`` (from ``ss``)."""
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=False).stdout
    return {int(m) for m in re.findall(r"pid=(\d+)", out)}
