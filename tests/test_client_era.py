"""The client's era detection (2026-07-28 vs the 2025-11-25 ``initialize`` handshake).

Spec: basic/versioning.mdx and basic/transports/{stdio,streamable-http}.mdx "Backward
Compatibility"; checklist §3.3 and traps 6-9. Every case ends in a verdict (and a working
session) or in a clear error.

Fakes (real processes): tests/servers/era_stdio.py (stdio) and tests/servers/era_http.py
(stdlib http.server); both log every message they receive, so the tests can count probes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from mcpkit import EraCache
from mcpkit.client import Client, TransportError
from mcpkit.client._era import era_key
from mcpkit.protocol import codec, eras
from mcpkit.protocol.errors import MCPError
from tests.helpers.aio import run as aio_run
from tests.helpers.paths import DEMO, ERA_HTTP, ERA_STDIO, ROOT, subprocess_env
from tests.helpers.servers import free_port, mcpkit_serve_argv, running_server

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PV = "io.modelcontextprotocol/protocolVersion"


def run(coro: Any, limit: float = 60.0) -> Any:
    return aio_run(coro, limit)


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def requests_in(path: Path) -> list[str]:
    """The methods of the messages (not the responses) a fake received, in order."""
    return [e["method"] for e in read_log(path) if not e.get("response")]


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


# ====================================================================== pure verdicts
def resp(result: Any = None, error: Any = None) -> codec.Response:
    return codec.Response(id=1, result=result, error=error)


DISCOVER = {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": {}, "ttlMs": 0, "cacheScope": "private"}
E32022 = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": [MODERN], "requested": "x"}}
E32021 = {"code": -32021, "message": "Missing capability", "data": {"requiredCapabilities": {"sampling": {}}}}
E32020 = {"code": -32020, "message": "Header mismatch"}


@pytest.mark.parametrize("response, verdict", [
    # silence: a legacy server waiting for initialize
    (None, "legacy"),
    # a DiscoverResult
    (resp(DISCOVER), "modern"),
    (resp({"supportedVersions": [MODERN, LEGACY], "capabilities": {"tools": {}}}), "modern"),
    # results that are not a DiscoverResult (trap 8: lenient legacy servers answer anything)
    (resp({}), "legacy"),
    (resp({"content": [], "isError": False}), "legacy"),
    (resp({"supportedVersions": MODERN, "capabilities": {}}), "legacy"),
    (resp({"supportedVersions": [MODERN]}), "legacy"),
    (resp({"capabilities": {}}), "legacy"),
    (resp([DISCOVER]), "legacy"),
    (resp("ok"), "legacy"),
    (resp(None), "legacy"),
    # recognised modern errors
    (resp(error=E32022), "modern"),
    (resp(error={**E32022, "data": {"supported": []}}), "modern"),
    (resp(error=E32021), "modern"),
    (resp(error=E32020), "modern"),
    # the same codes without their data shapes are not recognised
    (resp(error={"code": -32022, "message": "x"}), "legacy"),
    (resp(error={"code": -32022, "message": "x", "data": {"supported": MODERN}}), "legacy"),
    (resp(error={"code": -32022, "message": "x", "data": [MODERN]}), "legacy"),
    (resp(error={"code": -32021, "message": "x"}), "legacy"),
    (resp(error={"code": -32021, "message": "x", "data": {"requiredCapabilities": ["sampling"]}}), "legacy"),
    (resp(error={"code": "-32022", "message": "x", "data": {"supported": [MODERN]}}), "legacy"),
    # any other error: legacy, never keyed to one code (trap 6: -32601 on stdio is legacy)
    (resp(error={"code": -32601, "message": "Method not found"}), "legacy"),
    (resp(error={"code": -32600, "message": "Invalid Request"}), "legacy"),
    (resp(error={"code": -32602, "message": "Invalid params"}), "legacy"),
    # trap 6: legacy servers used -32602 for version errors, with data.supported
    (resp(error={"code": -32602, "message": "Unsupported protocol version", "data": {"supported": [LEGACY]}}), "legacy"),
    (resp(error={"code": -32000, "message": "Server not initialized"}), "legacy"),
    (resp(error={"code": -32603, "message": "Internal error"}), "legacy"),
    (resp(error="boom"), "legacy"),
    (resp(error={}), "legacy"),
    # an error wins over a result in a malformed response
    (resp(DISCOVER, {"code": -32601, "message": "x"}), "legacy"),
])
def test_stdio_probe_verdict(response: Any, verdict: str) -> None:
    assert eras.stdio_probe_verdict(response) == verdict


@pytest.mark.parametrize("status, message, verdict", [
    # authorization is not an era signal (trap 7), whatever the body says
    (401, None, "error"),
    (403, None, "error"),
    (401, resp(error=E32022), "error"),
    (403, resp(error={"code": -32601, "message": "x"}), "error"),
    # 4xx without a recognised modern body: legacy
    (400, None, "legacy"),
    (404, None, "legacy"),
    (405, None, "legacy"),
    (400, resp(error={"code": -32000, "message": "Bad Request: No valid session ID provided"}), "legacy"),
    (400, resp(error={"code": -32602, "message": "Invalid params"}), "legacy"),
    (400, resp(error={"code": -32602, "message": "bad version", "data": {"supported": [LEGACY]}}), "legacy"),
    (400, resp(error={"code": -32601, "message": "Method not found"}), "legacy"),
    (404, resp(error={"code": -32600, "message": "Session not found"}), "legacy"),
    (400, resp(error={"code": -32022, "message": "x"}), "legacy"),
    # 4xx with a recognised modern body: modern
    (400, resp(error=E32022), "modern"),
    (400, resp(error=E32021), "modern"),
    (400, resp(error=E32020), "modern"),
    # trap 6: a 404 whose body is a JSON-RPC -32601 is a modern server lacking the method
    (404, resp(error={"code": -32601, "message": "Method not found"}), "modern"),
    # 2xx
    (200, resp(DISCOVER), "modern"),
    (200, resp({"tools": []}), "legacy"),
    (200, resp({}), "legacy"),
    (200, resp([1]), "legacy"),
    (200, resp(error={"code": -32601, "message": "Method not found"}), "legacy"),
    (200, resp(error=E32022), "modern"),
    (200, None, "error"),
    (202, None, "error"),
    # server errors and redirects are no era signal
    (500, None, "error"),
    (502, None, "error"),
    (503, resp(error={"code": -32603, "message": "x"}), "error"),
    (302, None, "error"),
])
def test_http_probe_verdict(status: int, message: Any, verdict: str) -> None:
    assert eras.http_probe_verdict(status, message) == verdict


def test_an_error_response_with_a_null_id_is_read() -> None:
    msg = codec.decode(b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request"}}')
    assert type(msg) is codec.Response and msg.error["code"] == -32000


def test_an_error_response_without_an_id_is_read() -> None:
    msg = codec.decode(b'{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}')
    assert type(msg) is codec.Response and msg.id is None and msg.error["code"] == -32700


def test_era_key_per_command_line_and_per_origin() -> None:
    argv = [sys.executable, "server.py", "--flag"]
    assert era_key(argv) == era_key(tuple(argv)) == "stdio:" + json.dumps(argv)
    assert era_key(argv) != era_key(argv + ["x"])
    # HTTP: the origin, whatever the path
    assert era_key("http://127.0.0.1:8000/mcp") == era_key("http://127.0.0.1:8000/other") == "http:http://127.0.0.1:8000"
    assert era_key("http://127.0.0.1:8000/mcp") != era_key("http://127.0.0.1:8001/mcp")
    assert era_key("http://127.0.0.1:8000/mcp") != era_key("https://127.0.0.1:8000/mcp")


def test_client_uses_the_same_key_for_a_string_and_a_list_command(tmp_path: Path) -> None:
    a = Client(f"{sys.executable} {ERA_STDIO} modern {tmp_path / 'log'}", era_cache=EraCache())
    b = Client([sys.executable, str(ERA_STDIO), "modern", str(tmp_path / "log")], era_cache=EraCache())
    assert a._era_key == b._era_key


# ====================================================================== EraCache
def test_era_cache_persists_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "eras.json"
    cache = EraCache(path)
    assert cache.get("stdio:[\"x\"]") is None
    cache.put("stdio:[\"x\"]", "legacy")
    cache.put("http:http://h:1", "modern")
    assert json.loads(path.read_text()) == {"stdio:[\"x\"]": "legacy", "http:http://h:1": "modern"}
    again = EraCache(path)
    assert again.get("stdio:[\"x\"]") == "legacy"
    assert again.get("http:http://h:1") == "modern"
    again.forget("stdio:[\"x\"]")
    assert EraCache(path).get("stdio:[\"x\"]") is None
    assert EraCache(path).get("http:http://h:1") == "modern"


def test_era_cache_memory_only_writes_nothing(tmp_path: Path) -> None:
    cache = EraCache()
    cache.put("k", "modern")
    assert cache.get("k") == "modern"
    assert list(tmp_path.iterdir()) == []


def test_era_cache_ignores_unreadable_files_and_bad_values(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe not json")
    assert EraCache(garbage).get("k") is None
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"a": "modern", "b": "legacy", "c": "dual", "d": ["modern"], "e": None}))
    cache = EraCache(values)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), cache.get("d"), cache.get("e")) == ("modern", "legacy", None, None, None)
    # an unwritable place is a warning, not a crash
    nowhere = EraCache(tmp_path / "no" / "such" / "dir" / "eras.json")
    nowhere.put("k", "legacy")
    assert nowhere.get("k") == "legacy"


@pytest.mark.parametrize("content", ["[]", "\"modern\"", "42", "null"])
def test_era_cache_ignores_a_file_that_is_not_an_object(tmp_path: Path, content: str) -> None:
    path = tmp_path / "eras.json"
    path.write_text(content)
    cache = EraCache(path)
    assert cache.get("k") is None
    cache.put("k", "modern")
    assert EraCache(path).get("k") == "modern"


# ====================================================================== stdio fakes
def stdio_argv(mode: str, log: Path) -> list[str]:
    return [sys.executable, str(ERA_STDIO), mode, str(log)]


@pytest.mark.parametrize("mode", ["legacy-32601", "legacy-32600", "legacy-32602", "legacy-32000", "legacy-silent"])
def test_stdio_legacy_servers_fall_back_to_initialize(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "log"
    cache = EraCache()

    async def main() -> tuple[list[str], str, float]:
        t0 = time.monotonic()
        async with Client(stdio_argv(mode, log), probe_timeout=0.5, era_cache=cache) as client:
            elapsed = time.monotonic() - t0
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            assert client.initialize_result["serverInfo"]["name"] == f"era-fake-{mode}"
            tools = await client.list_tools()
            result = await client.call_tool("echo", {"message": "hi"})
            return [t.name for t in tools], text_of(result), elapsed

    names, text, elapsed = run(main())
    assert names == ["echo"]
    assert text == "Echo: hi"
    entries = read_log(log)
    methods = requests_in(log)
    assert methods[0] == "server/discover"
    assert "initialize" in methods and "notifications/initialized" in methods
    assert methods.index("initialize") < methods.index("notifications/initialized") < methods.index("tools/list")
    assert methods.count("server/discover") == 1
    # the probe carried our preferred modern version; legacy requests carry no modern _meta
    assert entries[0]["params"]["_meta"][PV] == MODERN
    for e in entries:
        if e["method"] in ("tools/list", "tools/call"):
            assert PV not in ((e["params"] or {}).get("_meta") or {})
    init = next(e for e in entries if e["method"] == "initialize")
    assert init["params"]["protocolVersion"] == LEGACY
    if mode == "legacy-silent":
        assert elapsed >= 0.45  # it waited for the probe...
        assert elapsed < 5.0  # ...but only probe_timeout, not the request timeout
        # the abandoned probe is cancelled, as stdio requires
        cancels = [e for e in entries if e["method"] == "notifications/cancelled"]
        assert cancels and cancels[0]["params"]["requestId"] == entries[0]["id"]
    assert cache.get(era_key(stdio_argv(mode, log))) == "legacy"


def test_stdio_discover_result_means_modern(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> Any:
        async with Client(stdio_argv("modern", log), probe_timeout=0.5, era_cache=EraCache()) as client:
            assert client.era == "modern"
            assert client.legacy_version is None
            card = await client.discover()
            tools = await client.list_tools()
            return card, tools

    card, tools = run(main())
    assert card.supportedVersions == [MODERN]
    assert [t.name for t in tools] == ["echo"]
    methods = requests_in(log)
    assert "initialize" not in methods
    # discover() reuses the probe's answer
    assert methods.count("server/discover") == 1
    for e in read_log(log):
        if e["method"] in ("server/discover", "tools/list"):
            assert e["params"]["_meta"][PV] == MODERN


def test_stdio_32022_means_modern_and_the_version_is_retried(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> Any:
        async with Client(stdio_argv("modern-32022", log), protocol_version="2030-01-01",
                          probe_timeout=0.5, era_cache=EraCache()) as client:
            assert client.era == "modern"
            assert client.protocol_version == MODERN
            tools = await client.list_tools()
            result = await client.call_tool("echo", {"message": "v"})
            return tools, result

    tools, result = run(main())
    assert [t.name for t in tools] == ["echo"]
    assert text_of(result) == "Echo: v"
    entries = [e for e in read_log(log) if not e["response"]]
    assert "initialize" not in [e["method"] for e in entries]
    assert entries[0]["method"] == "server/discover"
    assert entries[0]["params"]["_meta"][PV] == "2030-01-01"
    later = [e for e in entries[1:] if e["method"] in ("tools/list", "tools/call")]
    assert later and all(e["params"]["_meta"][PV] == MODERN for e in later)


def test_stdio_32022_without_a_common_version_is_a_clear_error(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> None:
        async with Client(stdio_argv("modern-future", log), probe_timeout=0.5, era_cache=EraCache()) as client:
            assert client.era == "modern"  # a modern server: never fall back to initialize
            with pytest.raises(MCPError) as info:
                await client.list_tools()
            assert info.value.code == -32022
            assert info.value.data["supported"] == ["2099-01-01"]

    run(main())
    assert "initialize" not in requests_in(log)


def test_stdio_32022_offering_only_a_legacy_version_switches_to_initialize(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> Any:
        async with Client(stdio_argv("modern-legacyonly", log), probe_timeout=0.5, era_cache=EraCache()) as client:
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            return await client.list_tools()

    assert [t.name for t in run(main())] == ["echo"]


def test_stdio_server_that_dies_is_a_clear_error(tmp_path: Path) -> None:
    async def main() -> None:
        client = Client([sys.executable, "-c", "import sys; sys.exit(3)"], probe_timeout=2, era_cache=EraCache())
        with pytest.raises(TransportError):
            await client.start()

    run(main())


def test_stdio_command_not_found_is_a_clear_error(tmp_path: Path) -> None:
    async def main() -> None:
        client = Client([str(tmp_path / "no-such-server")], era_cache=EraCache())
        with pytest.raises(TransportError, match="cannot start"):
            await client.start()

    run(main())


# ====================================================================== explicit modes
def test_mode_legacy_never_probes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    cache = EraCache()
    key = era_key(stdio_argv("legacy-32601", log))
    cache.put(key, "modern")  # an explicit mode ignores the cache

    async def main() -> list[str]:
        async with Client(stdio_argv("legacy-32601", log), mode="legacy", era_cache=cache) as client:
            assert client.era == "legacy"
            return [t.name for t in await client.list_tools()]

    assert run(main()) == ["echo"]
    methods = requests_in(log)
    assert "server/discover" not in methods
    assert methods[:2] == ["initialize", "notifications/initialized"]


def test_mode_legacy_on_a_modern_only_server_is_a_clear_error(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> None:
        client = Client(stdio_argv("modern", log), mode="legacy", era_cache=EraCache())
        with pytest.raises(MCPError) as info:
            await client.start()
        assert MODERN in info.value.message  # the server named what it speaks

    run(main())
    assert requests_in(log) == ["initialize"]


@pytest.mark.parametrize("mode", [MODERN, "modern"])
def test_modern_modes_never_initialize(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "log"
    cache = EraCache()
    cache.put(era_key(stdio_argv("modern", log)), "legacy")  # an explicit mode ignores the cache

    async def main() -> list[str]:
        async with Client(stdio_argv("modern", log), mode=mode, era_cache=cache) as client:
            assert client.era == "modern"
            return [t.name for t in await client.list_tools()]

    assert run(main()) == ["echo"]
    methods = requests_in(log)
    assert "initialize" not in methods
    assert "server/discover" not in methods  # no probe either: the era is pinned
    assert methods == ["tools/list"]


def test_mode_2026_on_a_legacy_server_fails_without_falling_back(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> None:
        async with Client(stdio_argv("legacy-32000", log), mode=MODERN, era_cache=EraCache()) as client:
            with pytest.raises(MCPError) as info:
                await client.list_tools()
            assert info.value.code == -32000

    run(main())
    assert "initialize" not in requests_in(log)


@pytest.mark.parametrize("mode", ["2025-11-25", "dual", "", "2099-01-01"])
def test_unknown_modes_are_refused(mode: str) -> None:
    with pytest.raises(ValueError, match="mode"):
        Client([sys.executable, "-c", "pass"], mode=mode)


# ====================================================================== era cache, end to end (stdio)
def test_stdio_verdict_is_cached_per_command_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    other_log = tmp_path / "other"
    cache = EraCache()

    async def main() -> None:
        for _ in range(2):
            async with Client(stdio_argv("legacy-32601", log), probe_timeout=0.5, era_cache=cache) as client:
                assert client.era == "legacy"
                assert [t.name for t in await client.list_tools()] == ["echo"]
        for _ in range(2):
            async with Client(stdio_argv("modern", other_log), probe_timeout=0.5, era_cache=cache) as client:
                assert client.era == "modern"
                assert [t.name for t in await client.list_tools()] == ["echo"]

    run(main())
    methods = requests_in(log)
    assert methods.count("server/discover") == 1  # the second client did not probe
    assert methods.count("initialize") == 2  # a new process: a new handshake
    other = requests_in(other_log)
    assert other.count("server/discover") == 1
    assert other.count("tools/list") == 2
    assert "initialize" not in other


def test_stdio_verdict_persists_in_an_era_cache_file(tmp_path: Path) -> None:
    log = tmp_path / "log"
    path = tmp_path / "eras.json"
    argv = stdio_argv("legacy-32602", log)

    async def one(cache: EraCache) -> None:
        async with Client(argv, probe_timeout=0.5, era_cache=cache) as client:
            assert client.era == "legacy"
            assert (await client.call_tool("echo", {"message": "p"})).content[0].text == "Echo: p"

    run(one(EraCache(path)))
    assert json.loads(path.read_text()) == {era_key(argv): "legacy"}
    run(one(EraCache(path)))  # a "restart": a new cache object reading the same file
    assert requests_in(log).count("server/discover") == 1


def test_stdio_stale_cached_legacy_reprobes_a_now_modern_server(tmp_path: Path) -> None:
    log = tmp_path / "log"
    mode_file = tmp_path / "mode"
    argv = stdio_argv(f"@{mode_file}", log)
    cache = EraCache(tmp_path / "eras.json")
    cache.put(era_key(argv), "legacy")
    mode_file.write_text("modern")

    async def main() -> list[str]:
        async with Client(argv, probe_timeout=0.5, era_cache=cache) as client:
            assert client.era == "modern"
            return [t.name for t in await client.list_tools()]

    assert run(main()) == ["echo"]
    assert requests_in(log)[:2] == ["initialize", "server/discover"]
    assert EraCache(tmp_path / "eras.json").get(era_key(argv)) == "modern"


def test_stdio_stale_cached_modern_reprobes_a_now_legacy_server(tmp_path: Path) -> None:
    log = tmp_path / "log"
    mode_file = tmp_path / "mode"
    argv = stdio_argv(f"@{mode_file}", log)
    cache = EraCache(tmp_path / "eras.json")
    mode_file.write_text("modern")

    async def one(expect: str) -> list[str]:
        async with Client(argv, probe_timeout=0.5, era_cache=cache) as client:
            names = [t.name for t in await client.list_tools()]
            assert client.era == expect
            return names

    assert run(one("modern")) == ["echo"]
    assert cache.get(era_key(argv)) == "modern"
    mode_file.write_text("legacy-32601")
    log.unlink()
    assert run(one("legacy")) == ["echo"]
    # the first request failed, the client probed again, then did the handshake and retried
    assert requests_in(log) == ["tools/list", "server/discover", "initialize", "notifications/initialized", "tools/list"]
    assert EraCache(tmp_path / "eras.json").get(era_key(argv)) == "legacy"


# ====================================================================== server requests on a legacy session
def test_stdio_legacy_server_requests_use_the_mrtr_callbacks(tmp_path: Path) -> None:
    log = tmp_path / "log"
    seen: dict[str, Any] = {}

    async def elicitation(params: Any) -> dict:
        seen["elicitation"] = params
        return {"action": "accept", "content": {"name": "Ada"}}

    def sampling(params: Any) -> dict:
        seen["sampling"] = params
        return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "fake-model"}

    async def main() -> dict:
        async with Client(stdio_argv("legacy-requests", log), probe_timeout=0.5, era_cache=EraCache(),
                          elicitation=elicitation, sampling=sampling,
                          roots=[{"uri": "file:///work", "name": "work"}]) as client:
            assert client.era == "legacy"
            result = await client.call_tool("ask", {})
            return json.loads(text_of(result))

    answers = run(main())
    assert answers["s-ping"] == {}
    assert answers["s-roots"] == {"roots": [{"uri": "file:///work", "name": "work"}]}
    assert answers["s-sampling"]["model"] == "fake-model"
    assert answers["s-sampling"]["content"] == {"type": "text", "text": "4"}
    assert answers["s-elicit"] == {"action": "accept", "content": {"name": "Ada"}}
    assert seen["elicitation"].message == "Your name?"
    assert seen["sampling"].maxTokens == 5
    init = next(e for e in read_log(log) if e["method"] == "initialize")
    caps = init["params"]["capabilities"]
    assert "sampling" in caps and "elicitation" in caps and "roots" in caps


def test_stdio_legacy_server_requests_without_handlers_get_errors_and_ping_still_works(tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def main() -> dict:
        async with Client(stdio_argv("legacy-requests", log), probe_timeout=0.5, era_cache=EraCache()) as client:
            return json.loads(text_of(await client.call_tool("ask", {})))

    answers = run(main())
    assert answers["s-ping"] == {}
    for k in ("s-roots", "s-sampling", "s-elicit"):
        assert answers[k]["error"]["code"] == -32601, answers[k]
    init = next(e for e in read_log(log) if e["method"] == "initialize")
    assert init["params"]["capabilities"] == {}


def test_roots_provider_callable_answers_a_legacy_roots_list(tmp_path: Path) -> None:
    async def roots() -> list[dict]:
        return [{"uri": "file:///a"}]

    async def main() -> dict:
        async with Client(stdio_argv("legacy-requests", tmp_path / "log"), probe_timeout=0.5, era_cache=EraCache(),
                          roots=roots) as client:
            return json.loads(text_of(await client.call_tool("ask", {})))

    assert run(main())["s-roots"] == {"roots": [{"uri": "file:///a"}]}


# ====================================================================== HTTP fakes
class HttpFake:
    """tests/servers/era_http.py in a subprocess; its mode can be changed while it runs."""

    def __init__(self, state: Path, mode: str) -> None:
        state.mkdir(parents=True, exist_ok=True)
        self.state = state
        self.set_mode(mode)
        self.proc = subprocess.Popen([sys.executable, str(ERA_HTTP), str(state)], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()  # the port, once listening
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"era_http.py did not start: {line!r}")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def set_mode(self, mode: str) -> None:
        (self.state / "mode").write_text(mode)

    def log(self) -> list[dict]:
        return read_log(self.state / "log")

    def clear_log(self) -> None:
        (self.state / "log").unlink(missing_ok=True)

    def posts(self) -> list[str]:
        return [e["method"] for e in self.log() if e["http"] == "POST" and not e.get("response")]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def http_fake(tmp_path: Path):
    fakes: list[HttpFake] = []

    def make(mode: str) -> HttpFake:
        fake = HttpFake(tmp_path / f"http{len(fakes)}", mode)
        fakes.append(fake)
        return fake

    yield make
    for f in fakes:
        f.close()


@pytest.mark.parametrize("mode", ["legacy-empty400", "legacy-html404", "legacy-json400", "legacy-json400-noid"])
def test_http_legacy_answers_fall_back_to_initialize(http_fake, mode: str) -> None:
    fake = http_fake(mode)
    cache = EraCache()

    async def main() -> tuple[list[str], str]:
        async with Client(fake.url, probe_timeout=2, era_cache=cache) as client:
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            tools = await client.list_tools()
            result = await client.call_tool("echo", {"message": "hi"})
            return [t.name for t in tools], text_of(result)

    assert run(main()) == (["echo"], "Echo: hi")
    posts = fake.posts()
    assert posts[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert posts.count("server/discover") == 1
    assert cache.get(era_key(fake.url)) == "legacy"


def test_http_404_with_a_32601_body_is_modern(http_fake) -> None:
    """Trap 6: on HTTP, 404 + JSON-RPC -32601 is a modern server without that method."""
    fake = http_fake("modern-404discover")

    async def main() -> list[str]:
        async with Client(fake.url, probe_timeout=2, era_cache=EraCache()) as client:
            assert client.era == "modern"
            with pytest.raises(MCPError) as info:
                await client.discover()
            assert info.value.code == -32601
            return [t.name for t in await client.list_tools()]

    assert run(main()) == ["echo"]
    assert "initialize" not in fake.posts()


def test_http_400_with_32022_is_modern_and_the_version_is_retried(http_fake) -> None:
    fake = http_fake("modern")

    async def main() -> str:
        async with Client(fake.url, protocol_version="2030-01-01", probe_timeout=2, era_cache=EraCache()) as client:
            assert client.era == "modern"
            assert client.protocol_version == MODERN
            return text_of(await client.call_tool("echo", {"message": "v"}))

    assert run(main()) == "Echo: v"
    log = [e for e in fake.log() if e["http"] == "POST"]
    assert "initialize" not in [e["method"] for e in log]
    assert (log[0]["method"], log[0]["status"], log[0]["version"]) == ("server/discover", 400, "2030-01-01")
    assert all(e["version"] == MODERN and e["status"] == 200 for e in log[1:])


def test_http_discover_result_is_modern(http_fake) -> None:
    fake = http_fake("modern")

    async def main() -> Any:
        async with Client(fake.url, probe_timeout=2, era_cache=EraCache()) as client:
            assert client.era == "modern"
            return await client.discover()

    assert run(main()).supportedVersions == [MODERN]
    assert fake.posts() == ["server/discover"]  # discover() reused the probe's answer


@pytest.mark.parametrize("status", ["401", "403"])
def test_http_401_403_are_errors_not_a_fallback(http_fake, status: str) -> None:
    """Trap 7: authorization is settled before the era; never fall back to initialize on it."""
    fake = http_fake(status)
    cache = EraCache()

    async def main() -> None:
        client = Client(fake.url, probe_timeout=2, era_cache=cache)
        with pytest.raises(TransportError) as info:
            await client.start()
        assert status in str(info.value)
        assert client.era is None

    run(main())
    assert fake.posts() == ["server/discover"]
    assert cache.get(era_key(fake.url)) is None


def test_http_nothing_listening_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"

    async def main() -> None:
        client = Client(url, probe_timeout=2, era_cache=EraCache())
        with pytest.raises(TransportError, match="failed"):
            await client.start()
        assert client.era is None

    run(main())


def test_http_silence_is_a_clear_error_not_legacy(http_fake) -> None:
    """Silence on HTTP is not the stdio "legacy server waiting for initialize"."""
    fake = http_fake("hang")

    async def main() -> None:
        client = Client(fake.url, probe_timeout=0.5, era_cache=EraCache())
        t0 = time.monotonic()
        with pytest.raises(TransportError, match="server/discover"):
            await client.start()
        assert time.monotonic() - t0 < 4

    run(main())
    assert "initialize" not in fake.posts()


def test_http_verdict_is_cached_per_origin(http_fake, tmp_path: Path) -> None:
    fake = http_fake("legacy-json400")
    path = tmp_path / "eras.json"

    async def one(url: str) -> None:
        async with Client(url, probe_timeout=2, era_cache=EraCache(path)) as client:
            assert client.era == "legacy"
            assert [t.name for t in await client.list_tools()] == ["echo"]

    run(one(fake.url))
    assert json.loads(path.read_text()) == {f"http:http://127.0.0.1:{fake.port}": "legacy"}
    run(one(fake.url))
    run(one(fake.url.replace("/mcp", "/other")))  # same origin, another path
    assert fake.posts().count("server/discover") == 1
    assert fake.posts().count("initialize") == 3


def test_http_stale_cached_modern_reprobes_a_now_legacy_server(http_fake) -> None:
    fake = http_fake("modern")
    cache = EraCache()

    async def one(expect: str) -> None:
        async with Client(fake.url, probe_timeout=2, era_cache=cache) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert client.era == expect

    run(one("modern"))
    fake.set_mode("legacy-json400")
    fake.clear_log()
    run(one("legacy"))
    assert fake.posts() == ["tools/list", "server/discover", "initialize", "notifications/initialized", "tools/list"]
    assert cache.get(era_key(fake.url)) == "legacy"


@pytest.mark.parametrize("mode", ["legacy-empty400", "legacy-html404", "legacy-json400-noid"])
def test_http_stale_cached_modern_reprobes_on_a_bodyless_4xx(http_fake, mode: str) -> None:
    fake = http_fake("modern")
    cache = EraCache()
    cache.put(era_key(fake.url), "modern")
    fake.set_mode(mode)

    async def main() -> None:
        async with Client(fake.url, probe_timeout=2, era_cache=cache) as client:
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert client.era == "legacy"

    run(main())
    assert cache.get(era_key(fake.url)) == "legacy"


def test_http_stale_cached_legacy_reprobes_a_now_modern_server(http_fake) -> None:
    fake = http_fake("modern")
    cache = EraCache()
    cache.put(era_key(fake.url), "legacy")

    async def main() -> None:
        async with Client(fake.url, probe_timeout=2, era_cache=cache) as client:
            assert client.era == "modern"
            assert [t.name for t in await client.list_tools()] == ["echo"]

    run(main())
    assert cache.get(era_key(fake.url)) == "modern"


def test_http_mode_legacy_never_probes(http_fake) -> None:
    fake = http_fake("legacy-empty400")

    async def main() -> None:
        async with Client(fake.url, mode="legacy", era_cache=EraCache()) as client:
            assert client.era == "legacy"
            await client.list_tools()

    run(main())
    assert "server/discover" not in fake.posts()


def test_http_mode_2026_never_initializes(http_fake) -> None:
    fake = http_fake("modern")

    async def main() -> None:
        async with Client(fake.url, mode=MODERN, era_cache=EraCache()) as client:
            assert client.era == "modern"
            await client.list_tools()

    run(main())
    assert fake.posts() == ["tools/list"]


# ====================================================================== the legacy HTTP session
def _wait_for(predicate, limit: float = 3.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_http_legacy_session_lifecycle(http_fake) -> None:
    """initialize, notifications/initialized, the session id on everything after, a GET
    stream, and DELETE on close (2025-11-25 Streamable HTTP)."""
    fake = http_fake("legacy-json400")

    async def main() -> None:
        async with Client(fake.url, probe_timeout=2, era_cache=EraCache()) as client:
            assert client.era == "legacy"
            await client.list_tools()
            await client.call_tool("echo", {"message": "s"})
            for _ in range(60):
                if any(e["http"] == "GET" for e in fake.log()):
                    break
                await asyncio.sleep(0.05)

    run(main())
    assert _wait_for(lambda: any(e["http"] == "DELETE" for e in fake.log()))
    log = fake.log()
    session_log = [e for e in log if not (e["http"] == "POST" and e["method"] == "server/discover")]
    init = session_log[0]
    assert (init["http"], init["method"], init["session"]) == ("POST", "initialize", None)
    sid = "sess-1"
    rest = session_log[1:]
    assert [(e["http"], e["method"]) for e in rest if e["http"] == "POST"] == [
        ("POST", "notifications/initialized"), ("POST", "tools/list"), ("POST", "tools/call")]
    for e in rest:
        assert e["session"] == sid, e
        assert e["version"] == LEGACY, e
    gets = [e for e in rest if e["http"] == "GET"]
    assert gets and gets[0]["status"] == 200
    deletes = [e for e in rest if e["http"] == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["status"] == 200
    assert rest[-1]["http"] == "DELETE"
    # nothing after the session was ended
    assert [e["http"] for e in rest].count("DELETE") == 1


def test_http_legacy_session_against_our_own_server(tmp_path: Path) -> None:
    """The same session, against mcpkit's own dual-era server (examples/demo.py), mode="legacy"."""
    seen: list[tuple[str, str | None]] = []

    async def record(request: httpx.Request) -> None:
        seen.append((request.method, request.headers.get("mcp-session-id")))

    async def main(url: str) -> list[str]:
        http_client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), event_hooks={"request": [record]})
        async with Client(url, mode="legacy", era_cache=EraCache(), http_client=http_client) as client:
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            names = [t.name for t in await client.list_tools()]
            for _ in range(60):
                if any(m == "GET" for m, _ in seen):
                    break
                await asyncio.sleep(0.05)
            return names

    with running_server(mcpkit_serve_argv(DEMO)) as url:
        names = run(main(url))
    assert names
    assert seen[0] == ("POST", None)  # initialize
    sid = seen[1][1]
    assert sid, "the server minted no Mcp-Session-Id (or the client did not keep it)"
    assert all(s == sid for _, s in seen[1:])
    assert ("GET", sid) in seen
    assert seen[-1] == ("DELETE", sid)


# ====================================================================== one API, whichever era
@pytest.mark.parametrize("kind", ["stdio-legacy", "stdio-modern", "http-legacy", "http-modern"])
def test_one_api_whichever_era(tmp_path: Path, http_fake, kind: str) -> None:
    if kind.startswith("stdio"):
        target: Any = stdio_argv("legacy-32000" if kind.endswith("legacy") else "modern", tmp_path / "log")
    else:
        target = http_fake("legacy-empty400" if kind.endswith("legacy") else "modern").url
    era = kind.split("-")[1]

    async def main() -> None:
        async with Client(target, probe_timeout=0.5, era_cache=EraCache()) as client:
            card = await client.discover()
            assert client.era == era
            assert "tools" in msgspec.to_builtins(card.capabilities)
            raw = await client.discover_raw()
            assert isinstance(raw.get("supportedVersions"), list)
            assert raw["supportedVersions"] == ([LEGACY] if era == "legacy" else [MODERN])
            assert [t.name for t in await client.list_tools()] == ["echo"]
            assert text_of(await client.call_tool("echo", {"message": kind})) == f"Echo: {kind}"
            read = await client.read_resource("mem://greeting")
            assert read.contents[0].text.startswith("hello")
            prompt = await client.get_prompt("greet", {"who": "Ada"})
            assert prompt.messages[0].content.text == "Hello, Ada"
            with pytest.raises(MCPError):
                await client.call_tool("nope", {})

    run(main())


# ====================================================================== the discover card
def _discover_card(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcpkit", "discover", "--both-eras", "--", *argv], capture_output=True,
                          text=True, timeout=60, env=subprocess_env(), cwd=str(ROOT))


@pytest.mark.parametrize("mode, era", [("legacy-32601", "legacy"), ("modern", "modern"), ("dual", "dual")])
def test_discover_card_shows_the_era(tmp_path: Path, mode: str, era: str) -> None:
    proc = _discover_card([sys.executable, str(ERA_STDIO), mode, str(tmp_path / "log")])
    assert proc.returncode == 0, proc.stderr
    era_line = next(line for line in proc.stdout.splitlines() if line.startswith("Era:"))
    assert era_line.split()[1] == era, proc.stdout
    if era == "legacy":
        assert LEGACY in era_line
    assert "echo" in proc.stdout


def test_discover_card_of_our_dual_era_demo() -> None:
    proc = _discover_card([sys.executable, str(DEMO)])
    assert proc.returncode == 0, proc.stderr
    era_line = next(line for line in proc.stdout.splitlines() if line.startswith("Era:"))
    assert era_line.split()[1] == "dual", proc.stdout
