"""The HTTP fuzzer (``fuzz/http_fuzz.py``) against ``mcpkit serve --http examples/demo.py``
on a free loopback port: a few thousand hostile bodies and broken MCP headers; no 5xx, no
request without a response, every owed id answered once, well-formed JSON-RPC throughout.

Self-contained: the fuzzer module is loaded from its file; it starts its own server.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _fuzzer() -> Any:
    path = ROOT / "fuzz" / "http_fuzz.py"
    spec = importlib.util.spec_from_file_location("_mcpkit_http_fuzz", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def check(summary: dict[str, Any]) -> None:
    shown = json.dumps(summary, indent=1, default=str)[:6000]
    assert summary["ok"], shown
    assert summary["http_5xx"] == 0 and summary["no_response"] == 0, shown
    assert summary["dropped_connections"] == 0, shown  # refusals reach the client (lingering close)
    assert summary["unanswered"] == summary["duplicates"] == summary["unexpected"] == summary["invalid_lines"] == 0, shown
    assert summary["server_up_at_end"] and summary["tracebacks"] == 0, shown
    assert summary["owed"] > 0 and summary["statuses"].get(200, 0) > 0, shown


def test_http_fuzz() -> None:
    check(_fuzzer().run(cases=3000, seed=1))


# Known hole outside this work's files (mcpkit/server/_legacy.py: ``dict(params.get("_meta") or {})``
# raises on a non-object _meta inside a 2025-11-25 session: HTTP 500). Remove the marker once fixed.
def test_http_fuzz_in_a_legacy_session() -> None:
    check(_fuzzer().run(cases=3000, seed=1, legacy=0.5))
