"""The operating middleware of ``mcpkit serve`` (and its workers), installed in one order.

Outermost first: OpenTelemetry (so every request, a refused one too, has its span), the
request log (inside the span, so its lines carry the trace and span ids; outside the
limits, so that refusals are logged), rate limits, then the tools' budgets (a
``tools/call`` wrapper).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Server

LOG_FORMATS = ("text", "json")


def operate(server: Server, transport: str, *, otel: bool = False, rate_limits: Sequence[str] = (),
            rate_store: Any = None, log_format: str | None = None, log_arguments: bool = False,
            max_seconds: Sequence[str] = (), max_body_bytes: Sequence[str] = ()) -> None:
    """Install what the options ask for on ``server``. Raises ValueError (``--rate-limit: ...``,
    ``--max-seconds ...``: one line) for a bad value, ImportError when ``otel`` cannot be had."""
    if log_format not in (None, *LOG_FORMATS):
        raise ValueError(f"--log-format {log_format!r}: choose text or json")
    if log_arguments and log_format != "json":
        raise ValueError("--log-arguments needs --log-format json")
    if max_seconds or max_body_bytes:
        from .server.budget import parse_budget

        parse_budget(list(max_seconds), list(max_body_bytes)).install(server)
    if rate_limits:
        from .server.ratelimit import RateLimits

        try:
            limits = RateLimits(rate_limits, store=rate_store)
        except ValueError as exc:
            raise ValueError(f"--rate-limit: {exc}") from None
        limits.install(server)
    if log_format == "json":
        from .server.requestlog import RequestLog

        RequestLog(transport=transport, arguments=log_arguments).install(server)
    if otel or "opentelemetry.trace" in sys.modules or "opentelemetry.metrics" in sys.modules:
        # (without --otel, setup only instruments when OpenTelemetry is loaded and configured:
        # otherwise observability itself is not loaded before the first answer)
        from .observability import setup

        setup(server, transport, force=otel)
