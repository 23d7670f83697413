"""The client's layers: the transport contract (Capabilities, a Response per request), the
auth hook (sees each Response's status and headers, may retry), the one place the server's
own requests are answered, and what result objects look like to users."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx
import msgspec
import pytest

from mcpkit import Server
from mcpkit.client import (
    Auth,
    BearerAuth,
    Capabilities,
    Client,
    ClientTransport,
    EraCache,
    HttpStatusError,
    OutgoingRequest,
    Response,
)
from mcpkit.client._http import HttpTransport, LegacyHttpTransport
from mcpkit.client._input import InputHandlers
from mcpkit.client._memory import MemoryTransport
from mcpkit.client._stdio import StdioTransport
from mcpkit.protocol import errors
from mcpkit.protocol import types as t
from tests.helpers.paths import DEMO
from tests.helpers.servers import mcpkit_serve_argv, running_server

URL = "http://localhost/mcp"
VERSION = "2026-07-28"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def demo_server() -> Server:
    server = Server("layers", "1.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return server


def guarded(app: Any, token: str) -> Any:
    """``app`` behind a bearer check: anything but ``token`` gets a plain 401."""

    async def guard(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if auth != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"text/plain"),
                    (b"www-authenticate", b'Bearer resource_metadata="http://localhost/.well-known/x"')]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guard


def asgi_client(app: Any, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), **kw)


# ====================================================================== the transport contract
def test_transports_declare_their_capabilities() -> None:
    assert StdioTransport.capabilities == Capabilities(kind="stdio")
    assert MemoryTransport.capabilities.kind == "memory"
    assert HttpTransport.capabilities.http and HttpTransport.capabilities.supports_header_mirroring
    assert not HttpTransport.capabilities.sessionful
    assert LegacyHttpTransport.capabilities.sessionful and not LegacyHttpTransport.capabilities.supports_header_mirroring
    assert isinstance(Client(demo_server()).transport, MemoryTransport)
    assert isinstance(Client(URL).transport, HttpTransport)


def test_memory_response_has_no_http_parts() -> None:
    async def go() -> Response:
        transport = MemoryTransport(demo_server())
        meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
        return await transport.request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}, None)

    resp = run(go())
    assert resp.status is None and resp.headers is None
    assert resp.message is not None and resp.result["structuredContent"] == {"result": 3}


def slow_fast_app() -> Any:
    """tools/call "slow" answers 200 after a pause; "fast" answers 400 with a JSON-RPC error
    at once. Each echoes its tool name in ``x-tool``."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        msg = json.loads(body)
        name = msg["params"]["name"]
        if name == "slow":
            await asyncio.sleep(0.3)
            status, payload = 200, {"jsonrpc": "2.0", "id": msg["id"], "result": {
                "resultType": "complete", "content": [{"type": "text", "text": "slow"}]}}
        else:
            status, payload = 400, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "fast fails"}}
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"x-tool", name.encode())]})
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})

    return app


def test_concurrent_http_requests_each_get_their_own_status_and_headers() -> None:
    async def go() -> tuple[Response, Response]:
        async with asgi_client(slow_fast_app()) as http:
            transport = HttpTransport(URL, http_client=http)
            meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
            slow = asyncio.ensure_future(transport.request(1, "tools/call", {"name": "slow", "_meta": meta}, None))
            await asyncio.sleep(0.05)  # "slow" is in flight while "fast" comes and goes
            fast = await transport.request(2, "tools/call", {"name": "fast", "_meta": meta}, None)
            return await slow, fast

    slow, fast = run(go())
    assert (slow.status, slow.headers["x-tool"], slow.id) == (200, "slow", 1)
    assert (fast.status, fast.headers["x-tool"], fast.id) == (400, "fast", 2)
    assert slow.error is None and fast.error["code"] == -32602


class Recording(Auth):
    """Sends requests unchanged and records (method, tool name, status, x-tool) per Response."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, int | None, str | None]] = []

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        response = yield request
        name = (request.params or {}).get("name")
        self.seen.append((request.method, name, response.status, (response.headers or {}).get("x-tool")))


def test_concurrent_client_calls_show_the_auth_flow_their_own_response() -> None:
    auth = Recording()

    async def go() -> list[Any]:
        async with asgi_client(slow_fast_app()) as http:
            async with Client(URL, mode=VERSION, http_client=http, auth=auth, cache=False) as client:
                return await asyncio.gather(client.call_tool("slow"), client.call_tool("fast"), return_exceptions=True)

    slow, fast = run(go())
    assert slow.content[0].text == "slow"
    assert isinstance(fast, errors.MCPError) and fast.code == -32602
    assert sorted(auth.seen) == [("tools/call", "fast", 400, "fast"), ("tools/call", "slow", 200, "slow")]


# ====================================================================== the auth hook
class Refreshing(Auth):
    """A stand-in for OAuth: on a 401 with WWW-Authenticate, get a new token and retry."""

    def __init__(self) -> None:
        self.token = "stale"
        self.challenges: list[tuple[str, int | None, str | None]] = []

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        response = yield request
        if response.status == 401:
            challenge = (response.headers or {}).get("www-authenticate")
            self.challenges.append((request.method, response.status, challenge))
            self.token = "fresh"
            request.headers["Authorization"] = f"Bearer {self.token}"
            yield request


def test_auth_flow_sees_a_401_and_retries_with_a_new_header() -> None:
    auth = Refreshing()
    sent: list[tuple[str, str | None]] = []

    async def record(request: httpx.Request) -> None:
        sent.append((json.loads(request.content).get("method"), request.headers.get("authorization")))

    async def go() -> Any:
        app = guarded(demo_server().http_app(), "fresh")
        async with asgi_client(app, event_hooks={"request": [record]}) as http:
            async with Client(URL, http_client=http, auth=auth, era_cache=EraCache()) as client:
                assert client.era == "modern"
                tools = await client.list_tools()
                return tools, await client.call_tool("add", {"a": 2, "b": 40})

    tools, result = run(go())
    assert [x.name for x in tools] == ["add"]
    assert result.structuredContent == {"result": 42}
    # The era probe met the 401: the flow saw it, with its challenge, and retried once.
    assert auth.challenges == [("server/discover", 401, 'Bearer resource_metadata="http://localhost/.well-known/x"')]
    assert sent == [("server/discover", "Bearer stale"), ("server/discover", "Bearer fresh"),
                    ("tools/list", "Bearer fresh"), ("tools/call", "Bearer fresh")]


def test_a_401_the_flow_gives_up_on_is_an_http_status_error() -> None:
    async def go() -> None:
        app = guarded(demo_server().http_app(), "never")
        async with asgi_client(app) as http:
            client = Client(URL, mode=VERSION, http_client=http, auth=BearerAuth("wrong"))
            with pytest.raises(HttpStatusError) as info:
                await client.call_tool("add", {"a": 1, "b": 1})
            assert info.value.status == 401
            assert info.value.headers["www-authenticate"].startswith("Bearer ")
            await client.close()

    run(go())


def test_async_auth_flow() -> None:
    class Fetching(Auth):
        async def async_flow(self, request: OutgoingRequest) -> AsyncGenerator[OutgoingRequest, Response]:
            await asyncio.sleep(0)  # e.g. a token endpoint
            request.headers["Authorization"] = "Bearer fresh"
            yield request

    async def go() -> Any:
        app = guarded(demo_server().http_app(), "fresh")
        async with asgi_client(app) as http:
            async with Client(URL, http_client=http, auth=Fetching(), era_cache=EraCache()) as client:
                return await client.call_tool("add", {"a": 1, "b": 2})

    assert run(go()).structuredContent == {"result": 3}


def test_bearer_token_goes_through_the_hook() -> None:
    async def go() -> Any:
        app = guarded(demo_server().http_app(), "s3cret")
        async with asgi_client(app) as http:
            async with Client(URL, http_client=http, bearer_token="s3cret", era_cache=EraCache()) as client:
                assert isinstance(client.auth, BearerAuth)
                return await client.call_tool("add", {"a": 20, "b": 22})

    assert run(go()).structuredContent == {"result": 42}
    with pytest.raises(TypeError, match="not both"):
        Client(URL, bearer_token="a", auth=BearerAuth("b"))
    with pytest.raises(TypeError, match="bearer_token"):
        Client(["server-command"], bearer_token="a")


def test_legacy_session_requests_all_carry_the_hook_headers() -> None:
    """initialize, notifications/initialized, the GET stream, requests and DELETE."""
    seen: list[tuple[str, str | None]] = []

    async def record(request: httpx.Request) -> None:
        seen.append((request.method, request.headers.get("authorization")))

    async def go(url: str) -> None:
        http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), event_hooks={"request": [record]})
        try:
            async with Client(url, mode="legacy", era_cache=EraCache(), http_client=http, auth=BearerAuth("tok")) as c:
                assert c.era == "legacy"
                await c.list_tools()
                for _ in range(60):
                    if any(m == "GET" for m, _ in seen):
                        break
                    await asyncio.sleep(0.05)
        finally:
            await http.aclose()

    with running_server(mcpkit_serve_argv(DEMO)) as url:
        run(go(url))
    assert {m for m, _ in seen} == {"POST", "GET", "DELETE"}
    assert all(a == "Bearer tok" for _, a in seen), seen


# ====================================================================== the server's own requests
def test_ping_is_answered_in_one_place() -> None:
    handlers = InputHandlers(None, None, None)

    async def go() -> None:
        assert await handlers.serve("ping", {}) == {}
        with pytest.raises(errors.MCPError) as info:
            await handlers.serve("sampling/createMessage", {})  # outside a legacy session
        assert info.value.code == errors.METHOD_NOT_FOUND
        handlers.serving = True
        assert await handlers.serve("ping", {}) == {}
        with pytest.raises(errors.MCPError):
            await handlers.serve("sampling/createMessage", {})  # no sampling handler

    run(go())
    client = Client(demo_server())
    # The transport's one entry for the server's requests (telemetry's seam), which _input.serve answers.
    assert client.transport.on_request == client._serve_request


# ====================================================================== result objects
def test_call_tool_result_reads_as_users_expect() -> None:
    r = msgspec.convert({"content": [{"type": "text", "text": "hi"}, {"type": "resource_link", "uri": "a", "name": "b"},
                                     {"type": "image", "data": "AA==", "mimeType": "image/png"}]}, t.CallToolResult)
    assert r.isError is False and r.structuredContent is None
    assert [c.type for c in r.content] == ["text", "resource_link", "image"]
    assert msgspec.json.decode(msgspec.json.encode(r)) == {
        "resultType": "complete", "content": [{"type": "text", "text": "hi"}, {"type": "resource_link", "uri": "a", "name": "b"},
                                              {"type": "image", "data": "AA==", "mimeType": "image/png"}]}
    failed = msgspec.convert({"content": [], "isError": True, "structuredContent": {"x": 1}}, t.CallToolResult)
    assert failed.isError is True and failed.structuredContent == {"x": 1}
    assert type(failed.structuredContent) is dict
    assert t.EmbeddedResource.type == "resource" and t.PromptReference(name="p").type == "ref/prompt"


def test_client_results_over_memory() -> None:
    async def go() -> t.CallToolResult:
        async with Client(demo_server()) as client:
            return await client.call_tool("add", {"a": 1, "b": 1})

    r = run(go())
    assert r.isError is False and r.structuredContent == {"result": 2} and r.content[0].type == "text"


def test_custom_transport_with_the_default_capabilities() -> None:
    class Echo(ClientTransport):
        async def request(self, id: Any, method: str, params: dict[str, Any], on_note: Any, *,
                          headers: Any = None) -> Response:
            from mcpkit.protocol import codec

            return Response(codec.Response(id, {"resultType": "complete", "content": [], "echo": method}, None))

    async def go() -> dict[str, Any]:
        client = Client(demo_server(), cache=False)
        client.transport = Echo()
        async with client:
            return await client.request("tools/call", {"name": "x"})

    assert run(go())["echo"] == "tools/call"
