"""Running the ``mcpkit`` command line as a user does: ``python -m mcpkit ...`` in a real
subprocess (and, for a few checks, through a console-script-like launcher or with the
``http`` extra hidden), plus ``mcpkit serve --http`` servers whose startup line says where
they listen."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tests.helpers.paths import ROOT, SERVERS, subprocess_env
from tests.helpers.peers import run_install_script
from tests.helpers.servers import free_port

#: The demo behind a bearer-token check (``cli_auth_server.py PORT``; the token is ``s3cret``).
AUTH_SERVER = SERVERS / "cli_auth_server.py"
#: Prints log lines on stdout instead of answering (not an MCP server).
GARBAGE = SERVERS / "cli_garbage.py"

#: ``serving NAME VERSION on URL (ERAS)``: the line ``mcpkit serve`` writes when it starts.
STARTUP = re.compile(r"^serving (\S+) (\S+) on (\S+) \((.+)\)$")

#: Runs ``mcpkit.cli.main`` with httpx and uvicorn made unimportable (the http extra missing).
WITHOUT_HTTP_EXTRA = ("import sys\n"
                      "sys.modules['httpx'] = None\n"
                      "sys.modules['uvicorn'] = None\n"
                      "from mcpkit.cli import main\n"
                      "sys.exit(main(sys.argv[1:]))\n")


def read_pty(master: int, wait: float = 0.1) -> bytes | None:
    """What a pseudo-terminal gives within ``wait`` seconds (b"": nothing yet; None: it is closed)."""
    if not select.select([master], [], [], wait)[0]:
        return b""
    try:
        chunk = os.read(master, 4096)
    except OSError:
        return None
    return chunk or None


def drain_pty(master: int) -> bytes:
    """What a pseudo-terminal still holds: read until nothing comes for 0.1 s, or it is closed."""
    seen = b""
    while chunk := read_pty(master):
        seen += chunk
    return seen


def everything_argv() -> list[str]:
    """npm @modelcontextprotocol/server-everything over stdio (a 2025-11-25 server); fails the
    test when it cannot be installed."""
    import pytest

    proc, out = run_install_script(["everything"])
    node, entry = out.get("PEER_EVERYTHING_NODE"), out.get("PEER_EVERYTHING_BIN")
    if proc.returncode != 0 or not node or not entry or not Path(entry).is_file():
        pytest.fail(f"server-everything is not installed (scripts/install_peers.sh everything):\n{proc.stderr[-2000:]}")
    return [node, entry, "stdio"]


def mcpkit(*args: str | Path, cwd: Path | str = ROOT, timeout: float = 60, input: str | None = "",
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m mcpkit ARGS``: its exit status, stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "mcpkit", *map(str, args)], capture_output=True, text=True,
                          cwd=str(cwd), env=env or subprocess_env(), timeout=timeout, input=input)


def mcpkit_without_http_extra(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_HTTP_EXTRA, *map(str, args)], capture_output=True,
                          text=True, cwd=str(ROOT), env=subprocess_env(), timeout=timeout, input="")


def console_script(tmp: Path) -> Path:
    """A launcher like the ``mcpkit`` console script pip writes (its own directory first on
    ``sys.path``, not the current one)."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "mcpkit"
    script.write_text("import sys\nfrom mcpkit.cli import main\nsys.exit(main())\n")
    return script


class Served:
    """``python -m mcpkit serve --http ... SPEC`` in a subprocess, its stderr read line by line."""

    def __init__(self, *args: str | Path, cwd: Path | str = ROOT, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        argv = [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(self.port), *map(str, args)]
        self.proc = subprocess.Popen(argv, cwd=str(cwd), env=subprocess_env(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.url = ""

    def startup(self, timeout: float = 20.0) -> re.Match[str]:
        """The startup line (and the URL it names, in :attr:`url`)."""
        for _ in range(5):  # lines before it (a note about the served file) are kept in .lines
            line = self.read_line(timeout)
            m = STARTUP.match(line)
            if m:
                break
        assert m, f"no startup line:\n{self.rest()}"
        self.url = m.group(3)
        _wait_listening(self.port, timeout)
        return m

    def read_line(self, timeout: float = 20.0) -> str:
        assert self.proc.stderr is not None
        line = _readline(self.proc.stderr, timeout)
        self.lines.append(line)
        return line.rstrip("\n")

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def finish(self, timeout: float = 15.0) -> tuple[int, str]:
        """Wait for the exit; (status, the rest of stderr)."""
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err

    def rest(self) -> str:
        self.stop()
        err = self.proc.stderr.read() if self.proc.stderr else ""
        return "".join(self.lines) + (err or "")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _readline(stream: IO[str], timeout: float) -> str:
    import threading

    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box:
        raise AssertionError(f"no line within {timeout:g} s")
    return box[0]


def _wait_listening(port: int, timeout: float) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


@contextmanager
def served(*args: str | Path, **kw: Any) -> Iterator[Served]:
    """A started ``mcpkit serve --http`` (startup line read), killed afterwards."""
    srv = Served(*args, **kw)
    try:
        srv.startup()
        yield srv
    finally:
        srv.stop()
