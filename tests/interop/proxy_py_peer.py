"""Proxy interop peer: the official MCP Python SDK client (PyPI ``mcp``) against ``mcpkit proxy``.

Runs under the peer's own venv (see ``scripts/install_peers.sh``), never under mcpkit's.

    python proxy_py_peer.py everything MODE http URL     server-everything behind the proxy
    python proxy_py_peer.py tool MODE http URL           one tool (add) behind the proxy
    python proxy_py_peer.py tool MODE stdio COMMAND...   the same, the proxy run as a stdio server

For stdio, ``PROXY_PEER_SERVER_PYTHONPATH`` (when set) becomes the server's PYTHONPATH.

``everything`` lists the tools, calls ``echo`` and ``get-sum``, reads a resource, and calls
``trigger-elicitation-request`` and ``trigger-sampling-request`` (answered by this client's
callbacks: MRTR in 2026-07-28 mode). Prints one JSON report (exit status 0 either way).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from sdk_peer import Report, connected, dump


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def run(scenario: str, mode: str, transport: str, target: list[str]) -> dict[str, Any]:
    import mcp_types as types
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    out = Report(mode=mode, scenario=scenario, transport=transport)
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append("elicitation/create")
        return types.ElicitResult(action="accept", content={"name": "Grace Hopper", "check": True})

    async def on_sample(context: Any, params: Any) -> Any:
        asked.append("sampling/createMessage")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="py-sampled"),
                                         model="peer-model")

    env = {"PYTHONPATH": os.environ["PROXY_PEER_SERVER_PYTHONPATH"]} if os.environ.get("PROXY_PEER_SERVER_PYTHONPATH") else None
    server: Any = target[0] if transport == "http" else StdioServerParameters(command=target[0], args=target[1:], env=env)
    try:
        async with Client(server, mode=mode, read_timeout_seconds=60, elicitation_callback=on_elicit,
                          sampling_callback=on_sample, cache=None) as client:
            connected(client, out)
            out.step = "tools/list"
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            if scenario == "tool":
                out.step = "tools/call add"
                out["add"] = dump(await client.call_tool("add", {"a": 2, "b": 3}))
                return out
            out.step = "tools/call echo"
            out["echo"] = text(await client.call_tool("echo", {"message": "through the proxy"}))
            out.step = "tools/call get-sum"
            out["sum"] = text(await client.call_tool("get-sum", {"a": 2, "b": 3}))
            out.step = "resources/list"
            resources = (await client.list_resources()).resources
            out.step = "resources/read"
            read = await client.read_resource(resources[0].uri)
            out["read"] = {"uri": str(resources[0].uri), "contents": dump(read)["contents"]}
            out.step = "tools/call trigger-elicitation-request"
            out["elicitation"] = text(await client.call_tool("trigger-elicitation-request", {}))
            out.step = "tools/call trigger-sampling-request"
            out["sampling"] = text(await client.call_tool("trigger-sampling-request",
                                                          {"prompt": "2+2?", "maxTokens": 5}))
            out["asked"] = asked
    except BaseException as exc:
        out.failed(exc)
    return out


def main() -> None:
    scenario, mode, transport, *target = sys.argv[1:]
    print(json.dumps(asyncio.run(run(scenario, mode, transport, target))), flush=True)


if __name__ == "__main__":
    main()
