"""The counted bench (bench/instructions.py) runs the stdio path under valgrind for the floor and
mcpkit, the client path for mcpkit's Client on both loops, and the proxy path for mcpkit's proxy,
and reports per-call counts from the difference of two runs (``--bytecodes``: bytecodes
rather than instructions, no valgrind). Only that it measures is checked (counts present, per call positive, the table
written), never a figure."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "bench" / "instructions.py"


def test_the_stdio_path_is_counted_per_call_for_the_floor_and_mcpkit(tmp_path: Path) -> None:
    assert shutil.which("valgrind"), "valgrind is missing: scripts/install_system_deps.sh installs it"
    out = tmp_path / "counts.json"
    cp = subprocess.run([sys.executable, str(SCRIPT), "--paths", "stdio", "--sides", "floor,mcpkit",
                         "--calls", "5,25", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["calls"] == [5, 25]
    for side in ("floor", "mcpkit"):
        counts = data["counts"]["stdio"][side]
        assert counts["Ir"] > 1000, (side, counts)  # a call is thousands of instructions, never none
        assert all(v == v for v in counts.values())  # no NaN
    assert "| stdio | mcpkit |" in cp.stdout and "| stdio | floor | " in cp.stdout


def test_the_proxy_path_counts_mcpkit_proxy_in_front_of_a_real_backend(tmp_path: Path) -> None:
    out = tmp_path / "counts.json"
    cp = subprocess.run([sys.executable, str(SCRIPT), "--paths", "proxy", "--sides", "mcpkit", "--calls", "2,6",
                         "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    assert json.loads(out.read_text())["counts"]["proxy"]["mcpkit"]["Ir"] > 1000


def test_the_client_path_counts_mcpkit_on_both_loops(tmp_path: Path) -> None:
    out = tmp_path / "counts.json"
    cp = subprocess.run([sys.executable, str(SCRIPT), "--paths", "client", "--sides", "mcpkit", "--calls", "2,6",
                         "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    counts = json.loads(out.read_text())["counts"]["client"]
    assert set(counts) == {"mcpkit", "mcpkit@uvloop"}
    assert all(c["Ir"] > 1000 for c in counts.values()), counts


def test_the_client_driver_takes_a_loop_only_where_it_has_one() -> None:
    driver = ROOT / "bench" / "client_floor.py"
    server = [sys.executable, str(ROOT / "bench" / "servers" / "floor_stdio.py")]
    cp = subprocess.run([sys.executable, str(driver), "asyncio", "20", "--loop", "uvloop", "--", *server],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0 and json.loads(cp.stdout)["calls_per_s"] > 0, cp.stderr[-2000:]
    for bad in (["driver", "20", "--loop", "uvloop"], ["asyncio", "20", "--loop", "trio"]):
        cp = subprocess.run([sys.executable, str(driver), *bad, "--", *server], capture_output=True, text=True,
                            timeout=60)
        assert cp.returncode == 1 and len(cp.stderr.strip().splitlines()) == 1, cp.stderr


def test_bad_arguments_are_refused_with_one_line() -> None:
    cp = subprocess.run([sys.executable, str(SCRIPT), "--paths", "stdio,nowhere"], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 2 and "unknown path or side: nowhere" in cp.stderr
    cp = subprocess.run([sys.executable, str(SCRIPT), "--calls", "30,10"], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 2 and "the first smaller" in cp.stderr


def test_bytecodes_are_counted_per_call_on_the_stdio_http_and_proxy_paths(tmp_path: Path) -> None:
    out = tmp_path / "counts.json"
    cp = subprocess.run([sys.executable, str(SCRIPT), "--bytecodes", "--paths", "stdio,http,proxy",
                         "--sides", "floor,mcpkit", "--calls", "5,25", "--json", str(out)],
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    counts = json.loads(out.read_text())["counts"]
    assert set(counts["proxy"]) == {"floor", "raw", "mcpkit"}
    for path, by_side in counts.items():
        for side, c in by_side.items():
            assert set(c) == {"bytecodes"} and c["bytecodes"] > 20, (path, side, c)  # a call runs Python code
    assert "# Bytecodes per call" in cp.stdout and "| stdio | mcpkit |" in cp.stdout
    # A saved run renders as the same table.
    cp2 = subprocess.run([sys.executable, str(SCRIPT), "--render", str(out)], capture_output=True, text=True, timeout=60)
    assert cp2.returncode == 0 and "| http | floor |" in cp2.stdout, cp2.stderr
