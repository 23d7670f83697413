"""Interop peer: the official MCP Python SDK client (PyPI ``mcp``) against an MCP Apps server.

Runs under the peer's own venv, never under mcpkit's.

    python apps_py_peer.py URL MODE

Lists the tools, finds those whose ``_meta.ui.resourceUri`` is set, reads each such resource
and prints one JSON object: ``{"tools": {name: _meta}, "resources": {uri: {mimeType, meta,
htmlStart}}}`` (or ``{"error": ...}`` for the step that failed).
"""

from __future__ import annotations

from typing import Any

from sdk_peer import Report, connected, dump, run_url_mode


async def run(url: str, mode: str) -> dict[str, Any]:
    from mcp.client import Client

    out = Report(mode=mode)
    try:
        async with Client(url, mode=mode, read_timeout_seconds=30) as client:
            connected(client, out)
            out.step = "tools/list"
            listed = await client.list_tools()
            out["tools"] = {t.name: dump(t).get("_meta") for t in listed.tools}
            out.step = "resources/read"
            out["resources"] = {}
            for meta in out["tools"].values():
                uri = ((meta or {}).get("ui") or {}).get("resourceUri")
                if uri and uri not in out["resources"]:
                    read = await client.read_resource(uri)
                    item = dump(read.contents[0])
                    out["resources"][uri] = {"mimeType": item.get("mimeType"), "meta": item.get("_meta"),
                                             "htmlStart": (item.get("text") or "")[:15]}
            out.step = "done"
    except BaseException as exc:  # report, don't crash: the test reads the step that failed
        out.failed(exc)
    return out


if __name__ == "__main__":
    run_url_mode(run)
