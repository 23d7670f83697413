"""What the official-Python-SDK peer scripts share (``py_peer.py``, ``legacy_py_peer.py``).

They run under the peer's own venv, never under mcpkit's: this module imports nothing of ours
(only the SDK, through the client it is handed), and the scripts import it as a sibling (a
script's own directory is first on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any


class Report(dict):
    """The JSON a peer prints: what each step returned, and the step it is at (for the error)."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(peer="mcp (PyPI)", peerVersion=version("mcp"), **fields)
        self.step = "connect"

    def failed(self, exc: BaseException) -> None:
        """Report, don't crash: the test reads the step that failed."""
        leaf = leaves(exc)[0]
        self["error"] = {"step": self.step, "type": type(leaf).__name__, "message": str(leaf),
                         "code": getattr(getattr(leaf, "error", None), "code", None),
                         "data": getattr(getattr(leaf, "error", None), "data", None),
                         "traceback": traceback.format_exc()[-4000:]}


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def connected(client: Any, out: Report) -> None:
    out["protocolVersion"] = client.protocol_version
    info = client.server_info
    out["serverInfo"] = dump(info) if info is not None else None


async def list_and_add(client: Any, out: Report) -> None:
    out.step = "tools/list"
    listed = await client.list_tools()
    out["tools"] = {t.name: dump(t) for t in listed.tools}

    out.step = "tools/call add"
    out["add"] = dump(await client.call_tool("add", {"a": 2, "b": 3}))


async def demo_tools(client: Any, out: Report) -> None:
    """The demo's other tools: structured output, progress, and a tool error."""
    out.step = "tools/call convert_temperature"
    out["convert"] = dump(await client.call_tool("convert_temperature", {"value": 212, "to": "celsius"}))

    out.step = "tools/call count_down (progress)"
    progress: list[dict[str, Any]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": done, "total": total, "message": message})

    out["countDown"] = dump(await client.call_tool("count_down", {"start": 3}, progress_callback=on_progress))
    out["progress"] = progress

    out.step = "tools/call count_down (tool error)"
    out["toolError"] = dump(await client.call_tool("count_down", {"start": 500}))


def run_url_mode(run: Callable[[str, str], Awaitable[dict[str, Any]]]) -> None:
    """``python PEER.py URL [MODE]``: print ``run(URL, MODE)``'s report as one JSON line
    (MODE 2026-07-28 when not given)."""
    url = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "2026-07-28"
    print(json.dumps(asyncio.run(run(url, mode))), flush=True)
