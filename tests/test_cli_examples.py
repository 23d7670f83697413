"""The examples run as their docstrings say (real subprocesses), and the CLI drives them."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.cli import mcpkit, served
from tests.helpers.paths import ROOT, subprocess_env

EXAMPLES = ROOT / "examples"


def run_example(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env=subprocess_env(), timeout=timeout)


def test_client_with_elicitation_and_sampling_handlers():
    proc = run_example(str(EXAMPLES / "client_handlers.py"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("funny caption: A garden that mows itself. Almost.") == 2
    assert "task input_required" in out and "task completed" in out
    assert "rendered 'garden' in 3 frames" in out


def test_client_handlers_over_http():
    with served(EXAMPLES / "tasks_server.py") as srv:
        proc = run_example(str(EXAMPLES / "client_handlers.py"), srv.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("funny caption:") == 2


def test_live_resources_watch():
    proc = run_example(str(EXAMPLES / "live_resources.py"), "--watch")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(ln.startswith("notifications/resources/updated: tick") for ln in lines) >= 2
    assert any("list_changed" in ln and "notes://groceries" in ln for ln in lines)


def test_cli_runs_a_task_of_the_tasks_example():
    proc = mcpkit("call", "--task", "render", "scene=garden", "frames=2", EXAMPLES / "tasks_server.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "rendered 'garden' in 2 frames\n"


def test_cli_lists_the_live_resources_example():
    proc = mcpkit("list", "resources", EXAMPLES / "live_resources.py")
    assert proc.returncode == 0, proc.stderr
    assert "clock://now  [text/plain]" in proc.stdout and "notes://welcome" in proc.stdout
