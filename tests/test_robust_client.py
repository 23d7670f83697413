"""Client recovery (issue 10, hole 6): a stdio server that dies is restarted and only requests
safe to repeat are re-sent; HTTP connection failures of safe requests are retried."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Client
from mcpkit.client import Recovery, RequestNotRetried, TransportClosed, TransportError
from mcpkit.client._restart import Recoverer
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.servers import free_port, mcpkit_serve_argv, running_server

CRASHY = ROOT / "tests" / "servers" / "crashy.py"
FAST = Recovery(stdio_restart=True, backoff=0.01)


def _client(restart: Any) -> Client:
    return Client([sys.executable, str(CRASHY)], env=subprocess_env(), stderr=subprocess.DEVNULL, timeout=20,
                  restart=restart)


def test_dead_stdio_server_is_restarted_and_idempotent_call_resent(tmp_path: Path, caplog: Any) -> None:
    async def go() -> tuple[int, str, int]:
        async with _client(FAST) as c:
            await c.list_tools()  # learns which tools are idempotent
            first = (await c.call_tool("pid")).structuredContent["result"]
            answer = (await c.call_tool("die_once", {"marker": str(tmp_path)})).content[0].text
            second = (await c.call_tool("pid")).structuredContent["result"]
            return first, answer, second

    with caplog.at_level(logging.WARNING, logger="mcpkit.client"):
        first, answer, second = run(go())
    assert answer == "alive" and first != second
    assert "restarting" in caplog.text and "re-sending tools/call" in caplog.text


def test_unsafe_call_is_not_resent_but_the_server_is_restarted(tmp_path: Path) -> None:
    async def go() -> str:
        async with _client(FAST) as c:
            await c.list_tools()
            with pytest.raises(RequestNotRetried, match="not sent again"):
                await c.call_tool("write_once", {"marker": str(tmp_path)})
            assert (tmp_path / "write_once").exists()
            # the next call works on the restarted server (and the unsafe tool ran once only)
            return (await c.call_tool("write_once", {"marker": str(tmp_path)})).content[0].text

    assert run(go()) == "written"


def test_reads_after_a_death_work(tmp_path: Path) -> None:
    async def go() -> int:
        async with _client(FAST) as c:
            with pytest.raises(RequestNotRetried):
                await c.call_tool("die")  # unknown safety (tools never listed): not re-sent
            await c.discover()
            return len(await c.list_tools())

    assert run(go()) == 4


def test_a_server_that_keeps_dying_stays_dead() -> None:
    async def go() -> None:
        async with _client(Recovery(stdio_restart=True, backoff=0.01, attempts=2)) as c:
            for _ in range(4):
                try:
                    await c.call_tool("die")
                except RequestNotRetried:
                    continue
            await c.call_tool("pid")

    with pytest.raises(TransportClosed, match="keeps exiting|not restarted"):
        run(go())


def test_restart_is_off_by_default_for_stdio(tmp_path: Path) -> None:
    async def go() -> None:
        async with _client(None) as c:
            await c.list_tools()
            with pytest.raises(TransportClosed) as info:
                await c.call_tool("die_once", {"marker": str(tmp_path)})
            assert not isinstance(info.value, RequestNotRetried)
            await c.call_tool("pid")

    with pytest.raises(TransportClosed):
        run(go())


def test_http_connection_failures_of_safe_requests_are_retried(caplog: Any) -> None:
    """The server goes away and comes back on the same port: discover is retried, a tool call is not."""
    with running_server(mcpkit_serve_argv(ROOT / "tests" / "servers" / "http_test_server.py")) as url:
        async def go() -> None:
            async with Client(url, timeout=10, restart=Recovery(backoff=0.05, attempts=3)) as c:
                await c.discover()
                calls = 0
                real = httpx.AsyncClient.send

                async def flaky(self: httpx.AsyncClient, request: httpx.Request, **kw: Any) -> httpx.Response:
                    nonlocal calls
                    calls += 1
                    if calls <= 2:
                        raise httpx.ConnectError("connection refused", request=request)
                    return await real(self, request, **kw)

                async def flaky_lean(self: Any, head: bytes, body: bytes) -> Any:  # the lean request path's send
                    nonlocal calls
                    calls += 1
                    if calls <= 2:
                        raise httpx.ConnectError("connection refused")
                    return await real_lean(self, head, body)

                from mcpkit.client import _lean

                real_lean = _lean.LeanPost.send
                httpx.AsyncClient.send = flaky  # type: ignore[method-assign]
                _lean.LeanPost.send = flaky_lean  # type: ignore[method-assign]
                try:
                    await c.discover(cache="bypass") if _has_cache_kw() else await c.discover()
                    assert calls == 3
                    calls = 0
                    with pytest.raises(TransportError):
                        await c.call_tool("echo", {"text": "x"})  # not idempotent: not retried
                    assert calls == 1
                finally:
                    httpx.AsyncClient.send = real  # type: ignore[method-assign]
                    _lean.LeanPost.send = real_lean  # type: ignore[method-assign]

        with caplog.at_level(logging.INFO, logger="mcpkit.client"):
            run(go())
        assert "retrying" in caplog.text


def _has_cache_kw() -> bool:
    import inspect

    return "cache" in inspect.signature(Client.discover).parameters


def test_http_retry_can_be_switched_off() -> None:
    async def go() -> None:
        async with Client(f"http://127.0.0.1:{free_port()}/mcp", timeout=5, restart=False) as c:
            await c.discover()

    with pytest.raises(TransportError, match="failed"):
        run(go())


def test_safety_rules() -> None:
    r = Recoverer(Recovery())
    r.note_tools([type("T", (), {"name": "a", "annotations": {"idempotentHint": True}})(),
                  type("T", (), {"name": "b", "annotations": None})()])
    assert r.is_safe("tools/list", None) and r.is_safe("resources/read", {"uri": "x"})
    assert r.is_safe("tools/call", {"name": "a"}) and not r.is_safe("tools/call", {"name": "b"})
    assert not r.is_safe("tasks/cancel", {})
