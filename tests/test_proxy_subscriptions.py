"""Resource subscriptions through the proxy, both directions:

- a 2026-07-28 front client's ``subscriptions/listen`` (``resourceSubscriptions``) in front of
  a legacy backend (npm server-everything, stdio) becomes ``resources/subscribe`` on the
  backend session, and its ``notifications/resources/updated`` reach the stream; leaving the
  stream unsubscribes the backend;
- a 2025-11-25 front client's ``resources/subscribe`` (``mcpkit proxy --http`` in front of an
  mcpkit server with ``legacy=False``) becomes the backend's ``subscriptions/listen`` stream,
  whose updates reach the client's session; a modern front client's stream does the same.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.proxy import proxy
from tests.helpers.aio import run
from tests.helpers.cli import everything_argv
from tests.helpers.paths import SERVERS
from tests.helpers.servers import running_server

BACKEND = SERVERS / "proxy_backend.py"
DOC = "demo://resource/static/document/features.md"
NOTE = "notes://a"


async def first_update(client: Client, uri: str, trigger: Any, timeout: float = 20.0) -> dict[str, Any]:
    """Open a listen stream on ``uri``, run ``trigger()`` once it is acknowledged, and return
    the first resources/updated notification's params."""
    got: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    opened = asyncio.Event()

    async def listen() -> None:
        stream = client.listen(resources=[uri])
        opened.set()
        async for note in stream:
            if note.method == "notifications/resources/updated" and not got.done():
                got.set_result(dict(note.params or {}))
                return

    task = asyncio.ensure_future(listen())
    try:
        await opened.wait()
        await asyncio.sleep(0.5)  # the acknowledgement, and the proxy's upstream subscription
        await trigger()
        return await asyncio.wait_for(got, timeout)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_modern_listen_becomes_resources_subscribe_on_a_legacy_backend() -> None:
    front = proxy(everything_argv())
    try:
        assert front.backend.era == "legacy"

        async def go() -> None:
            async with Client(front) as client:
                assert client.era == "modern"

                async def toggle() -> None:
                    await client.call_tool("toggle-subscriber-updates", {})

                params = await first_update(client, DOC, toggle)
                assert params["uri"] == DOC
                await asyncio.sleep(0.3)  # the stream is gone: the backend is unsubscribed
                assert front.forwarder.upstream.counts == {}

        run(go(), 60)
    finally:
        front.close()


def test_upstream_counts_subscribers_and_unsubscribes_with_the_last() -> None:
    from mcpkit.proxy._subscriptions import Upstream

    asked: list[tuple[str, bool]] = []

    class FakeBackend:
        bridge = None
        era = "modern"

        async def follow(self, uri: str, on: bool, followed: list[str]) -> None:
            asked.append((uri, on))

    async def go() -> None:
        up = Upstream(FakeBackend(), limit=2)  # type: ignore[arg-type]
        up._changed("a", True)
        up._changed("a", True)
        up._changed("b", True)
        up._changed("c", True)  # over the limit: not followed
        up._changed("a", False)
        up._changed("c", False)  # never counted: nothing happens
        up._changed("a", False)
        up._changed("a", False)  # one too many: nothing happens
        await asyncio.sleep(0)
        assert up.counts == {(None, "b"): 1}

    run(go(), 10)
    assert asked == [("a", True), ("b", True), ("a", False)]


@pytest.fixture(scope="module")
def proxied_url() -> Iterator[str]:
    with running_server(lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port),
                                      str(BACKEND)], timeout=30) as backend_url:
        with running_server(lambda port: [sys.executable, "-m", "mcpkit", "proxy", "--http", "--port", str(port),
                                          backend_url], timeout=30) as url:
            yield url


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_front_subscriptions_follow_a_modern_backends_listen_stream(proxied_url: str, mode: str) -> None:
    async def go() -> None:
        async with Client(proxied_url, mode=mode) as client:
            assert client.era == ("legacy" if mode == "legacy" else "modern")

            async def touch() -> None:
                await client.call_tool("touch", {"uri": NOTE})

            params = await first_update(client, NOTE, touch)
            assert params["uri"] == NOTE

    run(go(), 60)
