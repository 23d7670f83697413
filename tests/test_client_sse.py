"""The 2024-11-05 HTTP+SSE client transport, against real peers and a hand-written server.

* npm ``@modelcontextprotocol/server-everything`` in its ``sse`` mode (``GET /sse``, ``POST
  /message``), through the Client and through the CLI;
* the official Python SDK's SSE server (``MCPServer.sse_app``, PyPI ``mcp==2.3.0`` in the peers'
  venv), at ``/sse`` (chosen by the URL) and at ``/stream`` (chosen by the era probe: the
  ``initialize`` POST gets 405, the GET opens the stream and its first event is ``endpoint``);
* a small asyncio HTTP server written here, for what a well-behaved peer never does: an
  ``endpoint`` on another origin, lines over the limit, a stream that ends mid-request, and for
  what goes on the wire (headers, ``notifications/cancelled``, our answer to a ``ping``).

A peer that cannot be installed FAILS these tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import EraCache
from mcpkit.client import Client, ResponseTooLarge, TransportError
from mcpkit.client._sse_legacy import SseTransport
from mcpkit.errors import HttpStatusError
from tests.helpers.aio import run, until
from tests.helpers.cli import mcpkit
from tests.helpers.peers import install_peers
from tests.helpers.servers import running_server
from tests.test_legacy_everything import everything_served


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


# ---------------------------------------------------------------------------- peers
@contextlib.contextmanager
def everything_sse() -> Iterator[str]:
    """server-everything's HTTP+SSE transport on a free port: yields its ``/sse`` URL."""
    with everything_served("sse", path="/") as base:
        yield base.rstrip("/") + "/sse"


@pytest.fixture(scope="module")
def sdk_python() -> str:
    return install_peers(["python"], ("PEER_PYTHON",), "the official Python SDK (PyPI mcp==2.3.0)")["PEER_PYTHON"]


@contextlib.contextmanager
def sdk_sse(python: str, path: str) -> Iterator[str]:
    """The Python SDK's SSE server with its stream at ``path``: yields that URL."""
    from tests.helpers.paths import INTEROP

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    with running_server(lambda port: [python, str(INTEROP / "sdk_sse_server.py"), str(port), path], env=env,
                        timeout=30, path="/") as base:
        yield base.rstrip("/") + path


def test_server_everything_sse_lists_and_calls() -> None:
    with everything_sse() as url:
        async def main() -> tuple[Any, ...]:
            async with Client(url, era_cache=EraCache()) as client:
                tools = [t.name for t in await client.list_tools()]
                echoed = text_of(await client.call_tool("echo", {"message": "hi"}))
                total = text_of(await client.call_tool("get-sum", {"a": 2, "b": 3}))
                assert client.server_info is not None
                return (client.era, type(client.transport), tools, echoed, total, client.server_info.name,
                        client.legacy_version)

        era, kind, tools, echoed, total, name, version = run(main(), 60)
    assert (era, kind) == ("legacy", SseTransport)
    assert "echo" in tools and "get-sum" in tools
    assert echoed == "Echo: hi" and "5" in total
    assert name and version == "2025-11-25"


def test_server_everything_sse_progress_reaches_its_request() -> None:
    with everything_sse() as url:
        seen: list[Any] = []

        async def main() -> str:
            async with Client(url, era_cache=EraCache()) as client:
                result = await client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3},
                                                progress=lambda p, total, msg: seen.append(p))
                return text_of(result)

        text = run(main(), 60)
    assert "completed" in text.lower()
    assert seen == [1, 2, 3]


def test_cli_lists_and_calls_over_sse() -> None:
    """The acceptance: ``mcpkit list tools URL/sse`` and ``mcpkit call echo message=hi URL/sse``."""
    with everything_sse() as url:
        listed = mcpkit("list", "tools", url)
        called = mcpkit("call", "echo", "message=hi", url)
    assert listed.returncode == 0, listed.stderr
    assert "echo(message: string)" in listed.stdout
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == "Echo: hi"


def test_python_sdk_sse_server_by_url(sdk_python: str) -> None:
    with sdk_sse(sdk_python, "/sse") as url:
        async def main() -> tuple[Any, ...]:
            async with Client(url, era_cache=EraCache()) as client:
                tools = sorted(t.name for t in await client.list_tools())
                added = await client.call_tool("add", {"a": 2, "b": 40})
                return type(client.transport), tools, text_of(added), client.server_info

        kind, tools, added, info = run(main(), 60)
    assert kind is SseTransport
    assert tools == ["add", "echo"]
    assert added == "42"
    assert info is not None and info.name == "sdk-sse-peer"


def test_python_sdk_sse_server_found_by_the_era_probe(sdk_python: str) -> None:
    """``/stream`` says nothing of SSE: the probe POSTs, the ``initialize`` POST gets 405, the
    GET opens the stream with an ``endpoint`` event: HTTP+SSE from then on (the 2025-11-25
    transports page, Backwards Compatibility)."""
    with sdk_sse(sdk_python, "/stream") as url:
        async def main() -> tuple[Any, ...]:
            async with Client(url, era_cache=EraCache()) as client:
                echoed = text_of(await client.call_tool("echo", {"message": "probe"}))
                return client.era, type(client.transport), echoed

        async def without_fallback() -> None:
            async with Client(url, era_cache=EraCache(), transport="streamable-http"):
                pass

        era, kind, echoed = run(main(), 60)
        with pytest.raises(HttpStatusError) as refused:
            run(without_fallback(), 60)
    assert (era, kind, echoed) == ("legacy", SseTransport, "sdk echo: probe")
    assert refused.value.status == 405


# ---------------------------------------------------------------------------- a hand-written server
class SseServer:
    """A tiny HTTP+SSE server on a loopback socket: ``GET /sse`` streams events, ``POST /messages``
    takes a message (202) and answers it on the stream. It speaks 2024-11-05."""

    def __init__(self, *, endpoint: str = "/messages?session=1", first_event: str = "endpoint",
                 tools_list_line: int = 0, close_on_call: bool = False, ping_first: bool = False) -> None:
        self.endpoint, self.first_event = endpoint, first_event
        self.tools_list_line, self.close_on_call, self.ping_first = tools_list_line, close_on_call, ping_first
        self.received: list[dict[str, Any]] = []
        self.headers: list[tuple[str, dict[str, str]]] = []
        self._stream: asyncio.StreamWriter | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    async def __aenter__(self) -> SseServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stream is not None:
            self._stream.close()
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                self.headers.append((f"{method} {target}", headers))
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET" and target == "/sse":
                    self._stream = writer
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n")
                    await self.send_event(self.first_event, self.endpoint)
                    if self.ping_first:
                        await self.send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
                    await reader.read()  # until the client goes
                    return
                if method == "POST" and target.startswith("/messages"):
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\n\r\nAccepted")
                    await writer.drain()
                    await self._handle(json.loads(body))
                    continue
                page = b"<html><title>Nothing here</title>404</html>"
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n%s"
                             % (len(page), page))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if writer is not self._stream:
                writer.close()

    async def send_event(self, event: str, data: str) -> None:
        assert self._stream is not None
        self._stream.write(f"event: {event}\ndata: {data}\n\n".encode())
        await self._stream.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_event("message", json.dumps(message))

    async def _handle(self, msg: dict[str, Any]) -> None:
        self.received.append(msg)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            await self.send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                "serverInfo": {"name": "hand-sse", "version": "1"}}})
        elif method == "tools/list":
            if self.tools_list_line:
                await self.send_event("message", "x" * self.tools_list_line)
            await self.send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "wait", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call":
            if self.close_on_call:
                assert self._stream is not None
                self._stream.close()
            # "wait" is never answered: the client's time limit runs out


def test_hand_server_speaks_2024_11_05_and_headers_stay_on_its_origin() -> None:
    async def main() -> None:
        async with SseServer(ping_first=True) as server, \
                Client(server.url, era_cache=EraCache(), bearer_token="s3cret", headers={"X-Team": "a"}) as client:
            assert client.legacy_version == "2024-11-05"
            assert [t.name for t in await client.list_tools()] == ["wait"]
            await until(lambda: any(m.get("id") == "srv-1" for m in server.received), "our answer to the ping")
            with pytest.raises(TransportError, match="no answer within 0.3 s"):
                await client.call_tool("wait", timeout=0.3)
            await until(lambda: any(m.get("method") == "notifications/cancelled" for m in server.received),
                        "notifications/cancelled")
            assert {"id": "srv-1", "jsonrpc": "2.0", "result": {}} in server.received
            for what, headers in server.headers:
                assert headers.get("authorization") == "Bearer s3cret", what
                assert headers.get("x-team") == "a", what
            assert server.headers[0][0] == "GET /sse"
            assert server.headers[0][1]["accept"] == "text/event-stream"
            assert all(what.startswith("POST /messages?session=1") for what, _ in server.headers[1:])

    run(main(), 30)


@pytest.mark.parametrize("endpoint", ["http://evil.example/messages", "//evil.example/messages",
                                      "http://127.0.0.1:1/messages", "https://127.0.0.1/messages"])
def test_an_endpoint_on_another_origin_is_refused(endpoint: str) -> None:
    async def main() -> str:
        async with SseServer(endpoint=endpoint) as server:
            with pytest.raises(TransportError) as refused:
                async with Client(server.url, era_cache=EraCache(), bearer_token="s3cret"):
                    pass
            assert len(server.headers) == 1  # the GET only: nothing was POSTed anywhere
            return str(refused.value)

    message = run(main(), 30)
    assert "endpoint event points to another origin" in message and "\n" not in message


def test_a_stream_without_an_endpoint_event_is_not_sse() -> None:
    async def main() -> str:
        async with SseServer(first_event="message") as server:
            with pytest.raises(TransportError) as refused:
                async with Client(server.url, era_cache=EraCache()):
                    pass
            return str(refused.value)

    assert "the first event is 'message', not 'endpoint'" in run(main(), 30)


def test_a_url_ending_in_sse_that_is_no_event_stream() -> None:
    async def main() -> str:
        async with SseServer() as server:
            with pytest.raises(TransportError) as refused:
                async with Client(server.url.replace("/sse", "/other/sse"), era_cache=EraCache()):
                    pass
            return str(refused.value)

    message = run(main(), 30)
    assert "answered HTTP 404" in message and "Nothing here" in message and "HTTP+SSE endpoint" in message
    assert "\n" not in message


def test_a_line_over_the_limit_is_refused() -> None:
    async def main() -> None:
        async with SseServer(tools_list_line=5000) as server, \
                Client(server.url, era_cache=EraCache(), max_response_bytes=4096, restart=False) as client:
            with pytest.raises(ResponseTooLarge):
                await client.list_tools()
            with pytest.raises(TransportError):  # the stream is closed for good
                await client.list_tools(cache="bypass")

    run(main(), 30)


def test_a_stream_that_ends_fails_the_waiting_request() -> None:
    async def main() -> None:
        async with SseServer(close_on_call=True) as server, \
                Client(server.url, era_cache=EraCache(), restart=False) as client:
            with pytest.raises(TransportError, match="closed the SSE stream"):
                await client.call_tool("wait", timeout=10)

    run(main(), 30)


def test_transport_option_errors() -> None:
    with pytest.raises(ValueError, match="transport must be"):
        Client("http://127.0.0.1:1/mcp", transport="websocket")
    with pytest.raises(TypeError, match="transport='sse'"):
        Client(["python", "server.py"], transport="sse")
    with pytest.raises(ValueError, match="HTTP\\+SSE transport carries only"):
        Client("http://127.0.0.1:1/sse", mode="modern")
    assert isinstance(Client("http://127.0.0.1:1/events", transport="sse").transport, SseTransport)
    assert not isinstance(Client("http://127.0.0.1:1/sse", transport="streamable-http").transport, SseTransport)
