"""The official conformance harness, run against conformance/everything_server.py (server
legs) and against mcpkit's client through conformance/client.py (client leg).

Each leg installs Node 22 and the harness from npm on first use (cached); the server legs
start the fixture server on a free loopback port, the client leg lets the harness start a
mock server per scenario. Every leg fails on any check not in its baseline file.
"""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import ROOT, subprocess_env


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = subprocess_env(PYTHON=sys.executable)
    return subprocess.run(["bash", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_server_legs_both_revisions_on_one_endpoint() -> None:
    # One everything_server process serves every leg: 2026-07-28 and 2025-11-25 side by side.
    proc = _run("conformance/run_server_legs.sh", "requirements", "suite", "legacy-requirements", "legacy-suite")
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance server legs failed:\n{out[-6000:]}"
    assert "scored for requirements 2026-07-28: 37 passed, 0 failed" in out
    assert "scored for requirements 2025-11-25: 30 passed, 0 failed" in out
    # Unscored but run: the tasks-* extension scenarios pass too (50 scenarios, none failing).
    assert "50 passed, 0 failed" in out


def test_server_skills_leg_no_check_skipped() -> None:
    # The sep-2640 skills scenarios run by name (no requirement set holds them); each must pass
    # with every check run: a server without the extension "passes" them with all skipped.
    proc = _run("conformance/run_server_legs.sh", "skills")
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance skills leg failed:\n{out[-6000:]}"
    for scenario, checks in (("enumeration", 32), ("manifest", 6), ("directory", 7)):
        assert f"sep-2640-skills-{scenario}" in out
        assert f"checks: {checks} passed, 0 failed, 0 warnings, 0 skipped" in out


def test_client_leg_2026_07_28() -> None:
    proc = _run("conformance/run_client_leg.sh")
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance client leg failed:\n{out[-6000:]}"
    # Every scored scenario passes (auth/* included), and so does every extension scenario
    # (client-credentials-*, enterprise-managed-authorization, dpop, dpop-nonce, wif-jwt-bearer).
    assert "scored for requirements 2026-07-28: 32 passed, 0 failed (of 32 required)" in out
    assert "39 passed, 0 failed" in out
    # Then the four sep-2640 skills client scenarios, by name, each with its one check run.
    assert "===== client leg, skills: exit 0 =====" in out
    assert out.count("checks: 1 passed, 0 failed, 0 warnings, 0 skipped") >= 4


def test_client_legacy_auth_backcompat_2025_03_26() -> None:
    # The two 2025-03-26 back-compat scenarios (no resource metadata; no metadata at all) are
    # in neither requirement set: run them by name.
    for scenario in ("auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"):
        cmd = f"{sys.executable} {ROOT / 'conformance' / 'client.py'}"
        proc = _run("conformance/run.sh", "client", cmd, "--scenario", scenario)
        out = proc.stdout + proc.stderr
        print(out)
        assert proc.returncode == 0, f"{scenario} failed:\n{out[-4000:]}"
        assert proc.stdout.rstrip().endswith("1 passed, 0 failed")


def test_client_leg_2025_11_25() -> None:
    proc = _run("conformance/run_client_leg.sh", "2025-11-25")
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 0, f"conformance client leg (2025-11-25) failed:\n{out[-6000:]}"
    # Every scored scenario passes, auth/* included; the extension scenarios too.
    assert "scored for requirements 2025-11-25: 18 passed, 0 failed (of 18 required)" in out
    assert "25 passed, 0 failed" in out
