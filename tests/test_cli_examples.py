"""The examples run as their docstrings say (real subprocesses), and the CLI drives them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import httpx

from mcpkit import Client
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit, served
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.servers import ServerProcess

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


def _uvicorn(app: str, *extra: str) -> Callable[[int], list[str]]:
    return lambda port: [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
                         "--log-level", "warning", *extra]


def test_static_token_server_example():
    srv = ServerProcess(_uvicorn("examples.static_token_server:app"), env=subprocess_env(EXAMPLE_TOKENS="s3cret,other"))
    try:
        assert srv.wait_ready(), srv.output()
        ok = mcpkit("call", "add", "a=1", "b=2", "--bearer", "s3cret", srv.url)
        assert ok.returncode == 0 and ok.stdout == "3\n", ok.stderr
        locked = mcpkit("call", "add", "a=1", "b=2", srv.url)
        assert locked.returncode == 1 and "requires authorization (HTTP 401" in locked.stderr
        meta = httpx.get(srv.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), trust_env=False)
        assert meta.json()["resource"] == srv.url and meta.json()["authorization_servers"]
        challenge = httpx.post(srv.url, json={}, trust_env=False).headers["www-authenticate"]
        assert "resource_metadata=" in challenge
    finally:
        srv.stop()


def test_multi_worker_example():
    keys = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"  # 32 random bytes, hex
    srv = ServerProcess(_uvicorn("examples.multi_worker:app", "--workers", "2"),
                        env=subprocess_env(MCPKIT_STATE_KEYS=keys))
    try:
        assert srv.wait_ready(30), srv.output()

        async def go() -> tuple[set[int], list[str]]:
            pids: set[int] = set()
            booked: list[str] = []
            for i in range(6):  # a new connection each time: the kernel spreads them over the workers
                async with Client(srv.url, elicitation=lambda p: {"action": "accept", "content": {"ok": True}}) as c:
                    pids.add((await c.call_tool("worker")).structuredContent["result"])
                    booked.append((await c.call_tool("book", {"city": f"city{i}"})).content[0].text)
            return pids, booked

        pids, booked = run(go(), 60)
        assert pids and all(b.startswith(f"booked city{i} ") for i, b in enumerate(booked)), booked
    finally:
        srv.stop()
    no_keys = subprocess.run([sys.executable, "-c", "import examples.multi_worker"], capture_output=True, text=True,
                             cwd=ROOT, env={k: v for k, v in subprocess_env().items() if k != "MCPKIT_STATE_KEYS"})
    assert no_keys.returncode != 0 and "set MCPKIT_STATE_KEYS" in no_keys.stderr
