"""The stdio fuzzer (``fuzz/stdio_fuzz.py``) against ``examples/demo.py``: a few thousand
hostile and valid frames; no crash, no unanswered or duplicated id, no invalid output line.

Self-contained: the fuzzer module is loaded from its file; it spawns its own server.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _fuzzer() -> Any:
    path = ROOT / "fuzz" / "stdio_fuzz.py"
    spec = importlib.util.spec_from_file_location("_mcpkit_stdio_fuzz", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def assert_clean(summary: dict[str, Any]) -> None:
    shown = json.dumps(summary, indent=1, default=str)[:6000]
    assert summary["ok"], shown
    assert summary["unanswered"] == summary["duplicates"] == summary["unexpected"] == summary["invalid_lines"] == 0, shown
    assert summary["server_up_until_eof"] and summary["exit_code"] == 0 and summary["tracebacks"] == 0, shown
    # (a request cancelled before it ran, or the line past the limit, is owed but excused)
    assert summary["owed"] > 0 and summary["answered"] >= summary["owed"] - summary["excused_unanswered"], shown


@pytest.mark.parametrize("seed", [1, 2])
def test_stdio_fuzz(seed: int) -> None:
    summary = _fuzzer().run(cases=3000, seed=seed, settle=40.0)
    assert_clean(summary)
    assert summary["kinds"]["deep"] > 0 and summary["kinds"]["bom"] > 0 and summary["kinds"]["surrogate"] > 0


def test_stdio_fuzz_with_a_line_past_the_limit() -> None:
    assert_clean(_fuzzer().run(cases=300, seed=7, oversize=True, settle=40.0))


# Known hole outside this work's files (mcpkit/server/_legacy.py: ``dict(params.get("_meta") or {})``
# raises on a non-object _meta inside a 2025-11-25 session, and the request is never answered).
# Remove the marker once that is fixed.
def test_stdio_fuzz_in_a_legacy_session() -> None:
    assert_clean(_fuzzer().run(cases=3000, seed=1, legacy=True, settle=10.0))
