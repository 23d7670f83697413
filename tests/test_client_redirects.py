"""The HTTP client and redirects (followed only when safe), the one-line HTTP failures, and
``client.server_info`` (issue 23). Real servers on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit import Client
from mcpkit.errors import HttpStatusError, TransportError
from tests.helpers.aio import run
from tests.helpers.cli import mcpkit
from tests.helpers.paths import DEMO, SERVERS, subprocess_env
from tests.helpers.servers import free_port, mcpkit_serve_argv, running_server

REDIRECTS = SERVERS / "redirects.py"


class Redirecting:
    def __init__(self, base: str, log: Path) -> None:
        self.base = base
        self.log = log

    def requests(self) -> list[str]:
        """The POSTs it got (the GETs are the readiness probe's)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [line for line in lines if line.startswith("POST ")]


@pytest.fixture(scope="module")
def other() -> Iterator[str]:
    """Another origin (the demo on another port), where /away points."""
    with running_server(mcpkit_serve_argv(DEMO)) as url:
        yield url


@pytest.fixture
def redirecting(tmp_path: Path, other: str) -> Iterator[Redirecting]:
    log = tmp_path / "requests.log"
    other_port = other.split(":")[2].split("/")[0]
    env = subprocess_env(REDIRECT_LOG=str(log), REDIRECT_OTHER_PORT=other_port)
    with running_server(lambda port: [sys.executable, str(REDIRECTS), str(port)], env=env) as url:
        yield Redirecting(url.removesuffix("/mcp"), log)


async def _add(url: str, **options: object) -> tuple[int, str]:
    async with Client(url, **options) as client:  # type: ignore[arg-type]
        result = await client.call_tool("add", {"a": 2, "b": 3})
        return result.structuredContent["result"], client.transport.url  # type: ignore[attr-defined,index]


@pytest.mark.parametrize("path, status", [("/mcp/", "307"), ("/old", "308")])
def test_same_origin_307_and_308_are_followed_and_the_endpoint_moves(redirecting: Redirecting, path: str, status: str):
    value, endpoint = run(_add(redirecting.base + path, bearer_token="tok"), 30)
    assert value == 5
    assert endpoint == redirecting.base + "/mcp"
    seen = redirecting.requests()
    assert seen.count(f"POST {path} Bearer tok") == 1  # once: later requests go to the new URL
    assert all(line.endswith("Bearer tok") for line in seen)  # the same origin gets the credentials


def test_a_cross_origin_redirect_is_refused_and_sends_nothing_there(redirecting: Redirecting, other: str):
    with pytest.raises(HttpStatusError) as caught:
        run(_add(redirecting.base + "/away", bearer_token="tok"), 30)
    assert str(caught.value).startswith(f"the server redirects to another origin ({other}, HTTP 307); mcpkit does not "
                                        "follow it, so no credentials go there")
    assert redirecting.requests() == ["POST /away Bearer tok"]  # refused at once: not retried either


def test_a_redirect_that_would_turn_the_post_into_a_get_is_refused(redirecting: Redirecting):
    with pytest.raises(HttpStatusError, match="redirects to .*/mcp with HTTP 302, which would turn the POST into a GET"):
        run(_add(redirecting.base + "/found"), 30)


def test_redirects_are_bounded(redirecting: Redirecting):
    with pytest.raises(HttpStatusError, match="more than 5 redirects"):
        run(_add(redirecting.base + "/loop"), 30)
    assert len(redirecting.requests()) == 6


def test_the_cli_follows_a_trailing_slash_redirect_and_words_a_refusal(redirecting: Redirecting):
    ok = mcpkit("call", "add", "a=1", "b=2", redirecting.base + "/mcp/")
    assert ok.returncode == 0 and ok.stdout == "3\n", ok.stderr
    away = mcpkit("call", "add", "a=1", "b=2", "--bearer", "tok", redirecting.base + "/away")
    assert away.returncode == 1
    assert len(away.stderr.strip().splitlines()) == 1, away.stderr
    assert "redirects to another origin" in away.stderr


# ====================================================================== 10. HTTP failures, one short line
def test_a_wrong_path_says_so_without_the_html_page(redirecting: Redirecting):
    proc = mcpkit("list", "tools", redirecting.base + "/nope")
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.endswith("HTTP 404 without a JSON-RPC body: 404 Not Found (is the URL's path the server's MCP endpoint?)")
    assert "<" not in line and "lorem" not in line


def test_nothing_listening_is_named_as_such():
    port = free_port()
    proc = mcpkit("list", "tools", f"http://127.0.0.1:{port}/mcp")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(f"connecting to 127.0.0.1:{port} failed: nothing is listening there (is the "
                                        "server running?)")
    assert "All connection attempts failed" not in proc.stderr


def test_connection_refused_from_the_client_api():
    port = free_port()

    async def go() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp", restart=False):
            pass

    with pytest.raises(TransportError, match=f"connecting to 127.0.0.1:{port} failed: nothing is listening there"):
        run(go(), 30)


# ====================================================================== client.server_info
def test_server_info_over_stdio_http_and_legacy():
    from mcpkit.client import EraCache

    async def go(target: object, **options: object) -> tuple[object, object]:
        client = Client(target, era_cache=EraCache(), **options)  # type: ignore[arg-type]
        before = client.server_info
        async with client:
            return before, client.server_info

    for target, options in (([sys.executable, str(DEMO)], {}), ([sys.executable, str(DEMO)], {"mode": "legacy"})):
        before, info = run(go(target, **options), 30)
        assert before is None
        assert info is not None and (info.name, info.version, info.title) == ("mcpkit-demo", "1.0.0", "mcpkit demo")
    with running_server(mcpkit_serve_argv(DEMO)) as url:
        _before, info = run(go(url), 30)
    assert info is not None and info.name == "mcpkit-demo"


def test_server_info_of_a_legacy_peer():
    from tests.helpers.cli import everything_argv

    async def go() -> object:
        async with Client(everything_argv()) as client:
            return client.server_info

    info = run(go(), 60)
    assert info is not None and info.name and info.version  # type: ignore[attr-defined]


def test_server_info_after_a_cached_era_verdict_comes_with_discover():
    from mcpkit.client import EraCache

    cache = EraCache()

    async def go() -> tuple[object, object]:
        async with Client([sys.executable, str(DEMO)], era_cache=cache):
            pass
        async with Client([sys.executable, str(DEMO)], era_cache=cache) as client:  # no probe: the cache said modern
            before = client.server_info
            await client.discover()
            return before, client.server_info

    before, info = run(go(), 30)
    assert before is None
    assert info is not None and info.name == "mcpkit-demo"  # type: ignore[attr-defined]
