"""The interpreter-sensitive tests again on the newest other CPython this machine has.

The suite runs on the project's interpreter (CI: 3.11). Some of mcpkit's code takes another
path on a newer CPython: from 3.12 a stdio request's task starts eagerly (its handler runs in
the loop step that read the line), and the codec's depth limits meet another recursion
accounting. This test runs the codec and stdio test files under the newest CPython >= 3.12
found on PATH (``python3.13``, ``python3.12``) or among pyenv's versions, in a venv of its
own under tests/.peers (made on first use, and again when pyproject.toml changes:
``pip install -e '.[dev]'``). It is skipped when
the machine has none.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / ".peers"
FILES = [
    "tests/test_codec.py",
    "tests/test_robust_codec.py",
    "tests/test_stdio.py",
    "tests/test_robust_stdio.py",
    "tests/test_client_stdio_reader.py",
    "tests/test_fuzz_stdio.py",
]
CANDIDATES = ("3.14", "3.13", "3.12")


def _version(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _pyenv_pythons(version: str) -> list[str]:
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}"), reverse=True)
    return [str(p) for p in found]


def newest_other_python() -> tuple[str, str] | None:
    """(version, interpreter) of the newest CPython >= 3.12 other than the running one."""
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for version in CANDIDATES:
        if version == running:
            continue
        on_path = shutil.which(f"python{version}")
        for exe in ([on_path] if on_path else []) + _pyenv_pythons(version):
            if _version(exe) == version:
                return version, exe
    return None


def _venv(version: str, exe: str) -> Path:
    env_dir = PEERS / f"venv-py{version}"
    py = env_dir / "bin" / "python"
    stamp = env_dir / "mcpkit-dev-installed"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()  # new dependencies: a new venv
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        PEERS.mkdir(parents=True, exist_ok=True)
        subprocess.run([exe, "-m", "venv", "--clear", str(env_dir)], check=True, timeout=300)
        done = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", ".[dev]"],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"installing mcpkit[dev] for Python {version} failed:\n{done.stderr[-3000:]}"
        stamp.write_text(wanted + "\n")
    return py


def test_codec_and_stdio_tests_pass_on_the_newest_other_cpython() -> None:
    found = newest_other_python()
    if found is None:
        pytest.skip(f"no other CPython of {', '.join(CANDIDATES)} on this machine")
    version, exe = found
    py = _venv(version, exe)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, f"the codec and stdio tests failed on Python {version}:\n{tail}"
    assert " passed" in tail and "failed" not in tail.splitlines()[-1], tail
