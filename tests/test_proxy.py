"""``mcpkit proxy``: real backends and real clients on both sides.

- server-everything (npm, stdio, 2025-11-25) behind ``mcpkit proxy --http``, driven by the
  official Python SDK client in 2026-07-28 mode: its elicitation and sampling requests reach
  the client as MRTR ``input_required`` and its callbacks answer them;
- an mcpkit server with ``legacy=False`` behind ``mcpkit proxy --http URL`` and ``mcpkit proxy
  URL`` (stdio), driven by the SDK client in legacy mode;
- failures: a backend that dies mid-call, one that never answers ``initialize``, bad input
  refused by the front before it reaches the backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPError, Server, TransportError
from mcpkit.proxy import proxy
from tests.helpers.aio import run
from tests.helpers.cli import everything_argv
from tests.helpers.paths import INTEROP, ROOT, SERVERS, pythonpath, subprocess_env
from tests.helpers.peers import install_peers, no_peer_error, run_peer_json
from tests.helpers.servers import running_server

BACKEND = SERVERS / "proxy_backend.py"
CRASHY = SERVERS / "crashy.py"
SILENT = SERVERS / "silent.py"
PEER = INTEROP / "proxy_py_peer.py"


@pytest.fixture(scope="module")
def peers() -> dict[str, str]:
    return install_peers([], ("PEER_PYTHON",), "the official Python SDK client (PyPI mcp)")


def proxy_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpkit", "proxy", *args]


@pytest.fixture(scope="module")
def modern_backend_url() -> Iterator[str]:
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                                      str(BACKEND)], timeout=30) as url:
        yield url


@pytest.fixture(scope="module")
def proxied_modern_url(modern_backend_url: str) -> Iterator[str]:
    with running_server(lambda port: proxy_argv("--http", "--port", str(port), modern_backend_url), timeout=30) as url:
        yield url


def peer(peers: dict[str, str], *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = run_peer_json([peers["PEER_PYTHON"], str(PEER), *args], cwd=INTEROP, timeout=120, extra_env=env)
    no_peer_error(out, " ".join(args[:3]))
    return out


# ------------------------------------------------------------------ acceptance
def test_sdk_modern_client_through_proxy_to_server_everything(peers: dict[str, str]) -> None:
    backend = everything_argv()
    with running_server(lambda port: proxy_argv("--http", "--port", str(port), "--", *backend), timeout=30) as url:
        out = peer(peers, "everything", "2026-07-28", "http", url)
    assert out["protocolVersion"] == "2026-07-28"
    assert {"echo", "get-sum", "trigger-elicitation-request", "trigger-sampling-request"} <= set(out["tools"])
    assert out["echo"] == "Echo: through the proxy"
    assert "5" in out["sum"]
    assert out["read"]["contents"] and out["read"]["contents"][0]["uri"] == out["read"]["uri"]
    assert "Grace Hopper" in out["elicitation"]
    assert "py-sampled" in out["sampling"] and "peer-model" in out["sampling"]
    assert out["asked"] == ["elicitation/create", "sampling/createMessage"]


def test_sdk_legacy_client_through_http_proxy_to_modern_only_server(peers: dict[str, str],
                                                                     proxied_modern_url: str) -> None:
    out = peer(peers, "tool", "legacy", "http", proxied_modern_url)
    assert out["protocolVersion"] == "2025-11-25"
    assert out["serverInfo"]["name"] == "proxied"
    assert "add" in out["tools"]
    assert out["add"]["structuredContent"] == {"result": 5}


def test_sdk_legacy_stdio_client_through_stdio_proxy(peers: dict[str, str], modern_backend_url: str) -> None:
    out = peer(peers, "tool", "legacy", "stdio", *proxy_argv(modern_backend_url),
               env={"PROXY_PEER_SERVER_PYTHONPATH": pythonpath()})
    assert out["protocolVersion"] == "2025-11-25"
    assert out["add"]["structuredContent"] == {"result": 5}


def test_legacy_front_client_answers_a_modern_backends_question_as_a_real_request(proxied_modern_url: str) -> None:
    asked: list[str] = []

    def elicit(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"ok": True}}

    async def main() -> str:
        async with Client(proxied_modern_url, mode="legacy", elicitation=elicit) as client:
            assert client.era == "legacy"
            result = await client.call_tool("confirm", {"what": "delete"})
            return "".join(c.text for c in result.content)

    assert run(main(), 60) == "accept:True"
    assert asked == ["Really delete?"]


def test_startup_line_names_front_backend_and_era(modern_backend_url: str) -> None:
    proc = subprocess.Popen(proxy_argv("--http", "--port", "0", modern_backend_url), stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=subprocess_env(), text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(10)
    assert line.startswith("mcpkit proxy: serving proxied 3.1.4 on http://127.0.0.1:0/mcp (modern + legacy, unprotected)")
    assert f"for {modern_backend_url} (modern 2026-07-28 backend over HTTP)" in line


def test_parked_calls_are_bounded_expire_and_go_only_to_their_caller() -> None:
    from mcpkit.proxy._pending import BackendCall, PendingCalls

    cancelled: list[str] = []
    pending = PendingCalls(lambda call: cancelled.append(call.id), limit=2, ttl=0.2)
    calls = [BackendCall("tools/call", "alice") for _ in range(3)]
    for call in calls:
        pending.park(call)
    assert cancelled == [calls[0].id] and len(pending) == 2       # the oldest made room
    assert pending.take(calls[1].id, "mallory") is None            # someone else's retry
    assert pending.take(calls[1].id, "alice") is calls[1]
    assert pending.take(calls[1].id, "alice") is None              # handed out once
    time.sleep(0.25)
    assert pending.take(calls[2].id, "alice") is None              # expired, and cancelled
    assert cancelled == [calls[0].id, calls[2].id]


# ------------------------------------------------------------------ failures
def test_backend_crash_mid_call_is_one_clear_error_and_the_backend_restarts(tmp_path: Path) -> None:
    front = proxy([sys.executable, str(CRASHY)], env={**os.environ, "PYTHONPATH": pythonpath()},
                  stderr=subprocess.DEVNULL)
    try:
        async def main() -> tuple[MCPError, int, int]:
            async with Client(front) as client:
                before = (await client.call_tool("pid", {})).structuredContent["result"]
                with pytest.raises(MCPError) as info:
                    await client.call_tool("write_once", {"marker": str(tmp_path)})
                after = (await client.call_tool("pid", {})).structuredContent["result"]
                return info.value, before, after

        err, before, after = run(main(), 60)
    finally:
        front.close()
    assert err.code == -32603
    assert "the backend server exited while handling tools/call" in err.message
    assert before != after  # restarted


def test_backend_that_never_answers_initialize_fails_within_the_connect_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(TransportError):
        proxy([sys.executable, str(SILENT)], connect_timeout=2.0)
    assert time.monotonic() - started < 15


def test_cli_backend_that_never_answers_is_one_line_and_exit_1() -> None:
    proc = subprocess.run(proxy_argv("--http", "--port", "0", "--connect-timeout", "2", "--", sys.executable,
                                     str(SILENT)), capture_output=True, text=True, timeout=60, env=subprocess_env(),
                          stdin=subprocess.DEVNULL, cwd=ROOT)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("mcpkit proxy: "), proc.stderr


def test_bad_input_is_refused_by_the_front_and_never_reaches_the_backend() -> None:
    back = Server("counted", legacy=False)
    seen: list[str] = []

    @back.tool()
    def add(a: int, b: int) -> int:
        return a + b

    async def count(ctx: Any, params: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx, params)

    back.add_middleware(count)
    front = proxy(back)
    try:
        async def main() -> list[MCPError]:
            errors = []
            async with Client(front) as client:
                for params in ({"name": 5}, {"arguments": {}}, {"name": "add", "arguments": [1, 2]}):
                    with pytest.raises(MCPError) as info:
                        await client.request("tools/call", params)
                    errors.append(info.value)
                with pytest.raises(MCPError) as info:
                    await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                                        "requestState": "forged"})
                errors.append(info.value)
            return errors

        errors = run(main(), 30)
    finally:
        front.close()
    assert [e.code for e in errors] == [-32602] * 4
    assert "tools/call" not in seen


def test_front_client_without_the_capability_gets_the_backends_own_answer_not_a_hang() -> None:
    # The backend session of a client that cannot elicit declares no elicitation, so the
    # backend answers as it would that client directly: server-everything lists
    # trigger-elicitation-request only to clients that can elicit.
    backend = everything_argv()
    front = proxy(backend, stderr=subprocess.DEVNULL)
    try:
        async def main() -> tuple[set[str], set[str], Any]:
            async with Client(front) as plain:  # declares no elicitation
                hidden = {tool.name for tool in await plain.list_tools()}
                result = await plain.call_tool("trigger-elicitation-request", {})
            async with Client(front, elicitation=lambda p: {"action": "decline"}) as asking:
                shown = {tool.name for tool in await asking.list_tools()}
            return hidden, shown, result

        hidden, shown, result = run(main(), 60)
    finally:
        front.close()
    assert "trigger-elicitation-request" not in hidden and "trigger-elicitation-request" in shown
    assert result.isError is True and "not found" in result.content[0].text


# ------------------------------------------------------------------ the README
def test_readme_proxy_snippet_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Proxy"):readme.index("## Both eras")]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=subprocess_env(), cwd=ROOT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{'result': 5}"
    assert "mcpkit proxy --http --port 9000 -- npx" in section


def test_backend_list_changes_reach_the_fronts_listeners() -> None:
    back = Server("growing", legacy=False)

    @back.tool()
    def grow() -> str:
        back.tool(name="grown")(lambda: "new")   # registered on the backend's own loop: it notifies
        return "grown"

    front = proxy(back)
    try:
        async def main() -> tuple[str, list[str]]:
            import asyncio

            async with Client(front) as client:
                got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

                async def listen() -> None:
                    async for note in client.listen(tools=True):
                        if not got.done():
                            got.set_result(note.method)

                task = asyncio.ensure_future(listen())
                await asyncio.sleep(0.3)   # the stream is acknowledged
                await client.call_tool("grow", {})
                method = await asyncio.wait_for(got, 10)
                task.cancel()
                return method, [t.name for t in await client.list_tools(cache="refresh")]

        method, names = run(main(), 30)
    finally:
        front.close()
    assert method == "notifications/tools/list_changed"
    assert "grown" in names
