"""Hostile frames at the codec, and through real servers (stdio and Streamable HTTP).

The holes these pin down: deeply nested JSON raised RecursionError out of ``codec.decode``
(the stdio server died, HTTP answered a plain-text 500); frames whose id was readable lost
it (lone surrogate escapes, a leading byte-order mark, bad UTF-8 inside params), so the
client waited forever; invalid UTF-8 inside params raised out of the validation ladder and
the request was never answered.

Self-contained: no conftest helpers. The stdio cases spawn ``examples/demo.py``; the HTTP
cases drive the demo server's ASGI app in-process through ``httpx.ASGITransport``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpkit.protocol import codec, errors

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo.py"
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test_robust_codec", "version": "0"},
}
LIMIT = getattr(codec, "MAX_NESTING_DEPTH", 256)  # (getattr: the file also runs against older codecs)


def frame(id: Any = 1, method: str = "tools/list", params: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": META, **(params or {})}}).encode()


def nested(depth: int, inner: bytes = b"1", kind: str = "[") -> bytes:
    """A JSON value nested ``depth`` levels deep (arrays, or objects with key "a")."""
    if kind == "[":
        return b"[" * depth + inner + b"]" * depth
    return b'{"a":' * depth + inner + b"}" * depth


def with_params_value(value: bytes, id: int = 5, head: bytes = b"") -> bytes:
    """A tools/list request whose params hold ``value`` (params adds 2 levels: frame, params)."""
    return (b'{"jsonrpc":"2.0","id":' + str(id).encode() + b',"method":"tools/list","params":{' + head
            + b'"x":' + value + b"}}")


def refused(data: bytes | str) -> codec.InvalidMessage:
    with pytest.raises(codec.InvalidMessage) as info:
        codec.decode(data)
    return info.value


# =========================================================================== 1. nesting depth
@pytest.mark.parametrize("data", [
    b"[" * 1000 + b"]" * 1000,                       # the reproducer
    b"[" * 100_000,                                   # unterminated
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"[" * 3000 + b"{" * 3000,
])
def test_deep_nesting_is_refused_not_raised(data):
    exc = refused(data)
    assert exc.error.code == errors.INVALID_REQUEST
    assert str(LIMIT) in exc.error.message


@pytest.mark.parametrize("kind", ["[", "{"])
def test_depth_limit_is_exact(kind):
    # The frame object and params are two levels; the value adds the rest.
    ok = with_params_value(nested(LIMIT - 2, kind=kind))
    msg = codec.decode(ok)
    assert type(msg) is codec.Request and msg.id == 5
    codec.params_dict(msg.params)  # and the params decode
    exc = refused(with_params_value(nested(LIMIT - 1, kind=kind)))
    assert exc.error.code == errors.INVALID_REQUEST and exc.id == 5


@pytest.mark.parametrize("where", ["params", "result", "error-data", "unknown-member"])
def test_depth_is_checked_wherever_the_nesting_is(where):
    deep = nested(LIMIT + 5)
    data = {
        "params": b'{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":' + deep + b"}}",
        "result": b'{"jsonrpc":"2.0","id":3,"result":' + deep + b"}",
        "error-data": b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m","data":' + deep + b"}}",
        "unknown-member": b'{"jsonrpc":"2.0","id":3,"method":"m","zzz":' + deep + b"}",
    }[where]
    exc = refused(data)
    assert exc.error.code == errors.INVALID_REQUEST
    assert exc.id == 3  # read before the deep part


def test_id_after_the_deep_part_is_kept_when_the_stdlib_can_read_it():
    data = b'{"jsonrpc":"2.0","method":"m","params":{"a":' + nested(LIMIT + 5) + b'},"id":"late"}'
    assert refused(data).id == "late"


def test_brackets_inside_strings_do_not_count():
    text = "[" * 5000 + "{" * 5000 + "]" * 7000 + '\\"[[' + "\\\\"
    msg = codec.decode(frame(params={"s": text, "t": ["[{" * 300]}))
    assert type(msg) is codec.Request
    assert codec.params_dict(msg.params)["s"] == text


@pytest.mark.parametrize("hider", [
    '"' + "]" * 400 + '"',                # closers inside a string
    '"\\"' + "]" * 400 + '\\""',          # ... between escaped quotes
    '"\\\\","g":"' + "]" * 400 + '"',     # an escaped backslash before a closing quote
])
def test_closers_inside_strings_do_not_hide_depth(hider):
    data = (b'{"jsonrpc":"2.0","id":8,"method":"m","params":{"h":' + hider.encode() + b',"deep":'
            + nested(LIMIT + 10) + b"}}")
    json.loads(data)  # valid JSON: only the depth is wrong
    exc = refused(data)
    assert exc.error.code == errors.INVALID_REQUEST and exc.id == 8


def test_large_shallow_frames_pass():
    rows = [{"name": f"row {i}", "tags": ["a", "b"], "v": [[i]]} for i in range(3000)]
    msg = codec.decode(frame(params={"rows": rows, "text": "x" * 100_000}))
    assert len(codec.params_dict(msg.params)["rows"]) == 3000


def test_str_frames_are_checked_too():
    exc = refused("[" * 2000 + "]" * 2000)
    assert exc.error.code == errors.INVALID_REQUEST


def test_recursion_error_never_escapes_even_deep_in_the_stack():
    data = with_params_value(nested(LIMIT - 3))  # allowed depth
    here, frame = 0, sys._getframe()
    while frame is not None:
        here, frame = here + 1, frame.f_back
    limit = sys.getrecursionlimit() - here

    def at_depth(n: int) -> Any:
        if n:
            return at_depth(n - 1)
        try:
            return codec.decode(data)
        except codec.InvalidMessage as exc:
            return exc

    # Close to the recursion limit, on 3.11 the parser itself runs out of stack: an error, not a
    # crash. From 3.12 Python frames no longer count against the C code's own depth budget, and
    # the same frame decodes there. Either way no RecursionError escapes.
    out = at_depth(limit - 100)
    if sys.version_info < (3, 12):
        assert isinstance(out, codec.InvalidMessage), out
        assert out.error.code == errors.INVALID_REQUEST and out.id == 5
    else:
        assert isinstance(out, (codec.InvalidMessage, codec.Request)), out
    # With room to spare the same frame decodes.
    assert type(at_depth(limit - 600)) is codec.Request


def test_decode_params_only_raises_validation_errors():
    for raw in (msgspec.Raw(b'{"a":"\xff"}'), msgspec.Raw(b"[" * 5000)):
        with pytest.raises(msgspec.ValidationError):
            codec.decode_params(raw, dict)


# =========================================================================== 2. ids kept
@pytest.mark.parametrize("data, rid", [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"\\ud800"}}', 7),
    (b'{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"x":"a\\udfff"}}', "s"),
    (b'{"jsonrpc":"2.0","method":"\\ud800","id":9}', 9),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"x":NaN}}', 4),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"x":"tab\there"}}', 4),
    (b'{"jsonrpc":"2.0","id":6,"method":"tools/\xfflist","params":{}}', 6),
])
def test_parse_errors_keep_a_readable_id(data, rid):
    exc = refused(data)
    assert exc.error.code == errors.PARSE_ERROR
    assert exc.id == rid and type(exc.id) is type(rid)
    reply = json.loads(codec.encode_error(exc.id, exc.error))
    assert reply["id"] == rid


@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"m"}',   # the id itself cannot be sent back
    b'{"jsonrpc":"2.0","id":1.5,"method":"m","x":NaN}',  # not a valid id
    b'{"jsonrpc":"2.0","id":true,"method":"m","x":NaN}',
    b'{"jsonrpc":"2.0","id":[1],"method":"m","x":NaN}',
    b'{"jsonrpc":"2.0","id":1,',                        # truncated: nothing is readable
    b'{"jsonrpc":"2.0","params":{"id":3},"x":NaN}',      # not a top-level id
])
def test_ids_that_are_not_readable_stay_none(data):
    exc = refused(data)
    assert exc.id is None
    codec.encode_error(exc.id, exc.error)


def test_str_with_a_lone_surrogate_character_keeps_its_id():
    exc = refused('{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"x":"\ud800"}}')
    assert exc.error.code == errors.PARSE_ERROR and exc.id == 12


def test_invalid_utf8_inside_params_is_a_parse_error_with_the_id():
    data = frame(id=21, params={"x": "PLACEHOLDER"}).replace(b"PLACEHOLDER", b"\xc3\x28")
    exc = refused(data)
    assert exc.error.code == errors.PARSE_ERROR and exc.id == 21
    assert "UTF-8" in exc.error.message
    ok = frame(id=22, params={"x": "caf\u00e9 \u2603"})
    assert codec.params_dict(codec.decode(ok).params)["x"] == "caf\u00e9 \u2603"


# --------------------------------------------------------------------------- byte-order mark
# Decision (RFC 8259 §8.1 lets parsers ignore a BOM): one leading UTF-8 BOM is ignored.
BOM = b"\xef\xbb\xbf"


def test_one_leading_bom_is_ignored():
    msg = codec.decode(BOM + frame(id=31))
    assert type(msg) is codec.Request and msg.id == 31
    msg = codec.decode("\ufeff" + frame(id=32).decode())
    assert type(msg) is codec.Request and msg.id == 32


def test_bom_before_a_non_object_says_what_is_wrong():
    assert refused(BOM + b"[1]").error.code == errors.INVALID_REQUEST
    assert refused(BOM + b"[1").error.code == errors.PARSE_ERROR


def test_a_second_or_inner_bom_is_a_parse_error():
    exc = refused(BOM + BOM + frame(id=33))
    assert exc.error.code == errors.PARSE_ERROR and exc.id == 33  # a lenient parse still reads the id
    exc = refused(frame(id=33)[:1] + BOM + frame(id=33)[1:])
    assert exc.error.code == errors.PARSE_ERROR and exc.id is None


def test_bom_and_a_later_problem_keeps_the_id():
    exc = refused(BOM + b'{"jsonrpc":"2.0","id":34,"method":"tools/list","params":{"x":"\\ud800"}}')
    assert exc.error.code == errors.PARSE_ERROR and exc.id == 34


# =========================================================================== through servers
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


class StdioServer:
    """``python examples/demo.py`` with its pipes; ``ask`` writes raw lines and reads answers."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(DEMO)], cwd=str(ROOT), env=_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"server exited: {self.stderr()}"
        return json.loads(line)

    def ask(self, data: bytes) -> dict[str, Any]:
        self.send(data)
        return self.receive()

    def alive(self) -> None:
        reply = self.ask(frame(id="alive"))
        assert reply["id"] == "alive" and "tools" in reply["result"], reply

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


@pytest.fixture
def stdio() -> Iterator[StdioServer]:
    server = StdioServer()
    try:
        yield server
    finally:
        server.close()


HOSTILE = [  # (line, expected code, expected id)
    (b"[" * 1000 + b"]" * 1000, errors.INVALID_REQUEST, None),
    (with_params_value(nested(5000), id=41), errors.INVALID_REQUEST, 41),
    (b'{"jsonrpc":"2.0","id":42,"method":"tools/list","params":{"x":"\\ud800"}}', errors.PARSE_ERROR, 42),
    (frame(id=43, params={"x": "P"}).replace(b'"P"', b'"\xff"'), errors.PARSE_ERROR, 43),
    (b"\xff\xfe{", errors.PARSE_ERROR, None),
]


def test_stdio_server_survives_and_answers_hostile_frames(stdio):
    # The first line is the reproducer: it used to end the process.
    for line, code, rid in HOSTILE:
        reply = stdio.ask(line)
        assert reply["error"]["code"] == code, reply
        assert reply.get("id") == rid, reply
        stdio.alive()


def test_stdio_bom_request_is_served(stdio):
    reply = stdio.ask(BOM + frame(id=44))
    assert reply["id"] == 44 and "tools" in reply["result"], reply


def test_stdio_bad_utf8_in_tool_arguments_is_answered(stdio):
    # Used to raise msgspec.DecodeError out of the validation ladder: no answer at all.
    stdio.alive()  # the session is modern now; the bad frame takes the hot path
    bad = frame(id=45, method="tools/call", params={"name": "add", "arguments": {"a": 1, "b": "P"}})
    reply = stdio.ask(bad.replace(b'"P"', b'"\xc3("'))
    assert reply["id"] == 45 and reply["error"]["code"] == errors.PARSE_ERROR, reply
    stdio.alive()


def _demo_app() -> Any:
    spec = importlib.util.spec_from_file_location("_robust_codec_demo", DEMO)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look themselves up there
    spec.loader.exec_module(mod)
    return mod.server.http_app()


def _post_all(bodies: list[bytes]) -> list[Any]:
    import httpx

    async def run() -> list[Any]:
        transport = httpx.ASGITransport(app=_demo_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                       "mcp-protocol-version": VERSION, "mcp-method": "tools/list"}
            return [await client.post("/mcp", content=body, headers=headers) for body in bodies]

    return asyncio.run(run())


def test_http_hostile_bodies_get_json_errors_not_500():
    bodies = [line for line, _, _ in HOSTILE] + [BOM + frame(id=46), frame(id=47)]
    responses = _post_all(bodies)
    for (line, code, rid), r in zip(HOSTILE, responses[:len(HOSTILE)], strict=True):
        assert r.status_code == 400, (line[:60], r.status_code, r.text[:200])
        body = r.json()
        assert body["error"]["code"] == code and body.get("id") == rid, body
    for rid, r in zip((46, 47), responses[len(HOSTILE):], strict=True):
        assert r.status_code == 200 and r.json()["id"] == rid, r.text[:200]
