"""A server with long-running tools (the tasks extension, ``io.modelcontextprotocol/tasks``)
that ask the user and the model for input on the way.

    mcpkit serve examples/tasks_server.py                     # stdio
    mcpkit serve --http examples/tasks_server.py              # http://127.0.0.1:8000/mcp
    mcpkit call --task render scene=garden examples/tasks_server.py

``examples/client_handlers.py`` calls it with elicitation and sampling handlers.
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, Server
from mcpkit.extensions.tasks import Tasks

server = Server("mcpkit-tasks-example", "1.0.0",
                instructions="render and write_caption run as tasks for clients that declare the extension.")
server.use(Tasks())

#: A task when the client declares the extension, a plain call otherwise.
AS_TASK = {Tasks.id: {"support": "optional"}}


@server.tool(extensions=AS_TASK)
async def render(ctx: Context, scene: str, frames: int = 3) -> str:
    """Render a scene, frame by frame (a task when the client asks for one)."""
    for frame in range(1, frames + 1):
        await ctx.report_progress(frame, frames, f"frame {frame} of {frames}")  # a task's statusMessage
        await asyncio.sleep(0.1)
    return f"rendered {scene!r} in {frames} frames"


@server.tool(extensions=AS_TASK)
async def write_caption(ctx: Context, scene: str) -> str:
    """Ask the user for a tone, then ask the client's model for a caption in that tone."""
    answer = await ctx.elicit("Which tone should the caption have?", {
        "type": "object", "properties": {"tone": {"type": "string", "enum": ["funny", "formal"]}},
        "required": ["tone"]})
    if answer.action != "accept" or not answer.content:
        return "no caption (the user declined)"
    tone = answer.content["tone"]
    reply = await ctx.sample(f"Write a {tone} one-line caption for: {scene}", max_tokens=60)
    text = reply.content.text if hasattr(reply.content, "text") else str(reply.content)
    return f"{tone} caption: {text}"


if __name__ == "__main__":
    server.run()
