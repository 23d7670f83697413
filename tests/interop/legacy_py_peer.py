"""Legacy interop peer: the official MCP Python SDK client (PyPI ``mcp``) in ``mode="legacy"``
(the 2025-11-25 ``initialize`` handshake) against an MCP server, over HTTP or stdio.

Runs under the peer's own venv (see ``scripts/install_peers.sh``), never under mcpkit's.

    python legacy_py_peer.py SCENARIO http URL
    python legacy_py_peer.py SCENARIO stdio COMMAND [ARGS...]

For stdio, ``LEGACY_PEER_SERVER_PYTHONPATH`` (when set) becomes the server's PYTHONPATH.
SCENARIO ``demo`` exercises ``examples/demo.py`` (tools add, convert_temperature, count_down
with progress, a tool error, a resource, a prompt, ping); ``extras`` exercises
``tests/interop/legacy_test_server.py`` (logging/setLevel and log messages, elicitation,
sampling and roots requests answered by this client's callbacks, resources/subscribe and the
update notification, tools/list_changed, -32002 for a missing resource). Prints one JSON object
on stdout: what each step returned, or ``{"error": ...}`` for the step that failed (exit status
0 either way, so the test can assert on it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from sdk_peer import Report, connected, demo_tools, list_and_add
from sdk_peer import dump as _dump


async def _wait_for(pred, timeout: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def run(scenario: str, transport: str, target: list[str]) -> dict[str, Any]:
    import mcp_types as types
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    out = Report(mode="legacy", transport=transport, scenario=scenario)
    if transport == "http":
        server: Any = target[0]
    else:
        env = {}
        if os.environ.get("LEGACY_PEER_SERVER_PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["LEGACY_PEER_SERVER_PYTHONPATH"]
        server = StdioServerParameters(command=target[0], args=target[1:], env=env or None)

    logs: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    asked: list[str] = []

    async def on_log(params: Any) -> None:
        logs.append({"level": params.level, "data": params.data})

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            notes.append({"exception": repr(message)})
            return
        root = getattr(message, "root", message)
        notes.append({"method": getattr(root, "method", type(root).__name__),
                      "params": _dump(root.params) if getattr(root, "params", None) is not None else None})

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append("elicitation/create")
        return types.ElicitResult(action="accept", content={"name": "Linus"})

    async def on_sample(context: Any, params: Any) -> Any:
        asked.append("sampling/createMessage")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="py-sampled"),
                                         model="peer-model")

    async def on_roots(context: Any) -> Any:
        asked.append("roots/list")
        return types.ListRootsResult(roots=[types.Root(uri="file:///peer/root", name="peer")])

    try:
        async with Client(server, mode="legacy", read_timeout_seconds=30, logging_callback=on_log,
                          message_handler=on_message, elicitation_callback=on_elicit,
                          sampling_callback=on_sample, list_roots_callback=on_roots, cache=None) as client:
            connected(client, out)

            out.step = "ping"
            out["ping"] = _dump(await client.send_ping())

            await list_and_add(client, out)

            if scenario == "demo":
                await demo_tools(client, out)

                out.step = "resources/read"
                out["note"] = _dump(await client.read_resource("notes://groceries"))

                out.step = "prompts/get"
                out["prompt"] = _dump(await client.get_prompt("summarize", {"name": "ideas"}))
            else:
                out.step = "logging/setLevel"
                out["setLevel"] = _dump(await client.set_logging_level("info"))
                out.step = "tools/call log_steps"
                out["logSteps"] = _dump(await client.call_tool("log_steps", {"steps": 2}))
                await _wait_for(lambda: len(logs) >= 2, 5)
                out["logs"] = list(logs)

                out.step = "tools/call ask_all (elicitation, sampling, roots)"
                out["askAll"] = _dump(await client.call_tool("ask_all", {}))
                out["asked"] = list(asked)

                out.step = "resources/subscribe"
                out["subscribe"] = _dump(await client.subscribe_resource("mem://counter"))
                out.step = "tools/call touch"
                out["touch"] = _dump(await client.call_tool("touch", {"uri": "mem://counter"}))
                await _wait_for(lambda: any(n.get("method") == "notifications/resources/updated" for n in notes))

                out.step = "tools/call add_tool"
                out["addTool"] = _dump(await client.call_tool("add_tool", {"name": "py_peer_tool"}))
                await _wait_for(lambda: any(n.get("method") == "notifications/tools/list_changed" for n in notes))
                out["notifications"] = list(notes)
                out.step = "tools/list (after add_tool)"
                out["toolsAfter"] = sorted(t.name for t in (await client.list_tools()).tools)

                out.step = "resources/read (missing)"
                try:
                    await client.read_resource("mem://items/nothing")
                    out["missing"] = {"code": None}
                except MCPError as exc:
                    out["missing"] = {"code": exc.error.code, "message": exc.error.message}
    except BaseException as exc:  # report, don't crash: the test reads the step that failed
        out.failed(exc)
    return out


def main() -> None:
    scenario, transport, *target = sys.argv[1:]
    print(json.dumps(asyncio.run(run(scenario, transport, target))), flush=True)


if __name__ == "__main__":
    main()
