"""A server for the tasks extension tests (tests/test_tasks.py).

Serve it with ``python -m mcpkit serve [--http --port P] tests/servers/tasks_server.py[:FACTORY]``:

- the module-level ``server`` installs tasks (``server.use(Tasks(...))``, poll interval 50 ms);
- ``short_ttl`` enables them with tasks expiring :data:`SHORT_TTL_MS` after creation;
- ``plain`` registers the same tools on a server *without* tasks (all synchronous).
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, MCPError, Server, ToolError
from mcpkit.extensions.tasks import Tasks

SHORT_TTL_MS = 600
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _elicit(message: str, schema: dict) -> dict:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def build(*, tasks: bool = True, ttl_ms: int | None = 60_000) -> Server:
    server = Server("tasks-test-server", "1.0.0")
    if tasks:
        server.use(Tasks(ttl_ms=ttl_ms, poll_interval_ms=50))

    def task(support: str, start: str = "immediate") -> dict:
        return {Tasks.id: {"support": support, "start": start}} if tasks else {}

    async def start_task(ctx: Context) -> bool:
        return await ctx.extension(Tasks).start() if tasks else False

    def task_id(ctx: Context) -> str | None:
        return ctx.extension(Tasks).task_id if tasks else None

    @server.tool()
    def greet(name: str) -> str:
        """Greets synchronously (never a task)."""
        return f"Hello, {name}!"

    @server.tool(extensions=task("optional"))
    async def slow(seconds: float = 0.2, label: str = "job") -> str:
        """Sleeps, then reports."""
        await asyncio.sleep(seconds)
        return f"{label} done after {seconds:g}s"

    @server.tool(extensions=task("optional"))
    async def tool_error() -> str:
        """Fails the tool way (isError result)."""
        await asyncio.sleep(0.05)
        raise ToolError("the tool failed")

    @server.tool(extensions=task("optional"))
    async def protocol_error() -> str:
        """Fails with a JSON-RPC error."""
        await asyncio.sleep(0.05)
        raise MCPError(-32603, "the job broke", {"why": "testing"})

    @server.tool(extensions=task("optional"))
    async def crash() -> str:
        """Raises an unexpected exception (a tool error, as for synchronous calls)."""
        await asyncio.sleep(0.05)
        raise RuntimeError("boom")

    @server.tool(extensions=task("optional"))
    async def ask_name(ctx: Context) -> str:
        """Asks for a name (elicitation key ``user_name``), then greets."""
        r = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {r.content['name']}!" if r.action == "accept" else f"no name ({r.action})"

    @server.tool(extensions=task("optional"))
    async def ask_twice(ctx: Context) -> str:
        """Asks two questions at once, then a third one with a key already used."""
        both = await ctx.ask({"name": _elicit("Name?", NAME_SCHEMA), "ok": _elicit("OK?", OK_SCHEMA)})
        again = await ctx.elicit("Name again?", NAME_SCHEMA, key="name")
        return f"{both['name'].content['name']}/{both['ok'].content['ok']}/{again.content['name']}"

    @server.tool(extensions=task("required"))
    async def required_job(seconds: float = 0.1) -> str:
        """Only runs as a task."""
        await asyncio.sleep(seconds)
        return "required job done"

    @server.tool(extensions=task("required", "explicit"))
    async def mrtr_then_task(ctx: Context) -> str:
        """Asks synchronously (MRTR), then continues as a task."""
        r = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        started = await start_task(ctx)
        await asyncio.sleep(0.1)
        return f"Hello, {r.content['name']}! (task={started}, id={'yes' if task_id(ctx) else 'no'})"

    @server.tool(extensions=task("optional", "explicit"))
    async def maybe_task(ctx: Context, slow: bool = False) -> str:
        """A task only when ``slow``; fast calls answer synchronously."""
        if not slow:
            return "fast answer"
        await start_task(ctx)
        await asyncio.sleep(0.1)
        return "slow answer"

    @server.tool(extensions=task("optional"))
    async def progress_job(ctx: Context) -> str:
        """Reports progress messages (they become the task's statusMessage)."""
        await ctx.report_progress(1, 2, message="half way")
        await asyncio.sleep(0.4)
        return "progressed"

    return server


server = build()


def short_ttl() -> Server:
    return build(ttl_ms=SHORT_TTL_MS)


def plain() -> Server:
    return build(tasks=False)
