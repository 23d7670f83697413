"""The official conformance harness, run against conformance/everything_server.py.

Each leg installs Node 22 and the harness from npm on first use (cached), starts the
fixture server on a free loopback port, and fails on any check not in its baseline file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run(["bash", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("leg", ["requirements", "suite"])
def test_server_leg_2026_07_28(leg: str) -> None:
    proc = _run("conformance/run_server_legs.sh", leg)
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance server leg {leg!r} failed:\n{out[-6000:]}"
    if leg == "requirements":
        assert "scored for requirements 2026-07-28: 37 passed, 0 failed" in out
