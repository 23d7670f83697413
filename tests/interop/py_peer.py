"""Interop peer: the official MCP Python SDK client (PyPI ``mcp``) against an MCP server URL.

Runs under the peer's own venv (see ``scripts/install_peers.sh``), never under mcpkit's.

    python py_peer.py URL MODE

MODE is what ``mcp.client.Client(url, mode=...)`` takes: a pinned modern version such as
``2026-07-28`` (no probe), ``auto`` (probe ``server/discover``, fall back to ``initialize``)
or ``legacy`` (the ``initialize`` handshake). Prints one JSON object on stdout: what each
step returned, or ``{"error": ...}`` for the step that failed (exit status 0 either way,
so the test can assert on it).
"""

from __future__ import annotations

from typing import Any

from sdk_peer import Report, connected, demo_tools, list_and_add, run_url_mode


async def run(url: str, mode: str) -> dict[str, Any]:
    from mcp.client import Client

    out = Report(mode=mode)
    try:
        async with Client(url, mode=mode, read_timeout_seconds=30) as client:
            connected(client, out)
            await list_and_add(client, out)
            await demo_tools(client, out)
    except BaseException as exc:  # report, don't crash: the test reads the step that failed
        out.failed(exc)
    return out


if __name__ == "__main__":
    run_url_mode(run)
