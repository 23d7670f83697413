"""Interop: REAL third-party MCP clients against OUR Streamable HTTP server.

The peers are the official SDK clients, installed from the package registries by
``scripts/install_peers.sh`` (once per session, cached under ``tests/.peers``):

* Python SDK, PyPI ``mcp==2.3.0``, in its own venv: ``mcp.client.Client(url, mode=...)``
  (``tests/interop/py_peer.py``);
* TypeScript SDK v2, npm ``@modelcontextprotocol/client@2.4.0``, on Node.js:
  ``Client`` + ``StreamableHTTPClientTransport`` with ``versionNegotiation``
  (``tests/interop/ts_peer.cjs``).

Our server runs for real: ``python -m mcpkit serve --http --port PORT examples/demo.py``.
Each peer connects (pinned to 2026-07-28, and by ``server/discover`` auto-negotiation),
lists the tools, calls ``add`` / ``convert_temperature`` / ``count_down`` (progress over
SSE) and a failing tool call, and prints JSON that the tests check. A peer that cannot be
installed (registry unreachable) FAILS these tests: CI installs them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.helpers.messages import VERSION
from tests.helpers.paths import DEMO, INTEROP
from tests.helpers.peers import install_peers, no_peer_error, run_peer_json
from tests.helpers.servers import mcpkit_serve_argv, running_server

DEMO_TOOLS = {"add", "convert_temperature", "count_down"}

#: (peer, mode) pairs that must fully interoperate. Python SDK modes are what
#: ``Client(mode=...)`` takes; TypeScript ``pin`` is ``versionNegotiation: {mode: {pin: VERSION}}``.
MODERN = [
    pytest.param("python", VERSION, id="python-sdk-pinned"),
    pytest.param("python", "auto", id="python-sdk-auto"),
    pytest.param("typescript", "pin", id="ts-sdk-pinned"),
    pytest.param("typescript", "auto", id="ts-sdk-auto"),
]

INSTALL_TIMEOUT = 900  # a cold install takes well under a minute; a slow registry may take more
PEER_TIMEOUT = 90


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def interop_peers() -> dict[str, str]:
    """Install (or find cached) the peer clients; FAIL, not skip, when that is impossible."""
    return install_peers([], ("PEER_PYTHON", "PEER_NODE", "PEER_NODE_PREFIX"),
                         "the interop peer clients (PyPI mcp / npm @modelcontextprotocol/client)", timeout=INSTALL_TIMEOUT)


@pytest.fixture(scope="module")
def interop_server_url() -> Iterator[str]:
    """Our real HTTP server (the demo), on a free loopback port."""
    with running_server(mcpkit_serve_argv(DEMO), timeout=30) as url:
        yield url


@pytest.fixture(scope="module")
def run_peer(interop_peers: dict[str, str], interop_server_url: str) -> Callable[[str, str], dict[str, Any]]:
    """``run_peer(peer, mode)`` -> the peer's JSON report (each pair runs once per module)."""
    cache: dict[tuple[str, str], dict[str, Any]] = {}

    def run(peer: str, mode: str) -> dict[str, Any]:
        if (peer, mode) not in cache:
            if peer == "python":
                argv = [interop_peers["PEER_PYTHON"], str(INTEROP / "py_peer.py"), interop_server_url, mode]
            else:
                argv = [interop_peers["PEER_NODE"], str(INTEROP / "ts_peer.cjs"),
                        interop_peers["PEER_NODE_PREFIX"], interop_server_url, mode]
            cache[peer, mode] = _run_json(argv)
        return cache[peer, mode]

    return run


# ------------------------------------------------------------------ the acceptance test
@pytest.mark.parametrize("peer, mode", MODERN)
def test_peer_lists_tools_and_calls_add(run_peer, peer: str, mode: str) -> None:
    out = run_peer(peer, mode)
    _no_error(out)
    assert out["protocolVersion"] == VERSION
    assert DEMO_TOOLS <= set(out["tools"]), out["tools"].keys()
    add = out["tools"]["add"]
    assert add["inputSchema"]["type"] == "object"
    assert add["inputSchema"]["properties"]["a"]["type"] == "integer"
    assert sorted(add["inputSchema"].get("required", [])) == ["a", "b"]

    result = out["add"]
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"result": 5}
    texts = [c["text"] for c in result["content"] if c["type"] == "text"]
    assert texts and json.loads(texts[0]) == {"result": 5}


# ------------------------------------------------------------------ beyond the basics
@pytest.mark.parametrize("peer, mode", MODERN)
def test_peer_structured_output_matches_output_schema(run_peer, peer: str, mode: str) -> None:
    """The TS SDK validates structuredContent against the tool's outputSchema (AJV)."""
    out = run_peer(peer, mode)
    _no_error(out)
    assert out["tools"]["convert_temperature"]["outputSchema"]["required"] == ["value", "unit"]
    assert out["convert"]["structuredContent"] == {"value": 100, "unit": "celsius"}
    assert not out["convert"].get("isError")


@pytest.mark.parametrize("peer, mode", MODERN)
def test_peer_gets_progress_over_sse(run_peer, peer: str, mode: str) -> None:
    """count_down reports progress: the response switches to text/event-stream."""
    out = run_peer(peer, mode)
    _no_error(out)
    assert [c.get("text") for c in out["countDown"]["content"]] == ["liftoff"]
    progress = out["progress"]
    assert [p["progress"] for p in progress] == [0, 1, 2, 3], progress
    assert all(p["total"] == 3 for p in progress), progress
    assert progress[-1]["message"] == "0 to go"


@pytest.mark.parametrize("peer, mode", MODERN)
def test_peer_sees_tool_error_as_result(run_peer, peer: str, mode: str) -> None:
    out = run_peer(peer, mode)
    _no_error(out)
    err = out["toolError"]
    assert err["isError"] is True
    assert "between 0 and 100" in err["content"][0]["text"]


@pytest.mark.parametrize("peer, mode", MODERN)
def test_peer_learns_server_identity(run_peer, peer: str, mode: str) -> None:
    out = run_peer(peer, mode)
    _no_error(out)
    assert out["add"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpkit-demo"
    if mode != VERSION:  # the Python SDK's pinned mode synthesizes its DiscoverResult: no serverInfo
        assert out["serverInfo"]["name"] == "mcpkit-demo"


# ------------------------------------------------------------------ legacy-only clients
@pytest.mark.parametrize("peer, mode", [
    pytest.param("python", "legacy", id="python-sdk-legacy"),
    pytest.param("typescript", "default", id="ts-sdk-default-legacy"),
])
def test_legacy_client_lists_tools_and_calls_add(run_peer, peer: str, mode: str) -> None:
    """Our server is dual-era: a client doing the 2025-11-25 ``initialize`` handshake (the TS
    SDK's default) gets a legacy session on the same endpoint and the same tools."""
    out = run_peer(peer, mode)
    _no_error(out)
    assert out["protocolVersion"] == "2025-11-25"
    assert DEMO_TOOLS <= set(out["tools"]), out["tools"].keys()
    result = out["add"]
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"result": 5}


# ------------------------------------------------------------------ helpers
def _run_json(argv: list[str]) -> dict[str, Any]:
    return run_peer_json(argv, cwd=INTEROP, timeout=PEER_TIMEOUT)


def _no_error(out: dict[str, Any]) -> None:
    no_peer_error(out, f"mode {out['mode']}")
