"""subscriptions/listen, and cancellation, end to end over stdio AND Streamable HTTP.

The server is ``tests/servers/listen_server.py`` in a real process (stdio: ``python -m mcpkit
serve FILE``, one per test; HTTP: ``python -m mcpkit serve --http``, one per module). Its
``bus_size`` tool reports ``len(server.bus)``, so the tests can see the server release a
subscription; ``fire`` publishes changes; ``close_listeners`` ends every stream gracefully.

Documented behaviour:

- the acknowledgement carries the honoured subset of the filter: unknown fields are dropped,
  ``false`` fields are dropped, an empty (or all-unknown) filter is acknowledged as ``{}`` and
  the stream stays open, silent, until the client ends it;
- every notification on a stream carries ``_meta["io.modelcontextprotocol/subscriptionId"]``
  equal to the listen request's id, JSON type preserved (``"7"`` and ``7`` are two streams);
- a client ending a stream (stdio ``notifications/cancelled``, HTTP closing the response)
  releases its bus subscription, and nothing more is sent for that id;
- a server ending a stream answers it with a result whose ``_meta`` carries the subscription
  id; on stdio a ``notifications/cancelled`` for that id follows.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from mcpkit import Client, InMemoryBus
from mcpkit.protocol import codec
from tests.helpers.aio import until as _until
from tests.helpers.markers import read as read_marker
from tests.helpers.messages import META, check_wire, headers_for
from tests.helpers.messages import SUBSCRIPTION_ID as SID
from tests.helpers.paths import LISTEN_SERVER as LISTEN_FILE
from tests.helpers.paths import ROOT, serve_argv
from tests.helpers.servers import ServerProcess, mcpkit_serve_argv, running_server
from tests.helpers.sides import ACK, TIMEOUT, HttpSide, Side, StdioSide
from tests.servers import listen_server as ls


# ====================================================================== expectations
def expected(filt: dict[str, Any], rounds: int) -> list[tuple[str, str | None]]:
    """What a listener with the acknowledged filter ``filt`` must receive after ``rounds``
    rounds of ``fire``: (method, uri) in publication order (exact URIs are subscribed)."""
    out: list[tuple[str, str | None]] = []
    subs = set(filt.get("resourceSubscriptions", ()))
    for i in range(rounds):
        for kind, prefix in ls.CYCLE:
            if kind == "tools" and filt.get("toolsListChanged") is True:
                out.append(("notifications/tools/list_changed", None))
            elif kind == "prompts" and filt.get("promptsListChanged") is True:
                out.append(("notifications/prompts/list_changed", None))
            elif kind == "resources" and filt.get("resourcesListChanged") is True:
                out.append(("notifications/resources/list_changed", None))
            elif kind == "resource_updated" and f"{prefix}/{i}" in subs:
                out.append(("notifications/resources/updated", f"{prefix}/{i}"))
    return out


def received(notes: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(n["method"], n["params"].get("uri")) for n in notes]


async def until(cond: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> None:
    await _until(cond, what, timeout)


# ====================================================================== the listen server's bus
async def bus_size(side: Side) -> int:
    return await side.tool("bus_size")


async def wait_bus(side: Side, n: int) -> None:
    """Until the server holds ``n`` subscriptions (its ``bus_size`` tool)."""
    deadline = time.monotonic() + TIMEOUT
    while (size := await bus_size(side)) != n:
        if time.monotonic() > deadline:
            raise AssertionError(f"bus still has {size} subscribers, expected {n}")
        await asyncio.sleep(0.02)


# ====================================================================== sides
@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with running_server(mcpkit_serve_argv(LISTEN_FILE)) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def side_factory(request: pytest.FixtureRequest) -> Callable[[], Awaitable[Side]]:
    """An async factory for a Side (HTTP: the module's server process; stdio: a new one)."""
    if request.param == "stdio":
        return lambda: StdioSide(LISTEN_FILE).start()
    url = request.getfixturevalue("http_url")
    return lambda: HttpSide(url).start()


def run_side(side_factory: Callable[[], Awaitable[Side]], body: Callable[[Side], Awaitable[None]]) -> None:
    async def go() -> None:
        side = await side_factory()
        try:
            await body(side)
            # The server holds no subscription once the test's streams are over, and serves on.
            await wait_bus(side, 0)
            await side.assert_alive()
        finally:
            await side.close()

    asyncio.run(asyncio.wait_for(go(), 30))


# ====================================================================== acknowledgement
def test_empty_filter_is_acknowledged_empty_and_the_stream_stays_open(side_factory) -> None:
    async def body(side: Side) -> None:
        lst = await side.listen(11, {})
        assert lst.ack is not None
        assert lst.ack["params"] == {"notifications": {}, "_meta": {SID: 11}}
        assert await bus_size(side) == 1
        assert await side.tool("fire", {"rounds": 3}) == 15
        await asyncio.sleep(0.3)
        assert lst.notes == [] and lst.foreign == []
        assert lst.result is None and not lst.ended.is_set(), "the stream stays open until the client ends it"
        await side.cancel(lst)
        await wait_bus(side, 0)
        await asyncio.sleep(0.1)
        assert lst.result is None, "nothing is sent for a stream the client cancelled"
        assert lst.server_cancelled is None

    run_side(side_factory, body)


def test_unknown_and_false_filter_fields_are_dropped_from_the_ack(side_factory) -> None:
    async def body(side: Side) -> None:
        unknown_only = await side.listen("u", {"fooListChanged": True, "tasks": {"status": True}, "bogus": [1, 2]})
        mixed = await side.listen(12, {
            "toolsListChanged": True,
            "promptsListChanged": False,
            "resourcesListChanged": False,
            "futureListChanged": True,
            "resourceSubscriptions": ["res://a/0", "res://a/0", "res://b/0"],
            "extra": {"nested": {"deep": True}},
        })
        assert unknown_only.ack["params"]["notifications"] == {}
        assert mixed.ack["params"]["notifications"] == {"toolsListChanged": True,
                                                        "resourceSubscriptions": ["res://a/0", "res://b/0"]}
        assert mixed.ack["params"]["_meta"] == {SID: 12}
        await side.tool("fire", {"rounds": 2})
        want = expected(mixed.ack["params"]["notifications"], 2)
        await until(lambda: len(mixed.notes) >= len(want), "the mixed listener's notifications")
        await asyncio.sleep(0.2)
        assert received(mixed.notes) == want
        assert unknown_only.notes == [] and unknown_only.result is None
        assert mixed.foreign == [] and unknown_only.foreign == []
        for lst in (unknown_only, mixed):
            await side.cancel(lst)

    run_side(side_factory, body)


def test_a_filter_of_the_wrong_type_is_invalid_params(side_factory) -> None:
    async def body(side: Side) -> None:
        for i, filt in enumerate(({"toolsListChanged": "yes"}, {"resourceSubscriptions": "res://a/0"}, [])):
            lst = await side.listen(f"bad-{i}", filt, acked=False)  # type: ignore[arg-type]
            await asyncio.wait_for(lst.ended.wait(), TIMEOUT)
            assert lst.ack is None and lst.notes == []
            assert lst.result is not None and lst.result["error"]["code"] == -32602, lst.result
            if side.kind == "http":
                assert lst.http_status == 400
        assert await bus_size(side) == 0

    run_side(side_factory, body)


def test_ack_is_the_subset_a_server_without_prompts_or_resources_honours() -> None:
    """In-process: a tools-only server acknowledges only toolsListChanged, and sends only that."""
    server = ls.tools_only()
    notes: list[tuple[str, dict]] = []

    async def emit(method: str, params: dict) -> None:
        notes.append((method, json.loads(codec.encode_notification(method, params))["params"]))

    async def go() -> dict:
        filt = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
                "resourceSubscriptions": ["res://a/0"]}
        req = codec.decode(codec.encode_request("x", "subscriptions/listen", {"_meta": META, "notifications": filt}))
        task = asyncio.ensure_future(server.handle(req, emit))
        await until(lambda: notes, "the acknowledgement")
        ls.publish(server, 2)
        await until(lambda: len(notes) >= 3, "two tools notifications")
        await asyncio.sleep(0.05)
        server.close_listeners()
        reply = await asyncio.wait_for(task, TIMEOUT)
        return json.loads(reply.body)

    reply = asyncio.run(go())
    assert notes[0] == (ACK, {"notifications": {"toolsListChanged": True}, "_meta": {SID: "x"}})
    assert [m for m, _ in notes[1:]] == ["notifications/tools/list_changed"] * 2
    assert reply["result"]["_meta"][SID] == "x"
    assert len(server.bus) == 0


# ====================================================================== fan-out
FILTERS = [
    {"toolsListChanged": True},
    {"promptsListChanged": True},
    {"resourcesListChanged": True, "resourceSubscriptions": ["res://a/7", "res://b/150", "res://c/1"]},
    {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
     "resourceSubscriptions": ["res://a/0", "res://b/199"]},
]


def test_fanout_1000_notifications_to_50_listeners_in_process() -> None:
    server = ls.build()
    rounds = 200  # x 5 kinds = 1,000 notifications
    listeners: list[tuple[Any, dict, list[bytes]]] = []
    # Pairs of ids 0/"0", 1/"1", ... with different filters: a crossing between "7" and 7
    # (or between filters) changes what a listener sees.
    for i in range(25):
        for sid, filt in ((i, FILTERS[i % 4]), (str(i), FILTERS[(i + 1) % 4])):
            listeners.append((sid, filt, []))

    async def go() -> list[dict]:
        tasks = []
        for sid, filt, got in listeners:
            async def emit(method: str, params: dict, got: list = got) -> None:
                got.append(codec.encode_notification(method, params))  # the exact wire bytes

            req = codec.decode(codec.encode_request(sid, "subscriptions/listen", {"_meta": META, "notifications": filt}))
            tasks.append(asyncio.ensure_future(server.handle(req, emit)))
        await until(lambda: all(got for _, _, got in listeners), "50 acknowledgements")
        assert len(server.bus) == 50
        assert ls.publish(server, rounds) == 1000
        want = {id(got): 1 + len(expected(filt, rounds)) for _, filt, got in listeners}
        await until(lambda: all(len(got) >= want[id(got)] for _, _, got in listeners), "every notification", 30)
        await asyncio.sleep(0.05)
        server.close_listeners()
        replies = await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT)
        return [json.loads(r.body) for r in replies]

    replies = asyncio.run(go())
    assert len(server.bus) == 0
    total = 0
    for (sid, filt, got), reply in zip(listeners, replies, strict=True):
        msgs = [json.loads(b) for b in got]
        for m in msgs:
            check_wire(m)
            assert m["params"]["_meta"] == {SID: sid}
            assert type(m["params"]["_meta"][SID]) is type(sid)
        assert msgs[0]["method"] == ACK and msgs[0]["params"]["notifications"] == filt
        assert received(msgs[1:]) == expected(filt, rounds), f"listener {sid!r}"
        total += len(msgs) - 1
        assert reply["id"] == sid and type(reply["id"]) is type(sid)
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["_meta"][SID] == sid and type(reply["result"]["_meta"][SID]) is type(sid)
    assert total == sum(len(expected(f, rounds)) for _, f, _ in listeners)
    tools_only = [got for _, f, got in listeners if f is FILTERS[0]]
    assert tools_only and all(b"prompts" not in b and b"resources" not in b for got in tools_only for b in got[1:])


REAL_LISTENERS = [
    (7, {"toolsListChanged": True}),
    ("7", {"promptsListChanged": True}),
    ("t", {"resourcesListChanged": True, "resourceSubscriptions": ["res://a/3", "res://b/0"]}),
    (8, {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
         "resourceSubscriptions": ["res://b/19"]}),
    (-1, {"resourceSubscriptions": ["res://a/10"]}),
]


def test_fanout_over_the_wire_with_ids_of_both_json_types(side_factory) -> None:
    rounds = 20  # 100 notifications

    async def body(side: Side) -> None:
        lsts = [await side.listen(i, f) for i, f in REAL_LISTENERS]
        assert await bus_size(side) == len(lsts)
        assert await side.tool("fire", {"rounds": rounds}) == 100
        for lst in lsts:
            want = expected(lst.filt, rounds)
            await until(lambda lst=lst, want=want: len(lst.notes) >= len(want), f"listener {lst.id!r}")
        await asyncio.sleep(0.2)  # room for anything extra (a crossing) to show up
        for lst in lsts:
            assert lst.ack["params"]["notifications"] == lst.filt
            assert received(lst.notes) == expected(lst.filt, rounds), f"listener {lst.id!r}"
            assert lst.foreign == []
            for n in [lst.ack, *lst.notes]:
                assert n["params"]["_meta"] == {SID: lst.id}
                assert type(n["params"]["_meta"][SID]) is type(lst.id)
        if isinstance(side, StdioSide):
            assert side.stray == [], side.stray
        for lst in lsts:
            await side.cancel(lst)

    run_side(side_factory, body)


# ====================================================================== client-side ending
def test_a_listener_that_disconnects_is_released_and_the_others_keep_receiving(side_factory) -> None:
    async def body(side: Side) -> None:
        a = await side.listen(1, {"toolsListChanged": True})
        b = await side.listen(2, {"toolsListChanged": True, "promptsListChanged": True})
        assert await bus_size(side) == 2
        await side.tool("fire", {"rounds": 1})
        await until(lambda: len(a.notes) == 1 and len(b.notes) == 2, "the first round")
        await side.cancel(a)  # mid-stream
        await wait_bus(side, 1)
        await side.tool("fire", {"rounds": 4})
        await until(lambda: len(b.notes) == 10, "later notifications on the other stream")
        await asyncio.sleep(0.2)
        assert received(b.notes) == expected(b.filt, 5)
        assert len(a.notes) == 1, "nothing reaches a released listener"
        assert a.result is None and a.server_cancelled is None, "nothing more is sent for its id"
        await side.cancel(b)
        if isinstance(side, StdioSide):
            await side.sync()
            assert side.stray == [], side.stray

    run_side(side_factory, body)


def test_many_listeners_come_and_go_without_leaking_subscriptions(side_factory) -> None:
    async def body(side: Side) -> None:
        for wave in range(3):
            lsts = [await side.listen(f"w{wave}-{i}", {"toolsListChanged": True}) for i in range(5)]
            assert await bus_size(side) == 5
            for lst in lsts:
                await side.cancel(lst)
            await wait_bus(side, 0)

    run_side(side_factory, body)


def _marker() -> str:
    fd, path = tempfile.mkstemp(prefix="mcpkit-cancel-", suffix=".txt")
    os.close(fd)
    return path


def test_cancelling_mid_handler_stops_it_and_nothing_more_is_sent_stdio() -> None:
    async def go() -> None:
        side = await StdioSide(LISTEN_FILE).start()
        marker = _marker()
        try:
            msg = side.request_msg(99, "tools/call", {"name": "slow", "arguments": {"marker": marker}},
                                   meta={"progressToken": "tok-99"})
            await side.send(msg)
            await until(lambda: len(side.progress.get("tok-99", [])) >= 3, "progress from the handler")
            await side.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
            await until(lambda: read_marker(marker) == "cancelled", "the handler to be cancelled")
            await side.sync()  # everything written before the cancellation has been read
            seen = len(side.progress["tok-99"])
            await asyncio.sleep(0.4)
            assert len(side.progress["tok-99"]) == seen, "no progress after the cancellation"
            assert all(m.get("id") != 99 for m in side.log), "no response for a cancelled request"
            assert side.stray == []
            # The same id may be used again now, and is answered.
            reply = await side.request("tools/call", {"name": "bus_size", "arguments": {}}, id=99)
            assert reply["result"]["structuredContent"] == {"result": 0}
        finally:
            await side.close()
            os.unlink(marker)

    asyncio.run(asyncio.wait_for(go(), 30))


def test_cancelling_mid_handler_by_disconnecting_http(http_url: str) -> None:
    async def go() -> None:
        side = HttpSide(http_url)
        marker = _marker()
        try:
            msg = side.request_msg(99, "tools/call", {"name": "slow", "arguments": {"marker": marker}},
                                   meta={"progressToken": "tok-99"})
            resp = await side.http.send(side._post(msg), stream=True)
            assert resp.headers["content-type"].startswith("text/event-stream")
            progress = 0
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    note = json.loads(line[5:])
                    assert note["method"] == "notifications/progress", note
                    progress += 1
                    if progress == 3:
                        break
            await resp.aclose()  # the client goes away: cancellation
            await until(lambda: read_marker(marker) == "cancelled", "the handler to be cancelled")
            await side.assert_alive()
            assert await bus_size(side) == 0
        finally:
            await side.close()
            os.unlink(marker)

    asyncio.run(asyncio.wait_for(go(), 30))


# ====================================================================== server-side ending
def test_server_closing_listeners_answers_each_with_its_subscription_id(side_factory) -> None:
    async def body(side: Side) -> None:
        a = await side.listen("L1", {"toolsListChanged": True})
        b = await side.listen(42, {"promptsListChanged": True})
        await side.tool("fire", {"rounds": 1})
        await until(lambda: len(a.notes) == 1 and len(b.notes) == 1, "one notification each")
        assert await side.tool("close_listeners") == "closed"
        for lst in (a, b):
            await asyncio.wait_for(lst.ended.wait(), TIMEOUT)
            assert lst.result is not None
            assert lst.result["id"] == lst.id and type(lst.result["id"]) is type(lst.id)
            result = lst.result["result"]
            assert result["resultType"] == "complete"
            assert result["_meta"][SID] == lst.id and type(result["_meta"][SID]) is type(lst.id)
        if isinstance(side, StdioSide):
            # stdio: the graceful result, then notifications/cancelled for that id.
            await until(lambda: a.server_cancelled and b.server_cancelled, "notifications/cancelled")
            for lst in (a, b):
                assert lst.server_cancelled["params"]["requestId"] == lst.id
                assert type(lst.server_cancelled["params"]["requestId"]) is type(lst.id)
                i_result = next(i for i, m in enumerate(side.log) if m is lst.result)
                i_cancel = next(i for i, m in enumerate(side.log) if m is lst.server_cancelled)
                assert i_result < i_cancel
                after = [m for m in side.log[i_cancel + 1:]
                         if m.get("id") == lst.id or (m.get("params") or {}).get("_meta", {}).get(SID) == lst.id]
                assert after == [], after
            assert side.stray == []
        await wait_bus(side, 0)
        # New subscriptions work after the close.
        c = await side.listen("again", {"toolsListChanged": True})
        await side.tool("fire", {"rounds": 1})
        await until(lambda: len(c.notes) == 1, "a notification on a new stream")
        await side.cancel(c)

    run_side(side_factory, body)


async def _fire_when_subscribed(client: Any, size: Callable[[], Awaitable[int]]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while await size() != 1:
        assert time.monotonic() < deadline, "the listen stream never opened"
        await asyncio.sleep(0.02)
    await client.call_tool("fire", {"rounds": 1})


def test_client_listen_ends_when_the_server_closes_the_stream(side_factory) -> None:
    """Through mcpkit.Client: listen() yields the stream's notifications and its iteration ends
    when the server closes the subscription gracefully."""
    async def body(side: Side) -> None:
        target = (serve_argv(LISTEN_FILE) if side.kind == "stdio"
                  else side.url)  # type: ignore[attr-defined]
        kw = {"env": {"PYTHONPATH": str(ROOT)}, "cwd": str(ROOT)} if side.kind == "stdio" else {}
        async with Client(target, **kw) as client:
            got: list[Any] = []

            async def consume() -> None:
                async for note in client.listen(tools=True):
                    got.append(note)

            task = asyncio.ensure_future(consume())

            async def size() -> int:
                return (await client.call_tool("bus_size")).structuredContent["result"]

            deadline = time.monotonic() + TIMEOUT
            while await size() != 1:
                assert time.monotonic() < deadline, "the listen stream never opened"
                await asyncio.sleep(0.02)
            await client.call_tool("fire", {"rounds": 3})
            await until(lambda: len(got) == 3, "three tools notifications")
            await client.call_tool("close_listeners")
            await asyncio.wait_for(task, TIMEOUT)  # the iteration ended on its own
            assert [n.method for n in got] == ["notifications/tools/list_changed"] * 3
            assert all(type(n.params["_meta"][SID]) is int for n in got)
            assert await size() == 0

            # Leaving the loop ends the subscription (stdio: notifications/cancelled; HTTP: the
            # stream is closed) and the server releases it.
            stream = client.listen(prompts=True)
            fire = asyncio.ensure_future(_fire_when_subscribed(client, size))
            async for note in stream:
                assert note.method == "notifications/prompts/list_changed"
                break
            await stream.aclose()
            await fire
            deadline = time.monotonic() + TIMEOUT
            while await size() != 0:
                assert time.monotonic() < deadline, "the abandoned stream was never released"
                await asyncio.sleep(0.02)

    run_side(side_factory, body)


# ====================================================================== the process going away
def test_http_shutdown_ends_listen_streams_with_a_graceful_result() -> None:
    """SIGTERM to the HTTP server: each open stream gets its graceful result (with its
    subscription id) before the connection closes."""
    srv = ServerProcess(mcpkit_serve_argv(LISTEN_FILE))
    proc, url = srv.proc, srv.url
    try:
        assert srv.wait_ready(), f"the server did not start:\n{srv.output()}"

        async def go() -> None:
            side = HttpSide(url)
            try:
                a = await side.listen("s1", {"toolsListChanged": True})
                b = await side.listen(2, {"promptsListChanged": True})
                proc.terminate()
                for lst in (a, b):
                    await asyncio.wait_for(lst.ended.wait(), TIMEOUT)
                    assert lst.result is not None, "an abrupt close instead of the graceful result"
                    assert lst.result["result"]["_meta"][SID] == lst.id
                    assert type(lst.result["result"]["_meta"][SID]) is type(lst.id)
            finally:
                await side.http.aclose()

        asyncio.run(asyncio.wait_for(go(), 30))
        proc.wait(10)
    finally:
        srv.stop()


def test_stdio_eof_ends_listens_without_a_result_and_the_process_exits() -> None:
    async def go() -> None:
        side = await StdioSide(LISTEN_FILE).start()
        lst = await side.listen(5, {"toolsListChanged": True})
        assert side.proc.stdin is not None
        side.proc.stdin.close()
        assert await asyncio.wait_for(side.proc.wait(), TIMEOUT) == 0
        await asyncio.gather(side.reader, side.err_reader, return_exceptions=True)
        # The transport closed: that ends the subscription; no graceful result is owed.
        assert lst.result is None and lst.server_cancelled is None
        assert side.stray == []

    asyncio.run(asyncio.wait_for(go(), 30))


def test_a_listener_that_falls_behind_is_closed_and_released_in_process() -> None:
    """Documents current behaviour: with a bounded bus, a listener whose client stops reading
    is closed (graceful result) and released; the other listeners are unaffected."""
    server = ls.build()
    server.bus = InMemoryBus(maxsize=5)
    gate = asyncio.Event()
    slow_notes: list[str] = []
    fast_notes: list[str] = []

    async def slow_emit(method: str, params: dict) -> None:
        if method != ACK:
            await gate.wait()  # a client that stopped reading
        slow_notes.append(method)

    async def fast_emit(method: str, params: dict) -> None:
        fast_notes.append(method)

    def listen(sid: Any, emit: Any) -> asyncio.Future:
        req = codec.decode(codec.encode_request(sid, "subscriptions/listen",
                                                {"_meta": META, "notifications": {"toolsListChanged": True}}))
        return asyncio.ensure_future(server.handle(req, emit))

    async def go() -> None:
        slow = listen("slow", slow_emit)
        fast = listen("fast", fast_emit)
        await until(lambda: slow_notes and fast_notes, "both acknowledgements")
        for k in range(1, 4):
            for _ in range(4):
                server.notify_tools_changed()
            await until(lambda k=k: len(fast_notes) == 1 + 4 * k, "the fast listener to keep up")
        # The slow listener has 12 changes queued behind a blocked emit: more than maxsize.
        assert len(server.bus) == 1, "the bus released the listener that fell behind"
        gate.set()
        reply = json.loads((await asyncio.wait_for(slow, TIMEOUT)).body)
        assert reply["result"]["_meta"][SID] == "slow"
        assert not fast.done()
        server.notify_tools_changed()
        await until(lambda: len(fast_notes) == 14, "the fast listener after the other was dropped")
        server.close_listeners()
        await asyncio.wait_for(fast, TIMEOUT)
        assert len(server.bus) == 0

    asyncio.run(go())


def test_client_listen_exposes_the_acknowledged_filter_in_process() -> None:
    async def go() -> Any:
        server = ls.tools_only()
        async with Client(server) as client:
            stream = client.listen(tools=True, prompts=True, resources=["res://a/0"])

            async def fire_later() -> None:
                await until(lambda: len(server.bus) == 1, "the subscription")
                server.notify_tools_changed()

            firing = asyncio.ensure_future(fire_later())
            async for _note in stream:
                break
            await firing
            ack = client.acknowledged
            await stream.aclose()
            return ack

    assert asyncio.run(go()) == {"toolsListChanged": True}


def test_http_listen_without_sse_in_accept_is_refused_not_left_hanging(http_url: str) -> None:
    msg = {"jsonrpc": "2.0", "id": "json-only", "method": "subscriptions/listen",
           "params": {"_meta": META, "notifications": {"toolsListChanged": True}}}
    try:
        r = httpx.post(http_url, content=json.dumps(msg).encode(), headers=headers_for(msg, Accept="application/json"),
                       timeout=1.5)
        assert r.status_code >= 400 or "error" in r.json(), r.text
    finally:
        async def after() -> None:
            side = HttpSide(http_url)
            try:
                await wait_bus(side, 0)  # the abandoned request was released
                await side.assert_alive()
            finally:
                await side.close()

        asyncio.run(after())


def test_stdio_cancellation_names_the_listen_by_id_and_json_type() -> None:
    """Listens 1 and "1" on one stdio connection: cancelling "1" ends that one only."""
    async def go() -> None:
        side = await StdioSide(LISTEN_FILE).start()
        try:
            num = await side.listen(1, {"toolsListChanged": True})
            text = await side.listen("1", {"toolsListChanged": True})
            await side.cancel(text)
            await wait_bus(side, 1)
            await side.tool("fire", {"rounds": 2})
            await until(lambda: len(num.notes) == 2, "the integer-id stream to keep receiving")
            await side.sync()
            assert text.notes == [] and text.result is None and num.result is None
            # A cancellation whose id has the other JSON type (or is not an id at all) is ignored.
            for rid in ("2", 1.0, True, None, [1]):
                await side.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
            await side.sync()
            assert await bus_size(side) == 1
            await side.cancel(num)
            await wait_bus(side, 0)
            await side.sync()
            assert num.result is None and side.stray == []
        finally:
            await side.close()

    asyncio.run(asyncio.wait_for(go(), 30))
