"""One server, several worker processes behind one port (uvicorn ``--workers``).

    export MCPKIT_STATE_KEYS=$(python -c "import secrets; print(secrets.token_hex(32))")
    uvicorn examples.multi_worker:app --workers 4 --host 127.0.0.1 --port 8000

What makes it work:

- 2026-07-28 is stateless: any worker can answer any request.
- A tool that asks the user (MRTR) is answered in two requests that may land on two
  workers: the ``requestState`` sealed by one must open in the other, so every worker gets
  the same keys (``MCPKIT_STATE_KEYS``, comma-separated; the first one seals, all open, so
  keys can be rotated). Without them each worker makes its own key and a retry that lands
  on another worker fails with ``-32602 "Invalid or expired requestState"``.
- 2025-11-25 sessions live in the worker that created them, so this deployment is
  modern-only (``legacy=False``); serve legacy clients with one worker, or route by
  ``Mcp-Session-Id`` at the load balancer. The same goes for tasks (route ``tasks/*`` by
  their ``Mcp-Name``) and for ``subscriptions/listen`` across workers (give the Server a
  shared ``bus=``).
"""

from __future__ import annotations

import os

from mcpkit import Context, Server

if not os.environ.get("MCPKIT_STATE_KEYS"):
    raise SystemExit("set MCPKIT_STATE_KEYS (the same value in every worker), e.g. "
                     "export MCPKIT_STATE_KEYS=$(python -c \"import secrets; print(secrets.token_hex(32))\")")

server = Server("mcpkit-multi-worker", "1.0.0", legacy=False)  # keys: MCPKIT_STATE_KEYS


@server.tool()
def worker() -> int:
    """The process id of the worker that answered."""
    return os.getpid()


@server.tool()
async def book(ctx: Context, city: str) -> str:
    """Book a trip after the user confirms (two requests, maybe two workers)."""
    answer = await ctx.elicit(f"Book a trip to {city}?", {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
    if answer.action != "accept" or not (answer.content or {}).get("ok"):
        return "not booked"
    return f"booked {city} (confirmed on worker {os.getpid()})"


app = server.http_app()
