"""Running a peer SDK's script (Python or node) that prints one JSON report line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest


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
