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
import traceback
from importlib.metadata import version
from typing import Any


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


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

    out: dict[str, Any] = {"peer": "mcp (PyPI)", "peerVersion": version("mcp"), "mode": "legacy",
                           "transport": transport, "scenario": scenario}
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

    step = "connect"
    try:
        async with Client(server, mode="legacy", read_timeout_seconds=30, logging_callback=on_log,
                          message_handler=on_message, elicitation_callback=on_elicit,
                          sampling_callback=on_sample, list_roots_callback=on_roots, cache=None) as client:
            out["protocolVersion"] = client.protocol_version
            info = client.server_info
            out["serverInfo"] = _dump(info) if info is not None else None

            step = "ping"
            out["ping"] = _dump(await client.send_ping())

            step = "tools/list"
            listed = await client.list_tools()
            out["tools"] = {t.name: _dump(t) for t in listed.tools}

            step = "tools/call add"
            out["add"] = _dump(await client.call_tool("add", {"a": 2, "b": 3}))

            if scenario == "demo":
                step = "tools/call convert_temperature"
                out["convert"] = _dump(await client.call_tool("convert_temperature", {"value": 212, "to": "celsius"}))

                step = "tools/call count_down (progress)"
                progress: list[dict[str, Any]] = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    progress.append({"progress": done, "total": total, "message": message})

                out["countDown"] = _dump(
                    await client.call_tool("count_down", {"start": 3}, progress_callback=on_progress))
                out["progress"] = progress

                step = "tools/call count_down (tool error)"
                out["toolError"] = _dump(await client.call_tool("count_down", {"start": 500}))

                step = "resources/read"
                out["note"] = _dump(await client.read_resource("notes://groceries"))

                step = "prompts/get"
                out["prompt"] = _dump(await client.get_prompt("summarize", {"name": "ideas"}))
            else:
                step = "logging/setLevel"
                out["setLevel"] = _dump(await client.set_logging_level("info"))
                step = "tools/call log_steps"
                out["logSteps"] = _dump(await client.call_tool("log_steps", {"steps": 2}))
                await _wait_for(lambda: len(logs) >= 2, 5)
                out["logs"] = list(logs)

                step = "tools/call ask_all (elicitation, sampling, roots)"
                out["askAll"] = _dump(await client.call_tool("ask_all", {}))
                out["asked"] = list(asked)

                step = "resources/subscribe"
                out["subscribe"] = _dump(await client.subscribe_resource("mem://counter"))
                step = "tools/call touch"
                out["touch"] = _dump(await client.call_tool("touch", {"uri": "mem://counter"}))
                await _wait_for(lambda: any(n.get("method") == "notifications/resources/updated" for n in notes))

                step = "tools/call add_tool"
                out["addTool"] = _dump(await client.call_tool("add_tool", {"name": "py_peer_tool"}))
                await _wait_for(lambda: any(n.get("method") == "notifications/tools/list_changed" for n in notes))
                out["notifications"] = list(notes)
                step = "tools/list (after add_tool)"
                out["toolsAfter"] = sorted(t.name for t in (await client.list_tools()).tools)

                step = "resources/read (missing)"
                try:
                    await client.read_resource("mem://items/nothing")
                    out["missing"] = {"code": None}
                except MCPError as exc:
                    out["missing"] = {"code": exc.error.code, "message": exc.error.message}
    except BaseException as exc:  # report, don't crash: the test reads the step that failed
        leaf = _leaves(exc)[0]
        out["error"] = {"step": step, "type": type(leaf).__name__, "message": str(leaf),
                        "code": getattr(getattr(leaf, "error", None), "code", None),
                        "traceback": traceback.format_exc()[-4000:]}
    return out


def main() -> None:
    scenario, transport, *target = sys.argv[1:]
    print(json.dumps(asyncio.run(run(scenario, transport, target))), flush=True)


if __name__ == "__main__":
    main()
