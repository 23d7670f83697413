"""Running a peer SDK's script (Python or node) that prints one JSON report line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import INSTALL_PEERS, ROOT


def tail(text: str | bytes | None, n: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-n:])


def run_peer_json(argv: list[str], *, cwd: Path, timeout: float, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` (a peer's interpreter and script) and return its last JSON line."""
    # The peer must not see our interpreter's paths, and must reach loopback directly.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "NODE_OPTIONS")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra_env or {})
    name = " ".join(Path(a).name for a in argv[:3])
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"peer {name} did not finish in {timeout} s\n{tail(exc.stderr)}", pytrace=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"peer {name} exited {proc.returncode} without a report\n"
                    f"stdout: {tail(proc.stdout)}\nstderr: {tail(proc.stderr)}", pytrace=False)
    out = json.loads(lines[-1])
    out["_stderr"] = proc.stderr[-4000:]
    return out


def run_install_script(names: list[str], *, timeout: float = 900) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """Run ``scripts/install_peers.sh NAMES``: (the finished process, its ``KEY=value`` lines).
    Raises ``subprocess.TimeoutExpired`` (and OSError) as ``subprocess.run`` does."""
    proc = subprocess.run(["bash", str(INSTALL_PEERS), *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return proc, dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def install_peers(names: list[str], keys: tuple[str, ...], what: str, *, timeout: float = 900) -> dict[str, str]:
    """Run ``scripts/install_peers.sh NAMES`` (cached) and return its ``KEY=value`` lines.

    FAILS, never skips, when the peers cannot be installed: CI installs them.
    """
    cmd = " ".join(["scripts/install_peers.sh", *names])
    try:
        proc, where = run_install_script(names, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{cmd} did not finish in {timeout} s (package registry unreachable or very slow?)\n"
                    f"{tail(exc.stderr)}", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"could not install {what}: {cmd} exited {proc.returncode}. Are PyPI and the npm registry "
                    f"reachable?\n{tail(proc.stderr)}", pytrace=False)
    for key in keys:
        if not where.get(key):
            pytest.fail(f"{cmd} printed no {key}=...; stdout was:\n{proc.stdout}", pytrace=False)
    return where


def no_peer_error(out: dict[str, Any], where: str) -> None:
    """FAIL with the peer's own account (step, error, traceback, stderr) when its report has an error."""
    err = out.get("error")
    if err:
        detail = err.get("traceback") or err.get("stack") or ""
        pytest.fail(f"{out['peer']} {out['peerVersion']} ({where}) failed at {err['step']}: "
                    f"{err['type']}: {err['message']}\n{detail}\n{out.get('_stderr', '')}", pytrace=False)
