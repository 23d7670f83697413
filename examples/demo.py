"""A small but real MCP server: typed tools, a resource, a resource template, a prompt and
completions; ``save_note`` changes a note and notifies its subscribers. Run it over stdio with
``python examples/demo.py``, or look at it with ``mcpkit discover -- python examples/demo.py``."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Annotated, Literal

from mcpkit import Context, Server, ToolError

server = Server(
    "mcpkit-demo",
    "1.0.0",
    title="mcpkit demo",
    instructions="Unit conversions and a tiny notes store. Use convert_temperature for weather questions.",
    ttl_ms=60_000,
    cache_scope="public",
)

NOTES = {
    "groceries": "eggs, milk, coffee",
    "ideas": "write an MCP server in one file",
}


@dataclasses.dataclass
class Conversion:
    value: float
    unit: str


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def convert_temperature(
    value: Annotated[float, "The temperature to convert"],
    to: Annotated[Literal["celsius", "fahrenheit"], "The unit to convert to"] = "celsius",
) -> Conversion:
    """Convert a temperature between Celsius and Fahrenheit."""
    if to == "celsius":
        return Conversion(round((value - 32) * 5 / 9, 2), "celsius")
    return Conversion(round(value * 9 / 5 + 32, 2), "fahrenheit")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count_down(ctx: Context, start: int = 3) -> str:
    """Count down to zero, reporting progress on the way."""
    if start < 0 or start > 100:
        raise ToolError("start must be between 0 and 100")
    import asyncio  # (here: the server answers discover and the lists before asyncio loads)

    for done in range(start + 1):
        await ctx.report_progress(done, start, f"{start - done} to go")
        if done < start:
            await asyncio.sleep(0.05)  # a count down one can watch (the Inspector shows it live)
    return "liftoff"


@server.resource("demo://clock", mime_type="text/plain", ttl_ms=0, cache_scope="public")
def clock() -> str:
    """The server's current UTC time."""
    return dt.datetime.now(dt.UTC).isoformat()


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note from the notes store, by name."""
    return NOTES[name]  # a KeyError means "no such resource"


@server.tool()
def save_note(name: str, text: str) -> str:
    """Save a note and tell subscribers of notes://{name} that it changed."""
    NOTES[name] = text
    server.notify_resource_updated(f"notes://{name}")
    return f"saved notes://{name}"


@server.completion(resource="notes://{name}")
def complete_note(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return sorted(n for n in NOTES if n.startswith(value))


@server.prompt(title="Summarize a note")
def summarize(name: str, style: str = "bullet points") -> str:
    """Ask the model to summarize one note."""
    return f"Summarize my note '{name}' as {style}:\n\n{NOTES.get(name, '(no such note)')}"


@server.completion(prompt="summarize", argument="name")
def complete_summarize(argument: str, value: str, context: dict[str, str]) -> list[str]:
    return sorted(n for n in NOTES if n.startswith(value))


if __name__ == "__main__":
    server.run()
