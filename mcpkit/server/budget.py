"""Budgets for tool calls: a cap on the size of a call's arguments and on its wall time.

::

    from mcpkit.server.budget import Budget

    Budget(max_seconds=30, max_body_bytes=64_000, tools={"render": Budget(max_seconds=120)}).install(server)

``max_body_bytes`` bounds a ``tools/call``'s arguments as JSON (what the request body
mostly is; the HTTP transport's own ``max_body_bytes`` still caps whole bodies with 413);
``max_seconds`` bounds the call's wall time: past it the tool is cancelled (an ``async``
tool at its next ``await``; a sync tool's thread cannot be stopped, its answer is dropped)
and the caller gets :class:`~mcpkit.errors.BudgetExceeded` (JSON-RPC ``-32030``), while the
server keeps serving. ``tools`` gives one tool its own budget (its fields replace the
server-wide ones that it sets). From the command line: ``mcpkit serve --max-seconds 30
--max-seconds render:120 --max-body-bytes 65536``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import BudgetExceeded as BudgetExceeded
from ..protocol.errors import BUDGET_EXCEEDED as BUDGET_EXCEEDED
from ..protocol.types import CallToolParams

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Handler
    from ._server import Server

__all__ = ["BUDGET_EXCEEDED", "Budget", "BudgetExceeded", "parse_budget"]


class Budget:
    """The middleware: ``Budget(max_seconds=..., max_body_bytes=..., tools=...).install(server)``."""

    def __init__(self, *, max_seconds: float | None = None, max_body_bytes: int | None = None,
                 tools: Mapping[str, Budget] | None = None) -> None:
        if max_seconds is not None and not max_seconds > 0:
            raise ValueError(f"max_seconds must be positive, not {max_seconds!r}")
        if max_body_bytes is not None and (isinstance(max_body_bytes, bool) or max_body_bytes < 1):
            raise ValueError(f"max_body_bytes must be a positive number of bytes, not {max_body_bytes!r}")
        self.max_seconds = max_seconds
        self.max_body_bytes = max_body_bytes
        self.tools: dict[str, tuple[float | None, int | None]] = {}
        for name, own in (tools or {}).items():
            if own.tools:
                raise ValueError(f"the budget of tool {name!r} cannot have tools of its own")
            self.tools[name] = (own.max_seconds if own.max_seconds is not None else max_seconds,
                                own.max_body_bytes if own.max_body_bytes is not None else max_body_bytes)
        if max_seconds is None and max_body_bytes is None and not self.tools:
            raise ValueError("Budget needs max_seconds, max_body_bytes or a tool's own budget")

    def install(self, server: Server) -> Budget:
        server.wrap_method("tools/call", self)
        return self

    def limits(self, tool: str) -> tuple[float | None, int | None]:
        """(max seconds, max argument bytes) for ``tool``; None: unlimited."""
        return self.tools.get(tool, (self.max_seconds, self.max_body_bytes))

    async def __call__(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        name = params.name if isinstance(params, CallToolParams) else None
        seconds, size = self.limits(name) if name is not None else (self.max_seconds, self.max_body_bytes)
        if size is not None and isinstance(params, CallToolParams) and params.arguments:
            import msgspec

            if len(msgspec.json.encode(params.arguments)) > size:
                raise BudgetExceeded("maxBodyBytes", size, name)
        if seconds is None:
            return await call_next(ctx, params)
        import asyncio

        try:
            async with asyncio.timeout(seconds):
                return await call_next(ctx, params)
        except TimeoutError:
            raise BudgetExceeded("maxSeconds", seconds, name) from None


def _per_tool(option: str, values: list[str], unit: str, example: str) -> dict[str | None, float]:
    out: dict[str | None, float] = {}
    for text in values:
        tool, _, number = text.rpartition(":")
        try:
            value = float(number) if unit == "SECONDS" else int(number)
        except ValueError:
            raise ValueError(f"{option} {text!r}: expected [TOOL:]{unit}, e.g. {example}") from None
        if not value > 0:
            raise ValueError(f"{option} {text!r}: must be positive")
        out[tool or None] = value
    return out


def parse_budget(max_seconds: list[str], max_body_bytes: list[str]) -> Budget:
    """The command line's ``--max-seconds [TOOL:]S`` and ``--max-body-bytes [TOOL:]N`` (each
    repeatable) as one :class:`Budget`; ValueError saying which value is wrong."""
    seconds = _per_tool("--max-seconds", max_seconds, "SECONDS", "30 or render:120")
    sizes = {k: int(v) for k, v in _per_tool("--max-body-bytes", max_body_bytes, "BYTES",
                                             "65536 or upload:1000000").items()}
    names = {n for n in (*seconds, *sizes) if n is not None}
    tools = {n: Budget(max_seconds=seconds.get(n), max_body_bytes=sizes.get(n)) for n in names}
    return Budget(max_seconds=seconds.get(None), max_body_bytes=sizes.get(None), tools=tools)
