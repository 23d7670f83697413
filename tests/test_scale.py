"""Scale-out: one server on several worker processes sharing a port, backed by a real Redis.

What ``mcpkit serve --http --workers 2 --redis URL examples/demo.py`` runs
(``mcpkit._workers.serve_workers``), against a ``redis-server`` started here on a loopback
port. No fake Redis. Which worker holds a connection is read from the kernel (``ss``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from mcpkit import Client
from mcpkit._workers import serve_workers
from tests.helpers.aio import run, until
from tests.helpers.paths import DEMO
from tests.helpers.redis import RedisServer, serving_pids, workers_argv
from tests.helpers.servers import running_server

NOTE = "notes://groceries"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def demo_workers(redis: RedisServer) -> Iterator[str]:
    """The demo on 2 workers sharing one port, with Redis."""
    with running_server(workers_argv(DEMO, workers=2, redis_url=redis.url)) as url:
        yield url


def port_of(url: str) -> int:
    return httpx.URL(url).port or 80


def test_more_than_one_worker_needs_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPKIT_REDIS_URL", raising=False)
    with pytest.raises(ValueError, match=r"--workers 2 needs Redis.*--redis redis://HOST:PORT"):
        serve_workers(str(DEMO), workers=2, redis_url=None, port=1)


def test_listen_streams_on_both_workers_get_every_update(demo_workers: str) -> None:
    """The acceptance check: 20 listen streams for notes://groceries, spread over both worker
    processes, each receive every resources/updated that save_note calls cause, the calls
    made through fresh connections."""
    saves = 5

    async def main() -> tuple[list[list[str]], set[int]]:
        got: list[list[str]] = [[] for _ in range(20)]
        clients = [Client(demo_workers) for _ in range(20)]

        async def listener(i: int) -> None:
            async with clients[i] as client:
                async for note in client.listen(resources=[NOTE]):
                    got[i].append(note.uri or "")
                    if len(got[i]) == saves:
                        return

        tasks = [asyncio.create_task(listener(i)) for i in range(20)]
        await until(lambda: all(getattr(c, "acknowledged", None) for c in clients), "20 acknowledged listens", 20)
        pids = serving_pids(port_of(demo_workers))
        for k in range(saves):
            async with Client(demo_workers) as fresh:  # a fresh connection per change
                result = await fresh.call_tool("save_note", {"name": "groceries", "text": f"version {k}"})
                assert not result.isError, result
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        return got, pids

    got, pids = run(main(), 60)
    assert len(pids) == 2, f"the listen streams should be spread over both workers, got pids {pids}"
    assert all(g == [NOTE] * saves for g in got), got
