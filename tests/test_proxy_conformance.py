"""The official conformance server legs (both revisions) against ``mcpkit proxy --http`` in
front of conformance/everything_server.py, with the fixture serving one era only: modern
(``legacy=False``) and legacy (2025-11-25 only). Each backend era is one run of the four
legs and the strict skills leg (every sep-2640 scenario, no check skipped or warning), by
conformance/run_server_legs.sh with ``CONFORMANCE_VIA_PROXY=1``.

Through a modern backend every leg passes against the same baselines as the fixture itself
(nothing listed). Through a legacy backend the 2026-07-28 legs use
conformance/baseline-proxy-legacy-backend-2026-07-28.yml: exactly what the 2025-11-25 wire
cannot carry (question keys; per-request client capabilities are carried by the session pool).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT, subprocess_env

SCORED = {
    "modern": ("scored for requirements 2026-07-28: 37 passed, 0 failed",
               "scored for requirements 2025-11-25: 30 passed, 0 failed"),
    # input-required-result-basic-elicitation (question keys): see the baseline.
    "legacy": ("scored for requirements 2026-07-28: 36 passed, 1 failed",
               "scored for requirements 2025-11-25: 30 passed, 0 failed"),
}


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_server_legs_through_the_proxy(era: str) -> None:
    env = subprocess_env(PYTHON=sys.executable, CONFORMANCE_VIA_PROXY="1", CONFORMANCE_BACKEND_ERA=era)
    proc = subprocess.run(["bash", "conformance/run_server_legs.sh"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance server legs through the proxy ({era} backend) failed:\n{out[-6000:]}"
    assert f"--era {era}" in out  # the fixture really served one era only
    for line in SCORED[era]:
        assert line in out
    assert "===== leg skills: exit 0 =====" in out  # the skills extension, carried by the proxy
    for scenario in ("enumeration", "manifest", "directory"):
        assert f"sep-2640-skills-{scenario}  PASS" in out
