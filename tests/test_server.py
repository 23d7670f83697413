"""The Server, in process: discover, caching hints, pagination, resources, prompts,
completions, error isolation and the handler Context. Every reply is checked against
the 2026-07-28 wire types."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import msgspec
import pytest

from mcpkit import Context, Server, assistant, user
from mcpkit.protocol import codec
from mcpkit.protocol import types as t
from tests.helpers.aio import run
from tests.helpers.messages import META, SERVER_INFO, VERSION, check_wire


def ask(server: Server, method: str, _meta: dict | None = None, _notes: list | None = None, **params: Any) -> dict:
    """Send one request through Server.handle; return the (wire-checked) response body."""
    async def emit(m: str, p: dict) -> None:
        if _notes is not None:
            _notes.append((m, p))

    req = codec.Request("r", method, {"_meta": _meta or META, **params})
    reply = run(server.handle(req, emit))
    body = json.loads(reply.body)
    check_wire(body, method)
    assert reply.error_code == (body["error"]["code"] if "error" in body else None)
    return body


def result(server: Server, method: str, **params: Any) -> dict:
    body = ask(server, method, **params)
    assert "result" in body, body
    return body["result"]


def error(server: Server, method: str, **params: Any) -> dict:
    body = ask(server, method, **params)
    assert "error" in body, body
    return body["error"]


def full_server(**kw: Any) -> Server:
    s = Server("full", "2.0.0", **kw)

    @s.tool()
    def t1() -> str:
        return "1"

    @s.resource("mem://a")
    def a() -> str:
        return "A"

    @s.resource("mem://{id}")
    def by_id(id: str) -> str:
        return id

    @s.prompt()
    def p(topic: str) -> str:
        return topic

    @s.completion(prompt="p")
    def comp(argument: str, value: str, context: dict) -> list[str]:
        return [value + "!"]

    return s


# ====================================================================== discover
def test_discover_shape():
    s = full_server(instructions="Use wisely.", ttl_ms=5000, cache_scope="public", title="Full Server")
    r = result(s, "server/discover")
    assert set(r) == {"resultType", "supportedVersions", "capabilities", "instructions", "ttlMs", "cacheScope", "_meta"}
    assert r["resultType"] == "complete"
    assert r["supportedVersions"] == [VERSION]
    assert r["instructions"] == "Use wisely."
    assert (r["ttlMs"], r["cacheScope"]) == (5000, "public")
    assert r["_meta"][SERVER_INFO] == {"name": "full", "version": "2.0.0", "title": "Full Server"}
    assert {"tools", "resources", "prompts", "completions"} <= set(r["capabilities"])
    msgspec.convert(r, t.DiscoverResult)


def test_discover_defaults_and_no_instructions():
    r = result(Server("bare"), "server/discover")
    assert "instructions" not in r
    assert (r["ttlMs"], r["cacheScope"]) == (0, "private")
    assert r["_meta"][SERVER_INFO] == {"name": "bare", "version": "0.1.0"}


def test_server_info_optional_fields():
    s = Server("n", "1", title="T", description="D", website_url="https://example.com",
               icons=[t.Icon(src="https://example.com/i.png")])
    info = result(s, "server/discover")["_meta"][SERVER_INFO]
    assert info == {"name": "n", "version": "1", "title": "T", "description": "D", "websiteUrl": "https://example.com",
                    "icons": [{"src": "https://example.com/i.png"}]}


def test_capabilities_are_derived_from_registrations():
    def caps(s: Server) -> set[str]:
        return set(result(s, "server/discover")["capabilities"]) - {"logging", "experimental", "extensions"}

    s = Server("grow")
    assert caps(s) == set()

    @s.tool()
    def x() -> str:
        return ""

    assert caps(s) == {"tools"}

    @s.resource("mem://{name}")
    def r(name: str) -> str:
        return ""

    assert caps(s) == {"tools", "resources"}

    @s.prompt()
    def p() -> str:
        return ""

    @s.completion(prompt="p", argument="a")
    def c(argument: str, value: str, context: dict) -> list[str]:
        return []

    assert caps(s) == {"tools", "resources", "prompts", "completions"}
    s.remove_tool("x")
    s.remove_prompt("p")
    s.remove_resource("mem://{name}")
    assert caps(s) == {"completions"}


def test_logging_capability_can_be_turned_off():
    assert "logging" not in result(Server("quiet", logging=False), "server/discover")["capabilities"]


@pytest.mark.parametrize("kw", [{"ttl_ms": -1}, {"cache_scope": "shared"}, {"supported_versions": ("2025-11-25",)},
                                {"supported_versions": ()}])
def test_bad_server_options_are_refused(kw):
    with pytest.raises(ValueError):
        Server("bad", **kw)


@pytest.mark.parametrize("size", [0, -1])
def test_non_positive_page_size_is_refused(size):
    with pytest.raises(ValueError):
        Server("bad", page_size=size)


# ====================================================================== every result
@pytest.mark.parametrize("method,params", [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "t1"}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "mem://a"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "p", "arguments": {"topic": "x"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "topic", "value": "v"}}),
])
def test_every_result_carries_result_type_and_server_info(method, params):
    r = result(full_server(ttl_ms=10, cache_scope="public"), method, **params)  # check_wire checks the rest
    assert r["resultType"] == "complete"
    assert r["_meta"][SERVER_INFO] == {"name": "full", "version": "2.0.0"}
    if method in ("tools/call", "prompts/get", "completion/complete"):
        assert "ttlMs" not in r and "cacheScope" not in r
    else:
        assert (r["ttlMs"], r["cacheScope"]) == (10, "public")


def test_per_registration_cache_hints():
    s = Server("c", ttl_ms=60_000, cache_scope="public")

    @s.resource("mem://fresh", ttl_ms=1000)
    def fresh() -> str:
        return "f"

    @s.resource("mem://secret", cache_scope="private")
    def secret() -> str:
        return "s"

    @s.resource("mem://{id}", ttl_ms=5)
    def templ(id: str) -> str:
        return id

    read = lambda uri: result(s, "resources/read", uri=uri)
    assert (read("mem://fresh")["ttlMs"], read("mem://fresh")["cacheScope"]) == (1000, "public")
    assert (read("mem://secret")["ttlMs"], read("mem://secret")["cacheScope"]) == (60_000, "private")
    assert read("mem://other")["ttlMs"] == 5
    lst = result(s, "resources/list")
    # a list is as fresh as its stalest entry, and private if any entry is
    assert (lst["ttlMs"], lst["cacheScope"]) == (1000, "private")
    templates = result(s, "resources/templates/list")
    assert (templates["ttlMs"], templates["cacheScope"]) == (5, "public")


# ====================================================================== tools/list and pagination
def many_tools(n: int, **kw: Any) -> Server:
    s = Server("many", **kw)
    for i in range(n):
        def fn() -> str:
            return ""
        fn.__name__ = f"tool_{i:02d}"
        s.tool()(fn)
    return s


def test_tools_list_is_in_registration_order_and_deterministic():
    s = Server("order")
    for name in ["zeta", "alpha", "mu"]:
        s.tool(name=name)(lambda: "")
    first = result(s, "tools/list")
    assert [x["name"] for x in first["tools"]] == ["zeta", "alpha", "mu"]
    assert result(s, "tools/list") == first


def test_pagination_walks_every_item_once():
    s = many_tools(7, page_size=3)
    names, cursor, pages = [], None, []
    while True:
        r = result(s, "tools/list", **({"cursor": cursor} if cursor is not None else {}))
        pages.append(len(r["tools"]))
        names += [x["name"] for x in r["tools"]]
        cursor = r.get("nextCursor")
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
    assert pages == [3, 3, 1]
    assert names == [f"tool_{i:02d}" for i in range(7)]


def test_exact_multiple_of_page_size_has_no_trailing_empty_page():
    s = many_tools(4, page_size=2)
    r1 = result(s, "tools/list")
    r2 = result(s, "tools/list", cursor=r1["nextCursor"])
    assert len(r2["tools"]) == 2 and "nextCursor" not in r2


def test_default_page_size_and_unpaginated():
    assert "nextCursor" not in result(many_tools(100), "tools/list")
    assert "nextCursor" in result(many_tools(101), "tools/list")
    r = result(many_tools(150, page_size=None), "tools/list")
    assert len(r["tools"]) == 150 and "nextCursor" not in r


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list", "prompts/list"])
def test_other_lists_paginate_too(method):
    s = Server("lists", page_size=1)
    for i in range(3):
        s.resource(f"mem://r{i}")(lambda: "")
        s.resource(f"tmpl{i}://{{x}}")(lambda x: x)
        s.prompt(name=f"p{i}")(lambda: "")
    key = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}[method]
    r1 = result(s, method)
    r2 = result(s, method, cursor=r1["nextCursor"])
    r3 = result(s, method, cursor=r2["nextCursor"])
    assert [len(r[key]) for r in (r1, r2, r3)] == [1, 1, 1]
    assert "nextCursor" not in r3


@pytest.mark.parametrize("cursor", ["", "garbage", "!!!", "é", "bWNwa2l0Om86LTE", "bWNwa2l0Om86OTk5"])
def test_invalid_cursor_is_invalid_params(cursor):
    # the last two are well-formed encodings of offsets -1 and 999
    err = error(many_tools(5, page_size=2), "tools/list", cursor=cursor)
    assert err["code"] == -32602
    assert err["data"] == {"cursor": cursor}


# ====================================================================== resources
def resource_server() -> Server:
    s = Server("res", ttl_ms=100)

    @s.resource("mem://text", mime_type="text/markdown", description="Some text", title="Text")
    def text_res() -> str:
        return "# hi"

    @s.resource("mem://bytes")
    def bytes_res() -> bytes:
        return b"\x00\x01"

    @s.resource("mem://json")
    async def json_res() -> dict:
        return {"a": [1, 2]}

    @s.resource("items://{id}")
    def item(id: int) -> str:
        return f"item {id + 1}"

    @s.resource("files://{+path}")
    def file(path: str) -> str:
        return f"file {path}"

    @s.resource("dict://{key}")
    def lookup(key: str) -> str:
        return {"k": "v"}[key]

    @s.resource("mem://broken")
    def broken() -> str:
        raise RuntimeError("password=hunter2")

    return s


def test_resources_list_and_templates_list():
    s = resource_server()
    resources = result(s, "resources/list")["resources"]
    assert [r["uri"] for r in resources] == ["mem://text", "mem://bytes", "mem://json", "mem://broken"]
    assert resources[0] == {"uri": "mem://text", "name": "text_res", "title": "Text", "description": "Some text",
                            "mimeType": "text/markdown"}
    templates = result(s, "resources/templates/list")["resourceTemplates"]
    assert [x["uriTemplate"] for x in templates] == ["items://{id}", "files://{+path}", "dict://{key}"]


def test_read_text_bytes_json():
    s = resource_server()
    assert result(s, "resources/read", uri="mem://text")["contents"] == [
        {"uri": "mem://text", "mimeType": "text/markdown", "text": "# hi"}]
    assert result(s, "resources/read", uri="mem://bytes")["contents"] == [
        {"uri": "mem://bytes", "mimeType": "application/octet-stream", "blob": "AAE="}]
    (c,) = result(s, "resources/read", uri="mem://json")["contents"]
    assert c["mimeType"] == "application/json" and json.loads(c["text"]) == {"a": [1, 2]}


def test_templates_match_and_convert_variables():
    s = resource_server()
    assert result(s, "resources/read", uri="items://41")["contents"][0]["text"] == "item 42"
    assert result(s, "resources/read", uri="files://a/b/c.txt")["contents"][0]["text"] == "file a/b/c.txt"
    assert result(s, "resources/read", uri="dict://k")["contents"][0]["uri"] == "dict://k"


@pytest.mark.parametrize("uri", ["mem://nope", "items://abc", "items://1/2", "dict://missing", "other://x", ""])
def test_resource_not_found(uri):
    err = error(resource_server(), "resources/read", uri=uri)
    assert err["code"] == -32602
    assert err["data"] == {"uri": uri}


def test_resource_handler_exception_is_internal_error_and_server_keeps_serving(caplog):
    s = resource_server()
    with caplog.at_level(logging.CRITICAL, logger="mcpkit.server"):
        err = error(s, "resources/read", uri="mem://broken")
    assert err["code"] == -32603
    assert "hunter2" not in json.dumps(err)
    assert result(s, "resources/read", uri="mem://text")["contents"]


# ====================================================================== prompts
def prompt_server() -> Server:
    s = Server("prompts")

    @s.prompt(title="Review")
    def review(code: str, language: str = "python") -> str:
        """Review some code.

        Args:
            code: the code to review
        """
        return f"Review this {language}: {code}"

    @s.prompt()
    async def chat(topic: str) -> list:
        return [user(f"Tell me about {topic}"), assistant("Sure."), "and a plain string"]

    @s.prompt
    def bare() -> str:
        return "bare"

    @s.prompt()
    def broken() -> str:
        raise RuntimeError("internal detail")

    return s


def test_prompts_list():
    prompts = result(prompt_server(), "prompts/list")["prompts"]
    assert [p["name"] for p in prompts] == ["review", "chat", "bare", "broken"]
    assert prompts[0] == {
        "name": "review", "title": "Review", "description": "Review some code.",
        "arguments": [{"name": "code", "description": "the code to review", "required": True},
                      {"name": "language", "required": False}],
    }
    assert "arguments" not in prompts[2]


def test_prompts_get():
    s = prompt_server()
    r = result(s, "prompts/get", name="review", arguments={"code": "x = 1"})
    assert r["description"] == "Review some code."
    assert r["messages"] == [{"role": "user", "content": {"type": "text", "text": "Review this python: x = 1"}}]
    r = result(s, "prompts/get", name="chat", arguments={"topic": "owls"})
    assert [(m["role"], m["content"]["text"]) for m in r["messages"]] == [
        ("user", "Tell me about owls"), ("assistant", "Sure."), ("user", "and a plain string")]
    assert result(s, "prompts/get", name="bare")["messages"][0]["content"]["text"] == "bare"


def test_prompt_errors():
    s = prompt_server()
    err = error(s, "prompts/get", name="nope")
    assert err["code"] == -32602 and "nope" in err["message"]
    err = error(s, "prompts/get", name="review", arguments={})
    assert err["code"] == -32602 and "code" in err["message"]
    err = error(s, "prompts/get", name="broken")
    assert err["code"] == -32603 and "internal detail" not in err["message"]


# ====================================================================== completions
def completion_server() -> Server:
    s = Server("complete")
    langs = ["python", "perl", "php", "rust"]

    @s.prompt()
    def review(language: str, style: str) -> str:
        return ""

    @s.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return ""

    @s.prompt()
    def lots(n: str) -> str:
        return ""

    @s.prompt()
    def nothing(x: str) -> str:
        return ""

    @s.completion(prompt="review", argument="language")
    def languages(argument: str, value: str, context: dict) -> list[str]:
        return [x for x in langs if x.startswith(value)]

    @s.completion(prompt="review")
    async def any_arg(argument: str, value: str, context: dict) -> list[str]:
        return [f"{argument}={value}|{context.get('language', '')}"]

    @s.completion(resource="repo://{owner}/{name}")
    def repos(argument: str, value: str, context: dict) -> list[str]:
        return [f"{argument}:{value}:{context.get('owner', '')}"]

    @s.completion(prompt="lots")
    def many(argument: str, value: str, context: dict) -> list[int]:
        return list(range(150))

    @s.completion(prompt="nothing", argument="other")
    def unrelated(argument: str, value: str, context: dict) -> list[str]:
        raise RuntimeError("boom")

    return s


def complete(s: Server, ref: dict, name: str, value: str, context: dict | None = None) -> dict:
    extra = {"context": {"arguments": context}} if context else {}
    return result(s, "completion/complete", ref=ref, argument={"name": name, "value": value}, **extra)["completion"]


def test_completion_for_a_prompt_argument():
    s = completion_server()
    assert complete(s, {"type": "ref/prompt", "name": "review"}, "language", "p") == {
        "values": ["python", "perl", "php"], "total": 3, "hasMore": False}


def test_completion_falls_back_to_the_reference_handler_with_context():
    s = completion_server()
    c = complete(s, {"type": "ref/prompt", "name": "review"}, "style", "terse", {"language": "rust"})
    assert c["values"] == ["style=terse|rust"]


def test_completion_for_a_resource_template():
    s = completion_server()
    c = complete(s, {"type": "ref/resource", "uri": "repo://{owner}/{name}"}, "name", "mc", {"owner": "me"})
    assert c["values"] == ["name:mc:me"]


def test_completion_is_capped_at_100_values():
    c = complete(completion_server(), {"type": "ref/prompt", "name": "lots"}, "n", "")
    assert c["values"] == [str(i) for i in range(100)]
    assert c["total"] == 150 and c["hasMore"] is True


def test_completion_without_a_handler_is_empty():
    c = complete(completion_server(), {"type": "ref/prompt", "name": "nothing"}, "x", "a")
    assert c["values"] == []


@pytest.mark.parametrize("ref", [{"type": "ref/prompt", "name": "ghost"}, {"type": "ref/resource", "uri": "nope://{x}"}])
def test_completion_for_an_unknown_reference(ref):
    err = error(completion_server(), "completion/complete", ref=ref, argument={"name": "a", "value": ""})
    assert err["code"] == -32602


def test_completion_handler_exception_is_internal_error():
    err = error(completion_server(), "completion/complete", ref={"type": "ref/prompt", "name": "nothing"},
                argument={"name": "other", "value": ""})
    assert err["code"] == -32603 and "boom" not in err["message"]


def test_completion_registration_needs_exactly_one_reference():
    s = Server("x")
    with pytest.raises(TypeError):
        s.completion()
    with pytest.raises(TypeError):
        s.completion(prompt="a", resource="b")


# ====================================================================== the handler Context
def context_server() -> Server:
    s = Server("ctx")

    @s.tool()
    async def inspect_ctx(ctx: Context) -> dict:
        return {
            "version": ctx.protocol_version,
            "capabilities": ctx.client_capabilities,
            "info": ctx.client_info,
            "token": ctx.progress_token,
            "custom": ctx.meta.get("com.example/trace"),
            "sampling": ctx.has_capability("sampling"),
            "form": ctx.has_capability("elicitation", "form"),
            "roots": ctx.has_capability("roots"),
            "method": ctx.method,
            "id": ctx.request_id,
        }

    @s.tool()
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2)
        await ctx.debug("too chatty")
        await ctx.warning({"careful": True}, logger="w")
        return "done"

    @s.tool()
    async def backwards(ctx: Context) -> str:
        await ctx.report_progress(2)
        await ctx.report_progress(1)
        return "unreachable"

    @s.resource("ctx://me")
    def me(ctx: Context) -> str:
        return ctx.method

    @s.prompt()
    def pr(ctx: Context) -> str:
        return str(ctx.client_info)

    return s


def test_context_exposes_the_request_meta():
    meta = {**META,
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "tester", "version": "0.0.1"},
            "progressToken": 77, "com.example/trace": "abc"}
    body = ask(context_server(), "tools/call", _meta=meta, name="inspect_ctx")
    assert body["result"]["structuredContent"] == {
        "version": VERSION, "capabilities": {"sampling": {}, "elicitation": {"form": {}}},
        "info": {"name": "tester", "version": "0.0.1"}, "token": 77, "custom": "abc",
        "sampling": True, "form": True, "roots": False, "method": "tools/call", "id": "r",
    }


def test_context_defaults_without_optional_meta():
    got = result(context_server(), "tools/call", name="inspect_ctx")["structuredContent"]
    assert (got["info"], got["token"], got["capabilities"], got["sampling"]) == (None, None, {}, False)


def test_context_in_resources_and_prompts():
    s = context_server()
    assert result(s, "resources/read", uri="ctx://me")["contents"][0]["text"] == "resources/read"
    assert result(s, "prompts/get", name="pr")["messages"][0]["content"]["text"] == "None"


def test_progress_and_log_notifications_follow_the_request_meta():
    notes: list = []
    meta = {**META, "progressToken": "tok", "io.modelcontextprotocol/logLevel": "info"}
    body = ask(context_server(), "tools/call", _meta=meta, _notes=notes, name="work")
    assert body["result"]["content"][0]["text"] == "done"
    assert [m for m, _ in notes] == ["notifications/progress", "notifications/progress", "notifications/message"]
    assert notes[0][1] == {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}
    assert (notes[1][1]["progressToken"], notes[1][1]["progress"]) == ("tok", 2)
    assert notes[2][1] == {"level": "warning", "data": {"careful": True}, "logger": "w"}  # debug < info: dropped
    for method, params in notes:
        msgspec.convert(params, t.NOTIFICATION_PARAMS[method])


def test_no_notifications_without_token_or_level():
    notes: list = []
    ask(context_server(), "tools/call", _notes=notes, name="work")
    assert notes == []


def test_progress_must_not_go_backwards():
    notes: list = []
    meta = {**META, "progressToken": 1}
    r = ask(context_server(), "tools/call", _meta=meta, _notes=notes, name="backwards")["result"]
    assert r["isError"] is True
    assert len(notes) == 1


# ====================================================================== sync, async, concurrency
def test_sync_and_async_handlers_everywhere():
    s = Server("mixed")

    @s.tool()
    async def a() -> str:
        await asyncio.sleep(0)
        return "async tool"

    @s.tool(blocking=True)
    def b() -> str:
        return "blocking tool"

    @s.resource("m://a")
    async def ra() -> str:
        return "async resource"

    @s.resource("m://b", blocking=True)
    def rb() -> str:
        return "blocking resource"

    @s.prompt(blocking=True)
    def pb() -> str:
        return "blocking prompt"

    assert result(s, "tools/call", name="a")["content"][0]["text"] == "async tool"
    assert result(s, "tools/call", name="b")["content"][0]["text"] == "blocking tool"
    assert result(s, "resources/read", uri="m://a")["contents"][0]["text"] == "async resource"
    assert result(s, "resources/read", uri="m://b")["contents"][0]["text"] == "blocking resource"
    assert result(s, "prompts/get", name="pb")["messages"][0]["content"]["text"] == "blocking prompt"


def test_unknown_tool_is_invalid_params_with_name():
    err = error(context_server(), "tools/call", name="ghost")
    assert err["code"] == -32602
    assert err["data"] == {"name": "ghost"}


def test_handle_runs_requests_concurrently():
    s = Server("conc")
    gate = {}

    @s.tool()
    async def wait() -> str:
        gate.setdefault("ev", asyncio.Event())
        await asyncio.wait_for(gate["ev"].wait(), 2)
        return "released"

    @s.tool()
    async def release() -> str:
        gate.setdefault("ev", asyncio.Event()).set()
        return "ok"

    async def both():
        def req(i, name):
            return codec.Request(i, "tools/call", {"_meta": META, "name": name})
        return await asyncio.gather(s.handle(req(1, "wait")), s.handle(req(2, "release")))

    r1, r2 = run(both())
    assert json.loads(r1.body)["result"]["content"][0]["text"] == "released"
