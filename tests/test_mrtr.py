"""Multi Round-Trip Requests (MRTR, 2026-07-28) end to end, over stdio AND Streamable HTTP.

Every case runs against a real server process (``python -m mcpkit serve [--http]
tests/servers/mrtr_server.py:keyed``) and is followed by proof that the server still serves.

What the server does, as documented here:

- any ``requestState`` that fails verification (tampered, truncated, garbage, expired, sealed
  under a key the server does not hold, or minted for another method/name/arguments) is
  answered with JSON-RPC ``-32602`` and the fixed message ``Invalid or expired requestState``
  and nothing else (no ``data``: the reason goes to the server log only). On HTTP it is a
  handler-level error: status 200;
- ``inputResponses`` keys that are unknown or were never asked are ignored; an answer whose
  JSON shape is wrong is ``-32602`` (never a completion): when the value is not even an object
  the params fail to decode (HTTP 400), when it is an object that is not a valid result for
  the question the handler's ask fails (HTTP 200);
- only ``tools/call``, ``prompts/get`` and ``resources/read`` ever answer ``input_required``;
- a question the request's client capabilities do not allow is ``-32021`` with
  ``data.requiredCapabilities`` (HTTP 400).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from mcpkit import Client, Context, KeyRing
from mcpkit.protocol import codec
from mcpkit.protocol import types as t
from tests.helpers.messages import META_CAPS, META_CLIENT, META_VERSION, VERSION, check_result
from tests.helpers.paths import MRTR_SERVER, ROOT
from tests.helpers.wire import Wire
from tests.helpers.wire import open_wire as _open_wire
from tests.servers import mrtr_server as srv

INVALID_STATE = {"code": -32602, "message": "Invalid or expired requestState"}
MRTR_METHODS = {"tools/call", "prompts/get", "resources/read"}
ALL_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
GREET_HI = {"name": "greet", "arguments": {"greeting": "Hi"}}


# ====================================================================== wires
def check_any_result(method: str, result: dict[str, Any]) -> None:
    """A result is either a complete result of its method, or a well-formed input_required
    on one of the three methods that may send it."""
    if result.get("resultType") == "input_required":
        assert method in MRTR_METHODS, f"{method} answered input_required: {result}"
        typed = msgspec.convert(result, t.InputRequiredResult)
        assert typed.inputRequests is not msgspec.UNSET or typed.requestState is not msgspec.UNSET, result
    else:
        check_result(method, result)


def _meta(caps: dict[str, Any] | None) -> dict[str, Any]:
    return {
        META_VERSION: VERSION,
        META_CAPS: ALL_CAPS if caps is None else caps,
        META_CLIENT: {"name": "test_mrtr", "version": "0"},
    }


def open_wire(kind: str, factory: str | None = "keyed") -> Any:
    """The MRTR server (``factory`` of it) over stdio or HTTP; calls declare ALL_CAPS by default."""
    spec = f"{MRTR_SERVER}:{factory}" if factory else MRTR_SERVER
    return _open_wire(kind, spec, client="test_mrtr", caps=ALL_CAPS, check=check_any_result)


def assert_alive(wire: Wire) -> None:
    status, reply = wire.call("tools/list")
    assert status in (None, 200), reply
    assert any(tool["name"] == "greet" for tool in reply["result"]["tools"]), reply


@pytest.fixture(scope="module", params=["stdio", "http"])
def wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    """The keyed MRTR server (seals with KEY_A), over stdio or HTTP; one process per module."""
    with open_wire(request.param) as w:
        yield w


# ====================================================================== helpers
def mint(wire: Wire, method: str = "tools/call", p: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """First round: the input_required result (its requestState is what we play with)."""
    status, reply = wire.call(method, p or GREET_HI, **kw)
    assert status in (None, 200), reply
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    assert isinstance(result["requestState"], str) and result["requestState"], result
    return result


def assert_invalid_state(wire: Wire, status: int | None, reply: dict[str, Any]) -> None:
    assert "result" not in reply, reply
    assert reply["error"] == INVALID_STATE, reply  # exactly: no data, nothing else in the message
    if wire.kind == "http":
        assert status == 200, "a bad requestState is a handler-level error: HTTP 200"


def text_of(reply: dict[str, Any]) -> str:
    result = reply["result"]
    assert result["resultType"] == "complete", result
    if "content" in result:
        return result["content"][0]["text"]
    if "messages" in result:
        return result["messages"][0]["content"]["text"]
    return result["contents"][0]["text"]


#: A good key (32 random bytes, base64url) that no test server holds.
OTHER_KEY = "uywXxYEbVXi-yCdLtpQxbfVfFYHXMpgapJZmKVUYv_g="


def craft(*, key: str, ttl: float = 60.0, method: str = "tools/call", name: str = "greet",
          arguments: Any = GREET_HI["arguments"], asked: list[str] | None = None,
          answers: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> str:
    """Seal a requestState ourselves, exactly as a server holding ``key`` would."""
    from mcpkit.server._state import StateSealer, digest_arguments  # private: no public sealer

    sealer = StateSealer(KeyRing([key]), ttl)
    return sealer.seal(method=method, name=name, digest=digest_arguments(arguments), principal=None,
                       asked=asked if asked is not None else ["user_name"], answers=answers or {}, state=state or {})


def mint_in_process(server: Any) -> str:
    """A requestState minted for tools/call greet {greeting: Hi} by an in-process server."""
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": _meta(None), **GREET_HI}}
    reply = asyncio.run(server.handle(codec.decode(json.dumps(msg).encode())))
    result = json.loads(reply.body)["result"]
    assert result["resultType"] == "input_required", result
    return result["requestState"]


def _b64(blob: bytes) -> str:
    return base64.urlsafe_b64encode(blob).decode().rstrip("=")


def _unb64(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _flip_middle(tok: str) -> str:
    i = len(tok) // 2
    return tok[:i] + ("A" if tok[i] != "A" else "B") + tok[i + 1:]


def _with_byte(tok: str, index: int, value: int) -> str:
    blob = bytearray(_unb64(tok))
    blob[index] = value
    return _b64(bytes(blob))


# ====================================================================== invalid requestState
TAMPERINGS = {
    "flipped-middle-char": _flip_middle,
    "flipped-ciphertext-bit": lambda tok: _with_byte(tok, len(_unb64(tok)) // 2, _unb64(tok)[len(_unb64(tok)) // 2] ^ 0x01),
    "flipped-tag-bit": lambda tok: _with_byte(tok, len(_unb64(tok)) - 1, _unb64(tok)[-1] ^ 0x80),
    # Format v2: version (1 byte), key id (8), nonce (12), ciphertext and tag.
    "flipped-nonce-bit": lambda tok: _with_byte(tok, 10, _unb64(tok)[10] ^ 0x01),
    "unknown-version-byte": lambda tok: _with_byte(tok, 0, 0x03),
    "old-version-byte": lambda tok: _with_byte(tok, 0, 0x01),
    "flipped-key-id-bit": lambda tok: _with_byte(tok, 8, _unb64(tok)[8] ^ 0x01),
    "unknown-key-id": lambda tok: _with_byte(tok, 1, _unb64(tok)[1] ^ 0xFF),
    "truncated-by-half": lambda tok: tok[: len(tok) // 2],
    "truncated-by-one": lambda tok: tok[:-1],
    "truncated-to-header": lambda tok: tok[:8],
    "extended": lambda tok: tok + "AAAA",
    "doubled": lambda tok: tok + tok,
    "empty": lambda tok: "",
    "garbage": lambda tok: "not-a-request-state",
    "non-ascii": lambda tok: "\u00e9\u00e8" * 30,
    "json-not-sealed": lambda tok: _b64(json.dumps({"answers": ADA, "state": {}}).encode()),
    "huge": lambda tok: "A" * 200_000,
}


@pytest.mark.parametrize("how", sorted(TAMPERINGS))
def test_tampered_or_truncated_request_state_is_rejected(wire: Wire, how: str) -> None:
    tok = mint(wire)["requestState"]
    bad = TAMPERINGS[how](tok)
    assert bad != tok
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": bad, "inputResponses": ADA})
    assert_invalid_state(wire, status, reply)
    assert_alive(wire)
    # ...and the genuine state still completes afterwards.
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada!"


def test_state_sealed_with_the_servers_key_is_accepted_control(wire: Wire) -> None:
    """Control for the crafted-state cases below: the same sealing with the server's own key
    (KEY_A) and a live expiry is accepted, so their rejections are due to key or expiry only."""
    tok = craft(key=srv.KEY_A)
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada!"


def test_state_minted_by_a_server_with_other_keys_is_rejected(wire: Wire) -> None:
    foreign = mint_in_process(srv.other_keys())  # a real server, sealing with KEY_B only
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": foreign, "inputResponses": ADA})
    assert_invalid_state(wire, status, reply)
    # Crafted with the right binding and expiry, under a key the server never held:
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": craft(key=OTHER_KEY), "inputResponses": ADA})
    assert_invalid_state(wire, status, reply)
    assert_alive(wire)


def test_expired_state_crafted_with_the_servers_key_is_rejected(wire: Wire) -> None:
    tok = craft(key=srv.KEY_A, ttl=-1.0)
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
    assert_invalid_state(wire, status, reply)
    assert_alive(wire)


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_state_expires_after_state_ttl(kind: str) -> None:
    """A server with a tiny ``state_ttl``: state presented in time completes, state presented
    after the TTL is rejected with the same fixed error."""
    with open_wire(kind, "short_ttl") as w:
        fresh = mint(w)["requestState"]
        status, reply = w.call("tools/call", {**GREET_HI, "requestState": fresh, "inputResponses": ADA})
        assert text_of(reply) == "Hi, Ada!"
        stale = mint(w)["requestState"]
        time.sleep(srv.SHORT_TTL + 0.25)
        status, reply = w.call("tools/call", {**GREET_HI, "requestState": stale, "inputResponses": ADA})
        assert_invalid_state(w, status, reply)
        assert_alive(w)
        # A new first round still works after the rejection.
        again = mint(w)["requestState"]
        status, reply = w.call("tools/call", {**GREET_HI, "requestState": again, "inputResponses": ADA})
        assert text_of(reply) == "Hi, Ada!"


# ====================================================================== state bound to its request
OTHER_CALLS = {
    "other-arguments": ("tools/call", {"name": "greet", "arguments": {"greeting": "Yo"}}),
    "extra-argument": ("tools/call", {"name": "greet", "arguments": {"greeting": "Hi", "punctuation": "?"}}),
    "no-arguments": ("tools/call", {"name": "greet"}),
    "null-arguments": ("tools/call", {"name": "greet", "arguments": None}),
    "other-tool": ("tools/call", {"name": "two_step"}),
    "other-tool-same-arguments": ("tools/call", {"name": "wizard", "arguments": {"greeting": "Hi"}}),
    "prompt": ("prompts/get", {"name": "intro", "arguments": {"topic": "Hi"}}),
    "resource": ("resources/read", {"uri": "mrtr://profile"}),
}


@pytest.mark.parametrize("case", sorted(OTHER_CALLS))
def test_state_presented_on_another_request_is_rejected(wire: Wire, case: str) -> None:
    tok = mint(wire)["requestState"]  # minted for tools/call greet {greeting: Hi}
    method, p = OTHER_CALLS[case]
    status, reply = wire.call(method, {**p, "requestState": tok, "inputResponses": ADA})
    assert_invalid_state(wire, status, reply)
    assert_alive(wire)


def test_state_of_a_prompt_or_resource_is_not_accepted_by_a_tool(wire: Wire) -> None:
    for method, p in (("prompts/get", {"name": "intro", "arguments": {"topic": "Hi"}}),
                      ("resources/read", {"uri": "mrtr://profile"})):
        tok = mint(wire, method, p)["requestState"]
        status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
        assert_invalid_state(wire, status, reply)
        # On its own request it is fine.
        answer = {"user_name": ADA["user_name"], "nick": ADA["user_name"]}
        status, reply = wire.call(method, {**p, "requestState": tok, "inputResponses": answer})
        assert "Ada" in text_of(reply)
    assert_alive(wire)


def test_argument_order_does_not_change_the_binding(wire: Wire) -> None:
    p = {"name": "greet", "arguments": {"greeting": "Hi", "punctuation": "?"}}
    tok = mint(wire, "tools/call", p)["requestState"]
    swapped = {"name": "greet", "arguments": {"punctuation": "?", "greeting": "Hi"}}
    status, reply = wire.call("tools/call", {**swapped, "requestState": tok, "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada?"


# ====================================================================== inputResponses
def test_unknown_input_response_keys_are_ignored(wire: Wire) -> None:
    tok = mint(wire)["requestState"]
    answers = {**ADA, "zz_unknown": {"action": "accept", "content": {"name": "Mallory"}}, "junk": {"anything": [1, 2]}}
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": answers})
    assert text_of(reply) == "Hi, Ada!"


def test_answers_for_questions_never_asked_are_ignored(wire: Wire) -> None:
    """``two_step`` asks ``user_name`` first and ``confirm`` only after it is answered. An answer
    to ``confirm`` sent before the server asked for it is dropped: the server asks again."""
    first = mint(wire, "tools/call", {"name": "two_step"})
    assert set(first["inputRequests"]) == {"user_name"}
    early = {**ADA, "confirm": {"action": "decline"}}
    status, reply = wire.call("tools/call", {"name": "two_step", "requestState": first["requestState"], "inputResponses": early})
    second = reply["result"]
    assert second["resultType"] == "input_required", second
    assert set(second["inputRequests"]) == {"confirm"}
    status, reply = wire.call("tools/call", {"name": "two_step", "requestState": second["requestState"],
                                             "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}}})
    assert text_of(reply) == "Ada:accept"  # user_name was carried in the sealed state
    assert_alive(wire)


def test_answers_on_a_first_request_without_state(wire: Wire) -> None:
    """Documents current behaviour: a request without ``requestState`` has no record of what
    was asked, so its ``inputResponses`` are offered to the handler as they are (a server may
    legitimately send input_required without requestState, whose retry looks just like this)."""
    status, reply = wire.call("tools/call", {**GREET_HI, "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada!"


@pytest.mark.parametrize("responses", [{}, {"other": {"action": "accept"}}], ids=["empty", "only-unknown"])
def test_missing_answer_asks_again(wire: Wire, responses: dict[str, Any]) -> None:
    tok = mint(wire)["requestState"]
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": responses})
    again = reply["result"]
    assert again["resultType"] == "input_required", again
    assert set(again["inputRequests"]) == {"user_name"}
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": again["requestState"], "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada!"


def test_declined_answer_reaches_the_handler(wire: Wire) -> None:
    tok = mint(wire)["requestState"]
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok,
                                             "inputResponses": {"user_name": {"action": "decline"}}})
    assert text_of(reply) == "no name (decline)"


#: (inputResponses value, HTTP status): values that are not objects fail params decoding
#: before dispatch (400); objects that are not a valid ElicitResult fail in the handler (200).
WRONG_SHAPES = {
    "number": ({"user_name": 12345}, 400),
    "string": ({"user_name": "Ada"}, 400),
    "list": ({"user_name": [{"action": "accept"}]}, 400),
    "null-answer": ({"user_name": None}, 400),
    "inputResponses-null": (None, 400),
    "inputResponses-list": ([ADA["user_name"]], 400),
    "inputResponses-string": ("Ada", 400),
    "bad-action": ({"user_name": {"action": "maybe"}}, 200),
    "missing-action": ({"user_name": {"content": {"name": "Ada"}}}, 200),
    "content-not-object": ({"user_name": {"action": "accept", "content": "Ada"}}, 200),
    "sampling-shaped": ({"user_name": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}}, 200),
}


@pytest.mark.parametrize("case", sorted(WRONG_SHAPES))
def test_wrong_shaped_answers_are_invalid_params_never_a_completion(wire: Wire, case: str) -> None:
    value, http_status = WRONG_SHAPES[case]
    tok = mint(wire)["requestState"]
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": value})
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32602, reply
    if wire.kind == "http":
        assert status == http_status, reply
    assert_alive(wire)
    # The same state with a good answer still completes.
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
    assert text_of(reply) == "Hi, Ada!"


@pytest.mark.parametrize("value", [123, None, True, {"s": 1}, ["x"]], ids=["int", "null", "bool", "object", "list"])
def test_non_string_request_state_is_invalid_params(wire: Wire, value: Any) -> None:
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": value, "inputResponses": ADA})
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32602, reply
    if wire.kind == "http":
        assert status == 400, reply  # fails params decoding, before dispatch
    assert_alive(wire)


def test_accepted_content_that_violates_the_requested_schema_is_not_a_completion(wire: Wire) -> None:
    tok = mint(wire)["requestState"]  # requestedSchema: {name: string, required}
    bad = {"user_name": {"action": "accept", "content": {"name": 12345}}}
    status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": bad})
    assert "error" in reply or reply["result"]["resultType"] == "input_required", reply


# ====================================================================== where input_required may appear
@pytest.mark.parametrize("method,p", [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
])
def test_methods_outside_mrtr_never_answer_input_required(wire: Wire, method: str, p: dict[str, Any]) -> None:
    """Even with MRTR fields smuggled into their params (genuine state included)."""
    tok = mint(wire)["requestState"]
    status, reply = wire.call(method, {**p, "requestState": tok, "inputResponses": ADA})
    assert reply["result"]["resultType"] == "complete", reply


def test_completion_handler_cannot_produce_input_required(wire: Wire) -> None:
    """The completion handler raises InputRequired (what ctx.elicit does inside a handler):
    the server refuses to answer completion/complete with input_required."""
    p = {"ref": {"type": "ref/prompt", "name": "intro"}, "argument": {"name": "topic", "value": "a"}}
    status, reply = wire.call("completion/complete", p)
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32603, reply
    assert "sneaky" not in json.dumps(reply)
    assert_alive(wire)


@pytest.mark.parametrize("method", ["completion/complete", "tools/list", "server/discover", "subscriptions/listen"])
def test_context_of_a_non_mrtr_method_cannot_ask(method: str) -> None:
    """In-process: a Context made for any other method refuses to ask (RuntimeError), before
    anything could reach the wire."""
    server = srv.keyed()
    meta = _meta(None)
    ctx = Context(server, 1, method, meta, msgspec.convert(meta, t.RequestMeta))
    for coro in (ctx.elicit("name?"), ctx.sample("hi", max_tokens=5), ctx.list_roots(),
                 ctx.elicit_url("go", "https://example.com")):
        with pytest.raises(RuntimeError, match="cannot ask"):
            asyncio.run(coro)


# ====================================================================== missing client capabilities
CAPABILITY_CASES = {
    "elicitation-none": ("tools/call", {"name": "greet"}, {}, {"elicitation": {}}),
    "elicitation-url-only": ("tools/call", {"name": "greet"}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    "url-with-form-only": ("tools/call", {"name": "consent"}, {"elicitation": {}}, {"elicitation": {"url": {}}}),
    "url-with-explicit-form": ("tools/call", {"name": "consent"}, {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
    "sampling": ("tools/call", {"name": "ask_sample", "arguments": {"question": "?"}}, {"elicitation": {}}, {"sampling": {}}),
    "roots": ("tools/call", {"name": "ask_roots"}, {"sampling": {}}, {"roots": {}}),
    "two-missing": ("tools/call", {"name": "both"}, {}, {"elicitation": {}, "sampling": {}}),
    "one-of-two-missing": ("tools/call", {"name": "both"}, {"elicitation": {}}, {"sampling": {}}),
    "prompt": ("prompts/get", {"name": "intro", "arguments": {"topic": "x"}}, {}, {"elicitation": {}}),
    "resource": ("resources/read", {"uri": "mrtr://profile"}, {"roots": {}}, {"elicitation": {}}),
}


@pytest.mark.parametrize("case", sorted(CAPABILITY_CASES))
def test_missing_client_capability_is_32021(wire: Wire, case: str) -> None:
    method, p, caps, required = CAPABILITY_CASES[case]
    status, reply = wire.call(method, p, caps=caps)
    assert "result" not in reply, reply
    err = reply["error"]
    assert err["code"] == -32021, err
    assert err["data"] == {"requiredCapabilities": required}, err
    if wire.kind == "http":
        assert status == 400, reply
    assert_alive(wire)


def test_declared_capability_gets_input_required_instead(wire: Wire) -> None:
    for method, p, _caps, _required in CAPABILITY_CASES.values():
        status, reply = wire.call(method, p, caps=ALL_CAPS)
        assert reply["result"]["resultType"] == "input_required", (method, p, reply)
        for req in reply["result"]["inputRequests"].values():
            assert req["method"] in ("elicitation/create", "sampling/createMessage", "roots/list")


# ====================================================================== happy paths through mcpkit.Client
def _client(wire: Wire, **handlers: Any) -> Any:
    target = wire.client_target()
    if wire.kind == "stdio":
        return Client(target, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT), **handlers)
    return Client(target, **handlers)


def _record(client: Any) -> list[tuple[Any, str, dict[str, Any], Any]]:
    """Wrap the client's transport to log every (id, method, params, response)."""
    log: list[tuple[Any, str, dict[str, Any], Any]] = []
    orig = client.transport.request

    async def request(id: Any, method: str, params: dict, on_note: Any) -> Any:
        sent = copy.deepcopy(params)
        resp = await orig(id, method, params, on_note)
        log.append((id, method, sent, resp))
        return resp

    client.transport.request = request
    return log


def test_client_answers_every_kind_of_question(wire: Wire) -> None:
    seen: dict[str, list[Any]] = {"elicit": [], "sample": []}

    def elicitation(p: t.ElicitRequestParams) -> dict[str, Any]:
        seen["elicit"].append(p)
        return {"action": "accept", "content": {"name": "Ada"}}

    async def sampling(p: t.CreateMessageRequestParams) -> dict[str, Any]:
        seen["sample"].append(p)
        await asyncio.sleep(0)
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model"}

    roots = [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]

    async def go() -> None:
        async with _client(wire, elicitation=elicitation, sampling=sampling, roots=roots) as c:
            r = await c.call_tool("greet", {"greeting": "Hi"})
            assert r.content[0].text == "Hi, Ada!" and not r.isError
            r = await c.call_tool("ask_sample", {"question": "Capital of France?"})
            assert r.content[0].text == "model test-model says: Paris"
            r = await c.call_tool("ask_roots")
            assert r.content[0].text == "file:///a,file:///b"
            r = await c.call_tool("both")
            assert r.content[0].text == "Ada / Paris"
            p = await c.get_prompt("intro", {"topic": "tea"})
            assert p.messages[0].content.text == "Ada wants to talk about tea"
            res = await c.read_resource("mrtr://profile")
            assert res.contents[0].text == "profile of Ada"

    asyncio.run(go())
    assert [p.message for p in seen["elicit"]] == ["What is your name?", "Name?", "Who is asking?", "Nickname?"]
    assert seen["sample"][0].maxTokens == 64 and seen["sample"][1].maxTokens == 10


def test_client_multi_round_keeps_state_and_echoes_request_state_exactly(wire: Wire) -> None:
    def elicitation(p: t.ElicitRequestParams) -> dict[str, Any]:
        if p.message.startswith("Name?"):
            return {"action": "accept", "content": {"name": "Grace"}}
        return {"action": "accept", "content": {"age": 85}}

    async def go() -> tuple[Any, list]:
        async with _client(wire, elicitation=elicitation) as c:
            await c.start()
            log = _record(c)
            return await c.call_tool("wizard"), log

    result, log = asyncio.run(go())
    assert [m for _, m, _, _ in log] == ["tools/call"] * 3
    ids = [i for i, _, _, _ in log]
    assert len(set(ids)) == 3, "every retry is a new request with a new id"
    first, second, third = (resp.result for _, _, _, resp in log)
    assert first["resultType"] == second["resultType"] == "input_required"
    assert set(first["inputRequests"]) == {"name"} and set(second["inputRequests"]) == {"age"}
    # The first request carries no MRTR fields; each retry echoes the previous requestState
    # exactly and answers exactly the keys that were asked.
    assert "requestState" not in log[0][2] and "inputResponses" not in log[0][2]
    for (_, _, sent, _), prev in ((log[1], first), (log[2], second)):
        assert sent["requestState"] == prev["requestState"]
        assert sent["requestState"].encode() == prev["requestState"].encode()
        assert set(sent["inputResponses"]) == set(prev["inputRequests"])
        assert sent["name"] == "wizard"
    assert first["requestState"] != second["requestState"]
    # ctx.state survived both round trips: three runs, one nonce (minted in the first run).
    nonce = first["inputRequests"]["name"]["params"]["message"].split("nonce ")[1].rstrip("]")
    assert nonce in second["inputRequests"]["age"]["params"]["message"]
    assert result.structuredContent == {"name": "Grace", "age": 85, "runs": 3, "nonce": nonce,
                                        "history": ["after-name-2", "after-name-3"]}


def test_client_state_from_one_transport_completes_on_the_other_with_the_same_key(wire: Wire) -> None:
    """stdio and HTTP processes of ``keyed`` share KEY_A: state minted on one process is
    accepted by another (here, crafted in the test with that key: no process state needed)."""
    tok = craft(key=srv.KEY_A, method="tools/call", name="wizard", arguments=None, asked=["age"],
                answers={"name": {"action": "accept", "content": {"name": "Lin"}}},
                state={"runs": 7, "nonce": "feedface", "history": []})
    status, reply = wire.call("tools/call", {"name": "wizard", "requestState": tok,
                                             "inputResponses": {"age": {"action": "accept", "content": {"age": 3}}}})
    assert reply["result"]["structuredContent"] == {"name": "Lin", "age": 3, "runs": 8, "nonce": "feedface",
                                                    "history": ["after-name-8"]}


# ====================================================================== more of the flow
def test_input_required_after_progress_and_the_retry(wire: Wire) -> None:
    """A handler that reports progress before asking: on HTTP the input_required result ends
    an SSE stream (after the progress); the retry, with its own token, completes likewise."""
    p = {"name": "progress_then_ask"}
    status, reply = wire.call("tools/call", p, meta={"progressToken": "round-1"})
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    assert [(n["method"], n["params"]["progressToken"], n["params"]["progress"]) for n in wire.notes] == [
        ("notifications/progress", "round-1", 1)]
    status, reply = wire.call("tools/call", {**p, "requestState": result["requestState"], "inputResponses": ADA},
                              meta={"progressToken": "round-2"})
    assert text_of(reply) == "thanks Ada"
    assert [(n["params"]["progressToken"], n["params"]["progress"]) for n in wire.notes] == [("round-2", 1), ("round-2", 2)]


def test_state_is_bound_to_the_principal_in_process() -> None:
    """A transport that knows the authenticated caller passes it as ``principal``: state minted
    for one principal is rejected for another (and for none), accepted for the same."""
    server = srv.keyed()

    async def call(id: int, principal: str | None, extra: dict[str, Any]) -> dict[str, Any]:
        msg = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"_meta": _meta(None), **GREET_HI, **extra}}
        req = codec.decode(json.dumps(msg).encode())
        reply = await server.run_checked(req, server.check(req), principal=principal)
        return json.loads(reply.body)

    async def go() -> None:
        first = await call(1, "alice", {})
        tok = first["result"]["requestState"]
        retry = {"requestState": tok, "inputResponses": ADA}
        assert (await call(2, "mallory", retry))["error"] == INVALID_STATE
        assert (await call(3, None, retry))["error"] == INVALID_STATE
        assert (await call(4, "alice", retry))["result"]["content"][0]["text"] == "Hi, Ada!"
        anon = (await call(5, None, {}))["result"]["requestState"]
        assert (await call(6, "alice", {"requestState": anon, "inputResponses": ADA}))["error"] == INVALID_STATE

    asyncio.run(go())


def test_replayed_state_is_not_single_use(wire: Wire) -> None:
    """Documents current behaviour: the spec's replay measures (expiry, binding) bound reuse but
    do not make state single-use, and mcpkit keeps no record: the same retry may run twice."""
    tok = mint(wire)["requestState"]
    for _ in range(2):
        status, reply = wire.call("tools/call", {**GREET_HI, "requestState": tok, "inputResponses": ADA})
        assert text_of(reply) == "Hi, Ada!"


def test_client_one_round_returns_input_required_for_the_caller_to_answer(wire: Wire) -> None:
    """``request(..., answer_input=False)``: the raw input_required comes back (nothing is
    answered, no handler is needed); the caller's retry carries inputResponses and the
    requestState echoed, and may be answered with input_required again."""
    name = {"action": "accept", "content": {"name": "Grace"}}
    age = {"action": "accept", "content": {"age": 85}}

    async def go() -> list[dict[str, Any]]:
        # No elicitation handler: the caller answers (and declares the capability itself).
        async with _client(wire, capabilities={"elicitation": {"form": {}}}) as c:
            first = await c.request("tools/call", {"name": "wizard"}, answer_input=False)
            second = await c.request("tools/call", {"name": "wizard", "inputResponses": {"name": name},
                                                    "requestState": first["requestState"]}, answer_input=False)
            third = await c.request("tools/call", {"name": "wizard", "inputResponses": {"age": age},
                                                   "requestState": second["requestState"]}, answer_input=False)
            plain = await c.request("tools/list", answer_input=False)  # a method that never asks
            return [first, second, third, plain]

    first, second, third, plain = asyncio.run(go())
    assert first["resultType"] == second["resultType"] == "input_required"
    assert set(first["inputRequests"]) == {"name"} and set(second["inputRequests"]) == {"age"}
    assert third.get("resultType", "complete") == "complete"
    assert third["structuredContent"]["name"] == "Grace" and third["structuredContent"]["age"] == 85
    assert any(tool["name"] == "wizard" for tool in plain["tools"])


def test_client_one_round_refuses_input_required_outside_mrtr_methods() -> None:
    from mcpkit import Server
    from mcpkit.errors import ProtocolError

    server = Server("odd")

    async def lying(ctx: Any, params: Any, call_next: Any) -> Any:
        return t.InputRequiredResult(inputRequests={})

    server.tool()(lambda: "x")
    server.wrap_method("tools/list", lying)

    async def go() -> None:
        async with Client(server) as c:
            with pytest.raises(ProtocolError, match="input_required is not allowed"):
                await c.request("tools/list", answer_input=False)

    asyncio.run(go())
