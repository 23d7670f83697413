"""Fixtures: stdio servers as :class:`~tests.helpers.wire.StdioPeer` processes (shared, or a
test's own). The harness itself lives in :mod:`tests.helpers`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import DEMO, TEST_SERVER, subprocess_env
from tests.helpers.wire import StdioPeer


@pytest.fixture
def spawn() -> Iterator[Any]:
    """``spawn(path_or_argv, **env)`` starts a stdio server and returns its :class:`StdioPeer`."""
    peers: list[StdioPeer] = []

    def _spawn(target: Any = DEMO, **env: str) -> StdioPeer:
        argv = [sys.executable, str(target)] if isinstance(target, (str, Path)) else list(target)
        peer = StdioPeer(argv, subprocess_env(**env))
        peers.append(peer)
        return peer

    yield _spawn
    for p in peers:
        p.close()


_shared: dict[str, StdioPeer] = {}


def _shared_peer(target: Path) -> Iterator[StdioPeer]:
    """One long-lived server per target, reused across tests while it stays healthy.

    Sharing keeps the suite fast and proves the same process keeps serving after every
    malformed input. A peer left with unread output (a failed test) is replaced.
    """
    key = str(target)
    peer = _shared.get(key)
    if peer is None or peer.proc.poll() is not None or peer.proc.stdin is None or peer.proc.stdin.closed:
        peer = _shared[key] = StdioPeer.python(target)
    yield peer
    if not peer.lines.empty() or peer.proc.poll() is not None:
        peer.close()
        _shared.pop(key, None)


@pytest.fixture(scope="session", autouse=True)
def _close_shared_peers() -> Iterator[None]:
    yield
    for peer in _shared.values():
        peer.close()
    _shared.clear()


@pytest.fixture
def demo() -> Iterator[StdioPeer]:
    """``examples/demo.py`` over stdio (a shared, long-lived process)."""
    yield from _shared_peer(DEMO)


@pytest.fixture
def testserver() -> Iterator[StdioPeer]:
    """``tests/servers/testserver.py`` over stdio (a shared, long-lived process)."""
    yield from _shared_peer(TEST_SERVER)


@pytest.fixture
def fresh_demo(spawn: Any) -> StdioPeer:
    """A new ``examples/demo.py`` process of this test's own."""
    return spawn(DEMO)


@pytest.fixture
def fresh_testserver(spawn: Any) -> StdioPeer:
    """A new ``tests/servers/testserver.py`` process of this test's own."""
    return spawn(TEST_SERVER)


@pytest.fixture(scope="module")
def redis() -> Iterator[Any]:
    """A real ``redis-server`` for the module's tests (tests.helpers.redis.RedisServer)."""
    from tests.helpers.redis import RedisServer

    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()
