"""The proxy bench's floors (bench/servers/floor_proxy.py): both relay what wrk sends to a real
mcpkit HTTP backend in both eras, refuse a body that is not JSON, and keep relaying after it.
Only that they relay right is checked, never a timing."""

from __future__ import annotations

import sys

import httpx
import pytest

from tests.helpers.paths import ROOT
from tests.helpers.servers import running_server

ECHO = ROOT / "bench" / "servers" / "echo_mcpkit.py"
FLOOR = ROOT / "bench" / "servers" / "floor_proxy.py"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
ACCEPT = "application/json, text/event-stream"


@pytest.mark.parametrize("raw", [False, True], ids=["asgi", "raw"])
def test_a_floor_relays_both_eras_and_refuses_what_is_not_json(raw: bool) -> None:
    with running_server(lambda port: [sys.executable, str(ECHO), "http", str(port)]) as backend, \
            running_server(lambda port: [sys.executable, str(FLOOR), *(["--raw"] if raw else []), str(port), backend]
                           ) as url, httpx.Client(trust_env=False, timeout=10) as client:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "through the floor"}, "_meta": META}}
        modern = {"Accept": ACCEPT, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        r = client.post(url, json=call, headers=modern)
        assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "through the floor", r.text

        r = client.post(url, content=b"{not json", headers={**modern, "Content-Type": "application/json"})
        assert r.status_code == 400

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
        r = client.post(url, json=init, headers={"Accept": ACCEPT})
        session = r.headers.get("mcp-session-id")
        assert r.status_code == 200 and session, r.text
        legacy = {"Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}
        r = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=legacy)
        assert r.status_code == 202
        r = client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": "echo", "arguments": {"text": "legacy"}}}, headers=legacy)
        assert r.status_code == 200 and "legacy" in r.text, r.text
