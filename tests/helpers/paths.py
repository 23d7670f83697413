"""Where things are, and the environment a child Python needs to import mcpkit and ``tests``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SERVERS = TESTS / "servers"
INTEROP = TESTS / "interop"
SCRIPTS = ROOT / "scripts"
INSTALL_PEERS = SCRIPTS / "install_peers.sh"
PEERS_DIR = Path(os.environ.get("MCPKIT_PEERS_DIR") or TESTS / ".peers")

DEMO = ROOT / "examples" / "demo.py"

# stdio servers
TEST_SERVER = SERVERS / "testserver.py"
MISBEHAVING = SERVERS / "misbehaving.py"
ERA_STDIO = SERVERS / "era_stdio.py"
# servers for either transport (``python -m mcpkit serve [--http] FILE[:FACTORY]``)
HTTP_TEST_SERVER = SERVERS / "http_test_server.py"
LISTEN_SERVER = SERVERS / "listen_server.py"
MRTR_SERVER = SERVERS / "mrtr_server.py"
TASKS_SERVER = SERVERS / "tasks_server.py"
ERA_HTTP = SERVERS / "era_http.py"
# the 2025-11-25 feature server (also ``python legacy_test_server.py --http PORT ...``)
LEGACY_SERVER = INTEROP / "legacy_test_server.py"
STDIO_RECORDER = INTEROP / "stdio_recorder.py"
HTTP_RECORDER = INTEROP / "http_recorder.py"


def pythonpath() -> str:
    """The repo root first, then whatever PYTHONPATH already holds."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python: the repo root importable, whatever else is set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath()
    env.update(extra)
    return env


def serve_argv(spec: str | Path, *, port: int | None = None) -> list[str]:
    """``python -m mcpkit serve [--http --port PORT] SPEC``."""
    http = ["--http", "--port", str(port)] if port is not None else []
    return [sys.executable, "-m", "mcpkit", "serve", *http, str(spec)]


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a file that is not on ``sys.path`` (a served script, the demo) as a module.

    It is registered in ``sys.modules`` (dataclasses resolve their annotations through it).
    """
    name = name or f"_tests_loaded_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
