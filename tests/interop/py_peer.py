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

import asyncio
import json
import sys
import traceback
from importlib.metadata import version
from typing import Any


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(url: str, mode: str) -> dict[str, Any]:
    from mcp.client import Client

    out: dict[str, Any] = {"peer": "mcp (PyPI)", "peerVersion": version("mcp"), "mode": mode}
    step = "connect"
    try:
        async with Client(url, mode=mode, read_timeout_seconds=30) as client:
            out["protocolVersion"] = client.protocol_version
            info = client.server_info
            out["serverInfo"] = _dump(info) if info is not None else None

            step = "tools/list"
            listed = await client.list_tools()
            out["tools"] = {t.name: _dump(t) for t in listed.tools}

            step = "tools/call add"
            out["add"] = _dump(await client.call_tool("add", {"a": 2, "b": 3}))

            step = "tools/call convert_temperature"
            out["convert"] = _dump(await client.call_tool("convert_temperature", {"value": 212, "to": "celsius"}))

            step = "tools/call count_down (progress over SSE)"
            progress: list[dict[str, Any]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": done, "total": total, "message": message})

            out["countDown"] = _dump(
                await client.call_tool("count_down", {"start": 3}, progress_callback=on_progress))
            out["progress"] = progress

            step = "tools/call count_down (tool error)"
            out["toolError"] = _dump(await client.call_tool("count_down", {"start": 500}))
    except BaseException as exc:  # report, don't crash: the test reads the step that failed
        leaf = _leaves(exc)[0]
        out["error"] = {"step": step, "type": type(leaf).__name__, "message": str(leaf),
                        "code": getattr(getattr(leaf, "error", None), "code", None),
                        "data": getattr(getattr(leaf, "error", None), "data", None),
                        "traceback": traceback.format_exc()[-4000:]}
    return out


def main() -> None:
    url = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "2026-07-28"
    print(json.dumps(asyncio.run(run(url, mode))), flush=True)


if __name__ == "__main__":
    main()
