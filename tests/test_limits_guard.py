"""The uvicorn version guard: mcpkit subclasses uvicorn's private protocol classes (the HTTP
limits, the lingering close) only under the uvicorn versions they were tested for; under any
other one it logs one warning line and serves with uvicorn's plain h11 protocol."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest
import uvicorn

from mcpkit.transports import _uvicorn_guard as guard
from mcpkit.transports._limits import Limits, uvicorn_options
from tests.helpers.paths import DEMO
from tests.helpers.servers import ServerProcess


@pytest.fixture(autouse=True)
def _fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "_warned", False)


@pytest.mark.parametrize("version", ["0.30.0", "0.34.2", "0.54.0", "0.54.0.dev1", "0.99.1"])
def test_tested_versions_may_be_subclassed(version: str) -> None:
    assert guard.supported(version)


def test_the_installed_uvicorn_is_in_range() -> None:
    # The pin and the guard agree: the uvicorn the test suite runs is one the guard accepts.
    assert guard.supported(uvicorn.__version__), uvicorn.__version__


@pytest.mark.parametrize("version", ["1.0.0", "1.54.0", "2.0", "10.30.1", "0.29.9", "0.1", "", "dev", "v0.54.0"])
def test_unknown_or_older_versions_are_refused(version: str) -> None:
    assert not guard.supported(version)


def test_a_supported_uvicorn_gets_the_subclasses(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "mcpkit.http")
    options = uvicorn_options(Limits())
    assert isinstance(options["http"], type) and options["http"].__name__ == "LimitedHttpTools"
    assert uvicorn_options(Limits(), parser="h11")["http"].__name__ == "LingeringH11"
    assert not caplog.records


@pytest.mark.parametrize("parser", ["auto", "h11"])
def test_an_unknown_major_falls_back_to_plain_uvicorn(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture, parser: str) -> None:
    monkeypatch.setattr(uvicorn, "__version__", "1.0.0")
    caplog.set_level(logging.WARNING, "mcpkit.http")
    limits = Limits()
    options = uvicorn_options(limits, parser=parser)
    assert options == {"timeout_keep_alive": limits.keep_alive_timeout, "http": "h11",
                       "h11_max_incomplete_event_size": limits.max_header_bytes,
                       "limit_concurrency": min(limits.max_connections or 0, limits.max_inflight or 0)}
    uvicorn_options(limits, parser=parser)  # warned once per process, not once per call
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    line = warnings[0].getMessage()
    assert "\n" not in line and "uvicorn 1.0.0" in line and "h11" in line


FALLBACK_SERVER = """
import sys, uvicorn
uvicorn.__version__ = "1.0.0"
from mcpkit.server._loader import load_server
from mcpkit.transports.http import run_http_server
run_http_server(load_server(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]))
"""


def test_an_unknown_major_still_serves() -> None:
    from mcpkit import Client

    async def call(url: str) -> list[str]:
        async with Client(url) as client:
            return [tool.name for tool in await client.list_tools()]

    srv = ServerProcess(lambda port: [sys.executable, "-c", FALLBACK_SERVER, str(DEMO), str(port)])
    try:
        assert srv.wait_ready(30), srv.output()
        assert asyncio.run(call(srv.url))
        warned = [ln for ln in srv.output().splitlines() if "outside the versions" in ln]
        assert len(warned) == 1 and "uvicorn 1.0.0" in warned[0], srv.output()
    finally:
        srv.stop()
