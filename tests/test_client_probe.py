"""The stdio era probe when it goes wrong (issue 23, friction 7 and 15): a modern server whose
``server/discover`` fails reports that error, and a modern server too slow to answer the probe
never gets ``initialize`` on the process that may still answer it; the probe's budget follows
the client's ``probe_timeout`` and the CLI's ``--timeout``.

The servers are real subprocesses (tests/servers/era_stdio.py); each logs what it received
with its pid, so a test can tell which process got which request.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from mcpkit import EraCache
from mcpkit.client import Client, TransportError
from mcpkit.protocol.errors import MCPError
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit
from tests.helpers.paths import ERA_STDIO


def argv(mode: str, log: Path) -> list[str]:
    return [sys.executable, str(ERA_STDIO), mode, str(log)]


def requests_per_process(log: Path) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if not entry["response"] and entry["method"]:
            out[entry["pid"]].append(entry["method"])
    return dict(out)


def assert_no_process_got_both(log: Path) -> None:
    for pid, methods in requests_per_process(log).items():
        assert not ("server/discover" in methods and "initialize" in methods), (pid, methods)


# ------------------------------------------------------------ friction 7: discover fails
def test_a_failing_discover_in_a_modern_server_reports_its_own_error(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> None:
        with pytest.raises(MCPError) as info:
            async with Client(argv("modern-discover-fails", log), probe_timeout=2, era_cache=EraCache()):
                pass
        assert info.value.code == -32603
        assert "discover exploded" in info.value.message
        assert "not accepted now" not in str(info.value)

    run(main())


def test_the_cli_shows_the_discover_error_not_the_initialize_refusal(tmp_path: Path) -> None:
    proc = mcpkit("discover", "--timeout", "10", "--", *argv("modern-discover-fails", tmp_path / "log"))
    assert proc.returncode != 0
    assert "-32603" in proc.stderr and "discover exploded" in proc.stderr, proc.stderr
    assert "not accepted now" not in proc.stderr


def test_a_legacy_server_answering_discover_with_an_error_still_gets_initialize(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> str | None:
        async with Client(argv("legacy-32603", log), probe_timeout=2, era_cache=EraCache()) as client:
            return client.era

    assert run(main()) == "legacy"  # an error alone never settles the era: -32603 is what it sent


# ------------------------------------------------------------ friction 15: a slow modern server
def test_a_slow_modern_server_is_not_sent_initialize_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> None:
        client = Client(argv("modern+slow=1.5", log), probe_timeout=0.5, timeout=6, era_cache=EraCache())
        with pytest.raises(TransportError, match=r"no answer to server/discover within 0.5 s") as info:
            await client.start()
        assert "not accepted now" not in str(info.value)

    run(main())
    assert_no_process_got_both(log)
    # the probed process was replaced (killed while still starting, before it read anything);
    # initialize went to the fresh one only
    assert [m for m in requests_per_process(log).values() if "initialize" in m] == [["initialize"]]


def test_a_probe_budget_long_enough_lets_a_slow_modern_server_work(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> tuple[str | None, list[str]]:
        async with Client(argv("modern+slow=1.5", log), probe_timeout=5, era_cache=EraCache()) as client:
            return client.era, [t.name for t in await client.list_tools()]

    assert run(main()) == ("modern", ["echo"])
    procs = requests_per_process(log)
    assert len(procs) == 1 and "initialize" not in next(iter(procs.values()))


def test_a_silent_legacy_server_gets_initialize_on_a_fresh_process(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> str | None:
        async with Client(argv("legacy-silent", log), probe_timeout=0.5, era_cache=EraCache()) as client:
            await client.list_tools()
            return client.era

    assert run(main()) == "legacy"
    assert_no_process_got_both(log)


def test_cli_timeout_reaches_the_probe(tmp_path: Path) -> None:
    # Slower than the 5 s the probe used to stop at: a long enough --timeout now covers it.
    t0 = time.monotonic()
    proc = mcpkit("list", "tools", "--timeout", "12", "--", *argv("modern+slow=5.5", tmp_path / "log"))
    assert proc.returncode == 0, proc.stderr
    assert "echo" in proc.stdout
    assert time.monotonic() - t0 < 12
    assert_no_process_got_both(tmp_path / "log")


def test_cli_slow_first_start_is_named_as_slowness(tmp_path: Path) -> None:
    # Slow only on its first start (a first uvx/npx run): the probe gives up, the fresh process
    # refuses initialize, and the message says what happened.
    log = tmp_path / "log"
    proc = mcpkit("list", "tools", "--timeout", "4", "--", *argv("modern+slowonce=20", log))
    assert proc.returncode != 0
    assert "no answer to server/discover within 2 s" in proc.stderr, proc.stderr
    assert "not accepted now" not in proc.stderr
    assert_no_process_got_both(log)
