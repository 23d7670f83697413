"""Messages: JSON-RPC request builders, the HTTP headers a correct client sends, SSE parsing,
and the wire-type checks every server-written message must pass."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from mcpkit.protocol import types as t

MODERN = VERSION = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: A complete, valid request ``_meta``.
META: dict[str, Any] = {META_VERSION: VERSION, META_CAPS: {}}
#: Fields that exist only on the 2026-07-28 wire: a legacy result must not carry them.
MODERN_ONLY_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope")
CACHEABLE = {
    "server/discover", "tools/list", "prompts/list", "resources/list",
    "resources/templates/list", "resources/read",
}
#: What a 2025-11-25 client (and ours) puts on every POST.
JSON_ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


# ---------------------------------------------------------------- requests
def meta(version: str = VERSION, **extra: Any) -> dict[str, Any]:
    return {META_VERSION: version, META_CAPS: {}, **extra}


def params(extra: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """Request params carrying a valid ``_meta``."""
    return {"_meta": dict(META), **(extra or {}), **kw}


def request(id: Any, method: str, p: Any = ..., **kw: Any) -> dict[str, Any]:
    """A JSON-RPC request dict; ``p`` defaults to valid params (with ``kw`` merged in)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if p is ...:
        p = params(**kw)
    if p is not None:
        msg["params"] = p
    return msg


def body(method: str, params: dict[str, Any] | None = None, *, id: Any = 1, version: str = VERSION,
         with_meta: bool = True) -> dict[str, Any]:
    """A request whose ``params._meta`` is merged under the given params (HTTP tests' spelling)."""
    p = dict(params or {})
    if with_meta:
        p["_meta"] = {**meta(version), **p.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": p}


def note(method: str, params: dict | None = None) -> dict:
    """A JSON-RPC notification."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def line(msg: Any) -> bytes:
    return json.dumps(msg).encode()


# ---------------------------------------------------------------- 2025-11-25 messages (no _meta)
def init_msg(version: str = LEGACY, id: Any = 1, caps: dict | None = None, **extra: Any) -> dict:
    """A 2025-11-25 ``initialize`` request."""
    p = {"protocolVersion": version, "capabilities": caps if caps is not None else {},
         "clientInfo": {"name": "legacy-test-client", "version": "0.0.1"}, **extra}
    return {"jsonrpc": "2.0", "id": id, "method": "initialize", "params": p}


def req(id: Any, method: str, params: dict | None = None) -> dict:
    """A request without ``_meta`` (params only when given)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def call(id: Any, name: str, /, **arguments: Any) -> dict:
    """A ``tools/call`` without ``_meta``."""
    return req(id, "tools/call", {"name": name, "arguments": arguments})


def structured(result: dict) -> Any:
    """A tool result's value: its structuredContent (unwrapped from {"result": ...}), or the text of
    its single text block (tools returning ``str`` publish no output schema)."""
    assert not result.get("isError"), result
    sc = result.get("structuredContent")
    if sc is None:
        (block,) = result["content"]
        return block["text"]
    return sc["result"] if set(sc) == {"result"} else sc


# ---------------------------------------------------------------- HTTP
def headers_for(msg: dict[str, Any], *, version: str | None = None, **extra: str | None) -> dict[str, str]:
    """The headers a correct client sends for ``msg`` (plus ``extra``, ``_`` for ``-``; a None value
    drops one, case-insensitively)."""
    p = msg.get("params") or {}
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version or (p.get("_meta") or {}).get(META_VERSION, VERSION),
        "Mcp-Method": msg["method"],
    }
    if msg["method"] in ("tools/call", "prompts/get") and "name" in p:
        h["Mcp-Name"] = p["name"]
    elif msg["method"] == "resources/read" and "uri" in p:
        h["Mcp-Name"] = p["uri"]
    return override(h, {k.replace("_", "-"): v for k, v in extra.items()})


def override(headers: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    """``headers`` with ``changes`` applied case-insensitively (a None value removes the header)."""
    h = dict(headers)
    for k, v in changes.items():
        for existing in [e for e in h if e.lower() == k.lower()]:
            del h[existing]
        if v is not None:
            h[k] = v
    return h


def sse_events(text: str, *, strict: bool = True) -> list[Any]:
    """The JSON ``data`` of each event of a ``text/event-stream`` body (multi-line data joined).
    Not strict: events whose data is not JSON are skipped."""
    out = []
    for event in re.split(r"\r?\n\r?\n", text):
        data = [ln[5:].lstrip(" ") for ln in re.split(r"\r?\n", event) if ln.startswith("data:")]
        if not data or not "\n".join(data).strip():
            continue
        try:
            out.append(json.loads("\n".join(data)))
        except ValueError:
            if strict:
                raise
    return out


def iter_sse(lines: Iterable[str]) -> Iterator[Any]:
    """The JSON data of each event of an event stream read line by line as it arrives (say,
    ``response.iter_lines()`` of a streamed response): each is yielded as soon as it is whole."""
    data: list[str] = []
    for ln in lines:
        if ln.startswith("data:"):
            data.append(ln[5:].lstrip(" "))
        elif ln == "" and data:
            yield json.loads("\n".join(data))
            data = []


def messages_in(content_type: str, text: str) -> list[Any]:
    """The JSON-RPC messages of an HTTP response body: one JSON object, or an SSE stream's events."""
    if content_type.startswith("text/event-stream"):
        return sse_events(text)
    return [json.loads(text)]


def single_reply(content_type: str, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the response, the notifications before it) of a 2026-07-28 POST's answer: a JSON body, or
    an event stream whose last event is the one response."""
    if not content_type.startswith("text/event-stream"):
        assert content_type.startswith("application/json"), content_type
        return json.loads(text), []
    events = sse_events(text)
    responses = [e for e in events if "id" in e]
    assert len(responses) == 1 and events[-1] is responses[0], events
    return responses[0], events[:-1]


# ---------------------------------------------------------------- wire-type checks
def check_result(method: str, result: dict[str, Any]) -> Any:
    """Decode a result into its 2026-07-28 type and check the fields every result must carry."""
    typed = msgspec.convert(result, t.RESULT_TYPES[method])
    assert result["resultType"] == "complete", result
    assert isinstance(result["_meta"][SERVER_INFO]["name"], str), result
    assert isinstance(result["_meta"][SERVER_INFO]["version"], str), result
    if method in CACHEABLE:
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, result
        assert result["cacheScope"] in ("public", "private"), result
    return typed


def check_wire(msg: Any, method: str | None = None) -> None:
    """Every server-written message must decode into a 2026-07-28 wire type."""
    assert isinstance(msg, dict), msg
    assert msg.get("jsonrpc") == "2.0", msg
    if "error" in msg:
        assert set(msg) <= {"jsonrpc", "id", "error"}, msg
        msgspec.convert(msg, t.JSONRPCErrorResponse)
        assert set(msg["error"]) <= {"code", "message", "data"}, msg
    elif "result" in msg:
        assert set(msg) == {"jsonrpc", "id", "result"}, msg
        msgspec.convert(msg, t.JSONRPCResultResponse)
        if method in t.RESULT_TYPES:
            check_result(method, msg["result"])
    else:
        assert "id" not in msg, f"the server sent a request: {msg}"
        msgspec.convert(msg, t.JSONRPCNotification)
        typ = t.NOTIFICATION_PARAMS.get(msg["method"])
        if typ is not None:
            msgspec.convert(msg.get("params", {}), typ)


def check_legacy_message(msg: Any, modern: bool = False) -> None:
    """What every message a 2025-11-25 session receives must look like (``modern``: the answer to
    a 2026-07-28 request, which carries the modern result fields)."""
    assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", msg
    if "result" in msg:
        assert set(msg) == {"jsonrpc", "id", "result"}, msg
        assert isinstance(msg["result"], dict), msg
        for field in () if modern else MODERN_ONLY_RESULT_FIELDS:
            assert field not in msg["result"], f"a 2025-11-25 result carries {field!r}: {msg}"
    elif "error" in msg:
        assert set(msg) <= {"jsonrpc", "id", "error"}, msg
        assert isinstance(msg["error"]["code"], int) and isinstance(msg["error"]["message"], str), msg
    else:
        assert isinstance(msg.get("method"), str), msg
