"""``mcpkit serve``'s operating options: request logs, budgets, probes, trusted proxies."""

from __future__ import annotations

import argparse
from typing import Any

#: (dest, option) of the operating options that only mean something with --http
HTTP_ONLY = (("healthz", "--healthz"), ("readyz", "--readyz"), ("trust_proxy", "--trust-proxy"))


def add_arguments(ops: Any) -> None:
    ops.add_argument("--log-format", choices=("text", "json"),
                     help="json: one JSON line per request on stderr (method, target, id, duration, outcome, "
                          "era, transport, principal, trace ids); never tokens or argument values")
    ops.add_argument("--log-arguments", action="store_true",
                     help="with --log-format json: also log tool and prompt arguments (they may hold secrets)")
    ops.add_argument("--max-seconds", action="append", metavar="[TOOL:]SECONDS", default=[],
                     help="a tool call running longer is cancelled and answered with an error (repeatable: "
                          "30 for every tool, render:120 for one)")
    ops.add_argument("--max-body-bytes", action="append", metavar="[TOOL:]BYTES", default=[],
                     help="a tool call whose arguments are larger (as JSON) is refused (repeatable, as --max-seconds)")
    ops.add_argument("--healthz", metavar="PATH",
                     help="the liveness probe's path for --http (default /healthz; '' turns it off)")
    ops.add_argument("--readyz", metavar="PATH",
                     help="the readiness probe's path for --http (default /readyz: Redis answers, readiness checks "
                          "pass; '' turns it off)")
    ops.add_argument("--trust-proxy", action="append", metavar="ADDRESS[/BITS]",
                     help="a reverse proxy whose X-Forwarded-For names the caller (repeatable; default: none, "
                          "forwarded headers are ignored)")


def http_options(ns: argparse.Namespace) -> dict[str, Any]:
    """The HTTP app's options these flags set (JSON-serialisable: they reach the workers)."""
    out: dict[str, Any] = {}
    if ns.healthz is not None:
        out["healthz"] = ns.healthz or None
    if ns.readyz is not None:
        out["readyz"] = ns.readyz or None
    if ns.trust_proxy:
        out["trusted_proxies"] = list(ns.trust_proxy)
    return out


def middleware_options(ns: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`mcpkit._operating.operate` these flags set (JSON-serialisable)."""
    return {"otel": bool(ns.otel), "rate_limits": list(ns.rate_limit), "log_format": ns.log_format,
            "log_arguments": bool(ns.log_arguments), "max_seconds": list(ns.max_seconds),
            "max_body_bytes": list(ns.max_body_bytes)}
