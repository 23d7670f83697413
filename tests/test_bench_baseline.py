"""The bench's before/after mode: ``bench/run.py --baseline REV`` measures mcpkit at another commit
in the same interleaved rounds. Only that it runs and reports is checked, never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs a git checkout")
def test_baseline_side_runs_in_the_same_rounds(tmp_path: Path) -> None:
    out = "test-baseline"
    cp = subprocess.run(
        [sys.executable, "bench/run.py", "--smoke", "--sides", "mcpkit", "--baseline", "HEAD",
         "--workloads", "import,cold,warm", "--no-pin", "--out", out],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    data = json.loads((REPO / "bench" / "results" / f"{out}.json").read_text())
    assert data["machine"]["baseline_commit"]
    rows = [r for r in data["rows"] if r["workload"] == "stdio warm" and r["unit"] == "req/s"]
    assert rows and rows[0]["mcpkit"] and rows[0]["baseline"]
    table = (REPO / "bench" / "results" / f"{out}.md").read_text()
    assert "vs baseline" in table
    for suffix in (".md", ".json"):
        (REPO / "bench" / "results" / f"{out}{suffix}").unlink()


def test_a_bad_baseline_is_refused_with_one_line() -> None:
    cp = subprocess.run([sys.executable, "bench/run.py", "--smoke", "--baseline", "no-such-rev-xyz"],
                        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert cp.returncode != 0
    assert "is not a commit" in cp.stderr
