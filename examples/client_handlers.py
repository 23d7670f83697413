"""A client that answers the server's questions: an elicitation handler (the user), a sampling
handler (the model) and roots. The same handlers answer synchronous calls (MRTR on
2026-07-28, server requests on 2025-11-25) and tasks (``input_required``).

    python examples/client_handlers.py                  # runs examples/tasks_server.py over stdio
    python examples/client_handlers.py http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcpkit import Client
from mcpkit.protocol import types as t

SERVER = [sys.executable, str(Path(__file__).with_name("tasks_server.py"))]


def ask_user(params: t.ElicitRequestParams) -> t.ElicitResult:
    """Elicitation: a real client shows ``params.message`` and a form built from
    ``params.requestedSchema``; this one always picks "funny"."""
    print(f"  server asks the user: {params.message}")
    return t.ElicitResult(action="accept", content={"tone": "funny"})


async def ask_model(params: t.CreateMessageRequestParams) -> dict:
    """Sampling: a real client calls its LLM with ``params.messages`` (sync or async handlers)."""
    prompt = params.messages[-1].content
    print(f"  server asks the model: {getattr(prompt, 'text', prompt)}")
    return {"role": "assistant", "content": {"type": "text", "text": "A garden that mows itself. Almost."},
            "model": "example-model", "stopReason": "endTurn"}


async def main(target: str | list[str]) -> None:
    async with Client(target, elicitation=ask_user, sampling=ask_model,
                      roots=[{"uri": "file:///home/me/project", "name": "project"}]) as client:
        print("synchronous call:")
        result = await client.call_tool("write_caption", {"scene": "a garden"})
        print(" ", result.content[0].text)

        print("the same call as a task:")
        handle = await client.call_tool("write_caption", {"scene": "a garden"}, task=True)
        result = await handle.result(on_status=lambda status, message: print(f"  task {status}"))
        print(" ", result.content[0].text)

        print("a task with progress:")
        handle = await client.call_tool("render", {"scene": "garden", "frames": 3}, task=True)
        result = await handle.result(on_status=lambda status, message: print(f"  task {status}: {message or ''}"))
        print(" ", result.content[0].text)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else SERVER))
