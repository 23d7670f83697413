"""``mcpkit scan`` and project configs: a checkout's ``.mcp.json``, ``.cursor/mcp.json`` and
``.vscode/mcp.json`` are listed, not run (nor connected to), unless ``--trust-project`` or a
yes at the terminal says so; the user's own configs are probed as before. Every run is a real
``python -m mcpkit scan`` subprocess with HOME and the XDG/APPDATA directories pointed at an
empty directory, so the machine's own configs play no part."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.cli import mcpkit, read_pty
from tests.helpers.paths import DEMO, subprocess_env

NOT_STARTED = "not started: project config (pass --trust-project to run it)"
NOT_PROBED = "not probed: project config (pass --trust-project to connect to it)"


def _env(home: Path) -> dict[str, str]:
    return subprocess_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), APPDATA=str(home / "AppData"))


def _project(tmp_path: Path, where: str = ".mcp.json", servers: dict | None = None) -> tuple[Path, Path, Path]:
    """(project dir, empty home, MARKER path) with a config at ``where`` naming ``sh -c 'touch MARKER'``."""
    project, home = tmp_path / "checkout", tmp_path / "home"
    home.mkdir()
    config = project / where
    config.parent.mkdir(parents=True, exist_ok=True)
    marker = project / "MARKER"
    key = "servers" if where.startswith(".vscode") else "mcpServers"
    config.write_text(json.dumps({key: servers or {"evil": {"command": "sh", "args": ["-c", f"touch {marker}"]}}}))
    return project, home, marker


@pytest.mark.parametrize("where", [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json"])
def test_a_project_stdio_entry_is_listed_not_started(tmp_path, where):
    project, home, marker = _project(tmp_path, where)
    proc = mcpkit("scan", cwd=project, env=_env(home))
    time.sleep(0.3)  # a started `sh -c touch` would be done by now
    assert not marker.exists(), "scan ran the project's command"
    assert proc.returncode == 0, proc.stderr
    assert f"evil: {NOT_STARTED}" in proc.stdout
    assert "touch" in proc.stdout  # what it would have run is shown
    rows = json.loads(mcpkit("scan", "--json", cwd=project, env=_env(home)).stdout)["servers"]
    assert rows[0]["name"] == "evil" and rows[0]["skipped"] == NOT_STARTED and rows[0]["error"] is None
    assert rows[0]["transport"] == "stdio" and rows[0]["era"] is None
    assert not marker.exists()


def test_trust_project_runs_it(tmp_path):
    project, home, marker = _project(tmp_path)
    proc = mcpkit("scan", "--trust-project", cwd=project, env=_env(home))
    assert marker.exists(), proc.stdout + proc.stderr
    assert NOT_STARTED not in proc.stdout
    assert proc.returncode == 1  # `sh -c touch` is no MCP server: a failure row


def test_a_config_file_given_that_is_a_project_config_is_not_started_either(tmp_path):
    project, home, marker = _project(tmp_path)
    proc = mcpkit("scan", project / ".mcp.json", cwd=tmp_path, env=_env(home))
    assert not marker.exists()
    assert f"evil: {NOT_STARTED}" in proc.stdout
    mcpkit("scan", "--trust-project", project / ".mcp.json", cwd=tmp_path, env=_env(home))
    assert marker.exists()


def test_the_users_own_configs_run_as_before(tmp_path):
    project, home, marker = _project(tmp_path)
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"mine": {"command": sys.executable, "args": [str(DEMO)]}}}))
    proc = mcpkit("scan", "--json", cwd=project, env=_env(home))
    rows = {r["name"]: r for r in json.loads(proc.stdout)["servers"]}
    assert rows["mine"]["era"] == "modern" and rows["mine"]["skipped"] is None
    assert rows["evil"]["skipped"] == NOT_STARTED
    assert not marker.exists()
    # Scanning from home: home's .cursor/mcp.json is the user's config, not a project's.
    again = json.loads(mcpkit("scan", "--json", cwd=home, env=_env(home)).stdout)["servers"]
    assert [(r["name"], r["skipped"]) for r in again] == [("mine", None)]


class _Listener:
    """A real TCP listener on 127.0.0.1 that counts the connections it gets."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def test_a_project_http_entry_is_not_connected_to(tmp_path):
    listener = _Listener()
    try:
        url = f"http://127.0.0.1:{listener.port}/mcp"
        project, home, _marker = _project(tmp_path, servers={"internal": {"url": url}})
        proc = mcpkit("scan", cwd=project, env=_env(home))
        assert proc.returncode == 0, proc.stderr
        assert f"internal: {NOT_PROBED}" in proc.stdout and url in proc.stdout
        time.sleep(0.3)
        assert listener.connections == 0
        mcpkit("scan", "--timeout", "3", "--trust-project", cwd=project, env=_env(home))
        deadline = time.monotonic() + 5
        while listener.connections == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.connections > 0
    finally:
        listener.close()


def _scan_on_a_terminal(cwd: Path, env: dict[str, str], reply: str | None, timeout: float = 30) -> tuple[int, str]:
    """``mcpkit scan`` with stdin, stdout and stderr on a pseudo-terminal; ``reply`` is typed
    after the question (None: expect no question). (status, everything on the terminal)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "scan"], stdin=slave, stdout=slave, stderr=slave,
                            cwd=cwd, env=env, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        asked = False
        while proc.poll() is None or select.select([master], [], [], 0.1)[0]:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            chunk = read_pty(master)
            if chunk is None:
                break
            seen += chunk
            if reply is not None and not asked and b"[y/N]" in seen:
                os.write(master, reply.encode() + b"\n")
                asked = True
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, seen.decode(errors="replace")


def test_on_a_terminal_it_asks_once_default_no(tmp_path):
    project, home, marker = _project(tmp_path)
    code, text = _scan_on_a_terminal(project, _env(home), "")
    assert "is a project config" in text and "touch" in text and text.count("[y/N]") == 1
    assert not marker.exists()
    assert NOT_STARTED in text
    code, text = _scan_on_a_terminal(project, _env(home), "n")
    assert not marker.exists()
    code, text = _scan_on_a_terminal(project, _env(home), "y")
    assert marker.exists(), text


def test_not_on_a_terminal_nothing_is_asked(tmp_path):
    project, home, marker = _project(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "scan"], capture_output=True, text=True, cwd=project,
                          env=_env(home), input="y\n", timeout=60)
    assert "[y/N]" not in proc.stderr
    assert not marker.exists()
