"""The event loop a server runs on: uvloop where it is installed (``loop="auto"``, as uvicorn
chooses for HTTP), asyncio's on request; an unknown or missing loop is one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpkit import Server
from mcpkit.transports import _loops, run_stdio_server
from tests.helpers.cli import mcpkit
from tests.helpers.messages import line, request
from tests.helpers.paths import ROOT

SERVER = textwrap.dedent("""
    import asyncio, sys
    from mcpkit import Server

    server = Server("loops", "1.0")

    @server.tool()
    async def which() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__.split(".")[0]

    if __name__ == "__main__":
        server.run(**({"loop": sys.argv[1]} if len(sys.argv) > 1 else {}))
""")


def _ask(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stdin = line(request(1, "tools/call", name="which", arguments={})).decode() + "\n"
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)


def _loop_of(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.splitlines()[0])
    return str(answer["result"]["content"][0]["text"])


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "loops_server.py"
    path.write_text(SERVER)
    return path


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_stdio_server_runs_on_uvloop_where_it_is_installed(server_file: Path, tmp_path: Path) -> None:
    if not _has_uvloop():
        pytest.skip("uvloop is not installed (the fast extra)")
    assert _loop_of(_ask([sys.executable, str(server_file)], tmp_path)) == "uvloop"
    assert _loop_of(_ask([sys.executable, str(server_file), "uvloop"], tmp_path)) == "uvloop"


def test_loop_asyncio_keeps_the_standard_loop(server_file: Path, tmp_path: Path) -> None:
    assert _loop_of(_ask([sys.executable, str(server_file), "asyncio"], tmp_path)) == "asyncio"


def test_mcpkit_serve_takes_the_loop(server_file: Path, tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "mcpkit", "serve"]
    assert _loop_of(_ask([*cli, "--loop", "asyncio", str(server_file)], tmp_path)) == "asyncio"
    if _has_uvloop():
        assert _loop_of(_ask([*cli, str(server_file)], tmp_path)) == "uvloop"
    bad = mcpkit("serve", "--loop", "trio", server_file)
    assert bad.returncode == 2
    assert "invalid choice: 'trio'" in bad.stderr


def test_an_unknown_loop_is_refused_before_anything_is_read() -> None:
    in_r, in_w = os.pipe()
    os.write(in_w, line(request(1, "server/discover")) + b"\n")
    try:
        with pytest.raises(ValueError, match="unknown loop 'trio': choose 'auto', 'asyncio' or 'uvloop'"):
            run_stdio_server(Server("x", "1"), in_fd=in_r, out_fd=2, loop="trio")
        assert os.read(in_r, 1 << 16).startswith(b"{")  # the request is still there, unread
    finally:
        os.close(in_r)
        os.close(in_w)


def test_a_missing_uvloop_falls_back_or_is_one_clear_error() -> None:
    code = textwrap.dedent("""
        import asyncio, sys
        sys.modules["uvloop"] = None  # as if it were not installed
        from mcpkit.transports import _loops
        assert _loops.loop_factory("auto") is asyncio.new_event_loop
        assert _loops.loop_factory("asyncio") is asyncio.new_event_loop
        try:
            _loops.loop_factory("uvloop")
        except ValueError as exc:
            print(exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "loop='uvloop' needs uvloop installed: pip install 'mcpkit[fast]'"


def test_run_answers_on_the_loop_it_names() -> None:
    async def which() -> str:
        import asyncio

        return type(asyncio.get_running_loop()).__module__.split(".")[0]

    assert _loops.run(which(), "asyncio") == "asyncio"
    if _has_uvloop():
        assert _loops.run(which(), "auto") == "uvloop"
