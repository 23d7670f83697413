"""Frame generation and answer checking shared by the fuzzers (stdio and HTTP).

A :class:`FrameGen` makes :class:`Case` objects: one frame each, valid or hostile, and what
the server must do with it. What it must do is decided independently of mcpkit's codec, by
the stdlib parser (lenient: lone surrogates, NaN, control characters, bad UTF-8 read as
U+FFFD, leading BOMs ignored):

- a frame that parses to an object with a top-level ``"id"`` (int or str) and a ``"method"``
  key, or with neither method nor result/error, is *owed* exactly one answer with that id;
- every other id the frame may carry (response-shaped frames, ids a streaming parser would
  read before an over-deep part, listen requests held open, cancelled requests) *may* be
  answered, at most once per frame carrying it;
- an answer with any other id is unexpected.

:func:`check_message` validates one JSON-RPC message the server sent.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

VERSION = "2026-07-28"
BOM = b"\xef\xbb\xbf"
try:
    from mcpkit.protocol.codec import MAX_NESTING_DEPTH as LIMIT
except ImportError:  # pragma: no cover - running against another implementation
    LIMIT = 256

META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpkit-fuzz", "version": "0"},
}

#: Requests the demo server (examples/demo.py) answers quickly: (method, params).
VALID = [
    ("tools/list", {}),
    ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
    ("tools/call", {"name": "convert_temperature", "arguments": {"value": 98.6, "to": "celsius"}}),
    ("tools/call", {"name": "count_down", "arguments": {"start": 2}}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "notes://groceries"}),
    ("resources/read", {"uri": "demo://clock"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "summarize", "arguments": {"name": "ideas"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "name", "value": "g"}}),
    ("server/discover", {}),
]

_MISSING = object()
# A top-level "id" after leading members with scalar values: what a streaming parser reads
# before it stops (at a depth limit, say). An independent copy of the codec's idea.
_LEADING_ID = re.compile(
    rb'\s*\{(?:\s*"[A-Za-z0-9_]*"\s*:\s*(?:"[^"\\]*"|-?[0-9][0-9.eE+-]*|true|false|null)\s*,)*?'
    rb'\s*"id"\s*:\s*(-?(?:0|[1-9][0-9]*)|"[^"\\]*")\s*[,}]'
)


def valid_id(value: Any) -> bool:
    if type(value) is int:
        return True
    if type(value) is str:
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    return False


def key(value: Any) -> tuple[str, Any]:
    """Ids compare by type and value (1 and "1" are different ids; True is not 1)."""
    return (type(value).__name__, value)


@dataclass
class Expectation:
    owed: Any = _MISSING          # the id an answer is owed to
    may: list[Any] = field(default_factory=list)  # ids that may be answered (at most once each)
    cancels: Any = _MISSING        # a request id this frame may cancel
    notification: bool = False    # a well-formed notification (HTTP: 202)


def expect(data: bytes) -> Expectation:
    """What the server owes ``data``, decided by the stdlib parser (see the module doc)."""
    out = Expectation()
    body = data
    while body[:3] == BOM:  # one is ignored; with more, the error still carries the id
        body = body[3:]
    lead: Any = _MISSING
    m = _LEADING_ID.match(body, 0, 65536)
    if m is not None:
        try:
            lead = json.loads(m.group(1))
        except ValueError:
            pass
        if valid_id(lead):
            out.may.append(lead)
    try:
        obj = json.loads(body.decode("utf-8", "replace"), strict=False)
    except (ValueError, RecursionError):
        return out
    if type(obj) is not dict:
        return out
    if depth_of(obj) > LIMIT:
        # Refused for its depth: the id is the one read before the deep part, or (small
        # frames) the one a full lenient parse finds.
        rid = obj.get("id", _MISSING)
        if valid_id(lead):
            out.owed = lead
        elif len(body) <= 65536 and valid_id(rid):
            out.may.append(rid)
            out.owed = rid
        return out
    rid = obj.get("id", _MISSING)
    method = obj.get("method", _MISSING)
    if method == "notifications/cancelled" and rid is _MISSING and isinstance(obj.get("params"), dict):
        target = obj["params"].get("requestId", _MISSING)
        if valid_id(target):
            out.cancels = target
    if rid is _MISSING:
        out.notification = method is not _MISSING and obj.get("jsonrpc") == "2.0"
        return out
    if not valid_id(rid):
        return out
    out.may.append(rid)
    if method is not _MISSING:
        if method != "subscriptions/listen":  # held open until the client goes: may end unanswered
            out.owed = rid
    elif "result" not in obj and "error" not in obj:
        out.owed = rid
    return out


def depth_of(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a value past Python's stack counts as deep)."""
    try:
        if type(value) is list:
            return 1 + max((depth_of(v) for v in value), default=0)
        if type(value) is dict:
            return 1 + max((depth_of(v) for v in value.values()), default=0)
    except RecursionError:
        return 10**9
    return 0


def check_message(msg: Any) -> str | None:
    """None when ``msg`` is a well-formed JSON-RPC message from a server, else what is wrong."""
    if type(msg) is not dict:
        return "not an object"
    if msg.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if "method" in msg:
        if type(msg["method"]) is not str:
            return "method is not a string"
        if "id" in msg:
            return "a request from a stateless server"
        return None
    has_result, has_error = "result" in msg, "error" in msg
    if has_result == has_error:
        return "needs exactly one of result and error"
    rid = msg.get("id", _MISSING)
    if has_result:
        if not valid_id(rid):
            return "a result without a string or integer id"
        if type(msg["result"]) is not dict:
            return "result is not an object"
        return None
    err = msg["error"]
    if type(err) is not dict or type(err.get("code")) is not int or type(err.get("message")) is not str:
        return "error needs an integer code and a string message"
    if rid is not _MISSING and rid is not None and not valid_id(rid):
        return "bad id on an error"
    return None


# ====================================================================== generation
@dataclass
class Case:
    kind: str
    data: bytes
    method: str | None = None       # what the frame was meant to be (HTTP headers mirror it)
    params: Any = None
    headers: dict[str, bytes] | None = None  # HTTP: headers to send instead of the mirrored ones


class FrameGen:
    """Frames, valid and hostile, from a seed. ``big`` allows multi-megabyte frames."""

    KINDS = {  # kind: weight
        "valid": 22, "meta": 8, "types": 8, "unknown-method": 3, "notification": 4, "response": 3,
        "malformed": 8, "mutated": 14, "deep": 5, "huge": 1, "bad-utf8": 4, "bom": 3, "surrogate": 4,
        "ids": 4, "batch": 2, "cancel": 2, "legacy": 2, "jsonrpc": 2, "listen": 1,
    }

    def __init__(self, seed: int, *, big: bool = True, listen: bool = True) -> None:
        self.rng = random.Random(seed)
        self.big = big
        self.n = 0
        self.recent: list[Any] = []
        kinds = {k: w for k, w in self.KINDS.items() if listen or k != "listen"}
        self.kinds = list(kinds)
        self.weights = list(kinds.values())

    # ------------------------------------------------------------ pieces
    def new_id(self) -> Any:
        self.n += 1
        if self.rng.random() < 0.5:
            return self.n * 1000 + self.rng.randrange(1000)
        return f"f{self.n}-{self.rng.getrandbits(24):06x}"

    def request(self, method: str, params: dict[str, Any] | None, rid: Any = _MISSING, meta: Any = _MISSING) -> dict[str, Any]:
        p = dict(params or {})
        if meta is not None:
            p["_meta"] = META if meta is _MISSING else meta
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": p}
        if rid is not None:
            msg["id"] = self.new_id() if rid is _MISSING else rid
            self.recent = (self.recent + [msg["id"]])[-20:]
        return msg

    def valid_pair(self) -> tuple[str, dict[str, Any]]:
        method, params = self.rng.choice(VALID)
        return method, json.loads(json.dumps(params))

    def scalar(self) -> Any:
        r = self.rng
        return r.choice([None, True, False, 0, -1, 2**53, 2**64, 10**30, 1.5, -0.0, 1e308, "", "x", "\u00e9\u2603",
                         "\U0001f600", "[", "]}", "\\", '"', "\x00\x1f", " " * 3, r.random(), r.randrange(-10**6, 10**6)])

    def value(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth > 3 or r < 0.5:
            return self.scalar()
        if r < 0.75:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(4))]
        keys = ["a", "name", "_meta", "id", "", "\u00e9"]
        return {self.rng.choice(keys): self.value(depth + 1) for _ in range(self.rng.randrange(4))}

    def encode(self, msg: Any) -> bytes:
        return json.dumps(msg, ensure_ascii=self.rng.random() < 0.5).encode("utf-8", "surrogatepass")

    def mutate(self, data: bytes) -> bytes:
        r = self.rng
        for _ in range(r.randint(1, 4)):
            at = r.randrange(len(data) + 1)
            op = r.randrange(8)
            if op == 0:
                data = data[:at] + bytes([r.randrange(256)]) + data[at:]
            elif op == 1:
                data = data[:at] + data[at + r.randint(1, 8):]
            elif op == 2 and data:
                i = min(at, len(data) - 1)
                data = data[:i] + bytes([data[i] ^ (1 << r.randrange(8))]) + data[i + 1:]
            elif op == 3:
                data = data[:at]
            elif op == 4:
                piece = r.choice([b"[", b"{", b"}", b"]", b'"', b",", b":", b"\\", b"null", b'"\\u', b"\xc3"])
                data = data[:at] + piece + data[at:]
            elif op == 5:
                j = r.randrange(len(data) + 1)
                data = data[:at] + data[min(at, j):max(at, j)] + data[at:]
            elif op == 6:
                data = data.replace(r.choice([b'"2.0"', b"{}", b'"id"', b'"method"', b'"params"', b"_meta", b":"]),
                                    r.choice([b'"1.0"', b"[]", b'"ID"', b"null", b'"\\ud800"', b"", b"::"]), 1)
            else:
                data = data[:at] + data[at:].upper()
        return data

    # ------------------------------------------------------------ kinds
    def case(self) -> Case:
        kind = self.rng.choices(self.kinds, self.weights)[0]
        return getattr(self, "k_" + kind.replace("-", "_"))(kind)

    def k_valid(self, kind: str) -> Case:
        method, params = self.valid_pair()
        return Case(kind, self.encode(self.request(method, params)), method, params)

    def k_meta(self, kind: str) -> Case:
        method, params = self.valid_pair()
        meta = dict(META)
        choice = self.rng.randrange(7)
        if choice == 0:
            meta = None  # no _meta at all
        elif choice == 1:
            del meta[self.rng.choice(list(meta))]
        elif choice == 2:
            version = self.rng.choice(["2025-11-25", "2024-11-05", "9999-01-01", "", 20260728])
            meta["io.modelcontextprotocol/protocolVersion"] = version
        elif choice == 3:
            meta["io.modelcontextprotocol/clientCapabilities"] = self.value()
        elif choice == 4:
            meta["io.modelcontextprotocol/clientInfo"] = self.value()
        elif choice == 5:
            meta["io.modelcontextprotocol/logLevel"] = self.rng.choice(["debug", "loud", 3])
        else:
            meta = self.value()
        return Case(kind, self.encode(self.request(method, params, meta=meta)), method, params)

    def k_types(self, kind: str) -> Case:
        method, params = self.valid_pair()
        r = self.rng.randrange(4)
        if r == 0 and params:
            params[self.rng.choice(list(params))] = self.value()
        elif r == 1:
            name = self.rng.choice(["arguments", "name", "uri", "cursor", "ref", "requestState", "inputResponses"])
            params[name] = self.value()
        elif r == 2:
            msg = self.request(method, params)
            msg["params"] = self.rng.choice([[], [1], "x", 3, True])
            return Case(kind, self.encode(msg), method, None)
        else:
            msg = self.request(method, params)
            msg["method"] = self.rng.choice([1, None, [], {}, True])
            return Case(kind, self.encode(msg), None, None)
        return Case(kind, self.encode(self.request(method, params)), method, params)

    def k_unknown_method(self, kind: str) -> Case:
        method = self.rng.choice(["ping", "tools/unknown", "", "resources/subscribe", "sampling/createMessage", "a" * 300,
                                  "tools/list ", "TOOLS/LIST", "initialize\u0000", "tasks/get"])
        return Case(kind, self.encode(self.request(method, {})), method, {})

    def k_notification(self, kind: str) -> Case:
        method = self.rng.choice(["notifications/initialized", "notifications/progress", "notifications/roots/list_changed",
                                  "notifications/cancelled", "x/y"])
        params = {"requestId": self.rng.choice(self.recent or [0]) if self.rng.random() < 0.2 else "nobody"}
        return Case(kind, self.encode(self.request(method, params, rid=None)), method, params)

    def k_response(self, kind: str) -> Case:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.new_id()}
        if self.rng.random() < 0.5:
            msg["result"] = self.value()
        else:
            msg["error"] = self.rng.choice([{"code": -32000, "message": "nope"}, self.value()])
        return Case(kind, self.encode(msg))

    def k_malformed(self, kind: str) -> Case:
        r = self.rng.randrange(6)
        if r == 0:
            data = self.encode(self.request(*self.valid_pair()))
            data = data[: self.rng.randrange(1, len(data))]
        elif r == 1:
            data = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 64)))
        elif r == 2:
            data = self.rng.choice([b"{", b"}", b"[]", b"[1,", b"null", b"true", b"1e999", b'"s"', b"{}", b'{"a":1} {"b":2}',
                                    b"\x00", b"{'jsonrpc': '2.0'}", b'{"jsonrpc":"2.0",}', b"NaN", b"-", b'{"jsonrpc":"2.0"'])
        elif r == 3:
            data = self.encode(self.value())
        elif r == 4:
            data = b" \t " + self.encode(self.request(*self.valid_pair())) + b" \t"
        else:
            data = self.encode(self.request(*self.valid_pair())) + self.rng.choice([b"x", b"}", b",", b" {}"])
        return Case(kind, data)

    def k_mutated(self, kind: str) -> Case:
        method, params = self.valid_pair()
        return Case(kind, self.mutate(self.encode(self.request(method, params))), method, params)

    def k_deep(self, kind: str) -> Case:
        r = self.rng
        depth = r.choice([LIMIT - 3, LIMIT - 2, LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 5, 600, 999, 1001, 5000, 100_000])
        if not self.big:
            depth = min(depth, 5000)
        opener, closer = r.choice([(b"[", b"]"), (b'{"k":', b"}"), (b'[{"k":', b"}]")])
        deep = opener * depth + b"0" + closer * depth * r.choice([1, 1, 1, 0])
        rid = self.new_id()
        where = r.randrange(4)
        head = (b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"method":"tools/call","params":{"_meta":'
                + json.dumps(META).encode())
        if where == 0:
            data = head + b',"name":"add","arguments":{"a":1,"b":' + deep + b"}}}"
        elif where == 1:
            data = head + b',"name":"add","arguments":{"a":1,"b":2}},"zzz":' + deep + b"}"
        elif where == 2:
            data = b'{"jsonrpc":"2.0","method":"tools/list","params":{"x":' + deep + b'},"id":' + json.dumps(rid).encode() + b"}"
        else:
            data = deep
        return Case(kind, data, "tools/call", {"name": "add", "arguments": {}})

    def k_huge(self, kind: str) -> Case:
        size = self.rng.choice([70_000, 300_000, 1_500_000] if self.big else [70_000, 200_000])
        method = "tools/call"
        params = {"name": self.rng.choice(["add", "convert_temperature", "x" * 100_000]),
                  "arguments": {"a": 1, "b": 2, "blob": self.rng.choice(["x", "\u00e9", "[", "\\\""]) * (size // 2)}}
        return Case(kind, self.encode(self.request(method, params)), method, params)

    def k_bad_utf8(self, kind: str) -> Case:
        method, params = self.valid_pair()
        bad = self.rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xc0\xaf"])
        data = self.encode(self.request(method, {**params, "note": "PLACE"}))
        target = self.rng.choice([b"PLACE", b"PLACE", b"tools", b"2.0", b"-"])
        return Case(kind, data.replace(target, target[:1] + bad + target[1:], 1), method, params)

    def k_bom(self, kind: str) -> Case:
        method, params = self.valid_pair()
        data = self.encode(self.request(method, params))
        r = self.rng.randrange(4)
        if r == 0:
            data = BOM + data
        elif r == 1:
            data = BOM + BOM + data
        elif r == 2:
            at = self.rng.randrange(1, len(data))
            data = data[:at] + BOM + data[at:]
        else:
            data = b"\xfe\xff" + data
        return Case(kind, data, method, params)

    def k_surrogate(self, kind: str) -> Case:
        method, params = self.valid_pair()
        esc = self.rng.choice([b"\\ud800", b"\\udfff", b"\\ud83d", b"\\udc00\\ud800", b"\\ud800\\u0041"])
        data = self.encode(self.request(method, {**params, "note": "PLACE"}))
        r = self.rng.randrange(4)
        if r == 0:
            data = data.replace(b"PLACE", esc, 1)
        elif r == 1:
            data = data.replace(b'"method":"', b'"method":"' + esc, 1).replace(b'"method": "', b'"method": "' + esc, 1)
        elif r == 2:
            data = data.replace(b'"jsonrpc"', b'"jsonrpc' + esc + b'"', 1)
        else:
            msg = self.request(method, params)
            msg["id"] = "PLACEID"
            data = self.encode(msg).replace(b"PLACEID", esc, 1)
        return Case(kind, data, method, params)

    def k_ids(self, kind: str) -> Case:
        method, params = self.valid_pair()
        rid = self.rng.choice([0, -1, 2**63, 2**64 + 7, -(10**25), "", " ", "\u00e9", "\U0001f600", "x" * 10_000, "1",
                               1.0, 1.5, -0.0, True, False, None, [], {}, [1], {"a": 1}])
        msg = self.request(method, params, rid=rid)
        return Case(kind, self.encode(msg), method, params)

    def k_batch(self, kind: str) -> Case:
        items = [self.request(*self.valid_pair()) for _ in range(self.rng.randrange(0, 4))]
        return Case(kind, self.encode(items))

    def k_cancel(self, kind: str) -> Case:
        target = self.rng.choice(self.recent or [0])
        params = {"requestId": target, "reason": "fuzz"}
        return Case(kind, self.encode(self.request("notifications/cancelled", params, rid=None, meta=None)),
                    "notifications/cancelled", params)

    def k_legacy(self, kind: str) -> Case:
        r = self.rng.randrange(3)
        if r == 0:
            params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
            return Case(kind, self.encode(self.request("initialize", params, meta=None)), "initialize", params)
        if r == 1:
            return Case(kind, self.encode(self.request("tools/list", {}, meta=None)), "tools/list", {})
        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "new", "version": "1"}}
        return Case(kind, self.encode(self.request("initialize", params)), "initialize", params)

    def k_jsonrpc(self, kind: str) -> Case:
        method, params = self.valid_pair()
        msg = self.request(method, params)
        choice = self.rng.randrange(3)
        if choice == 0:
            del msg["jsonrpc"]
        else:
            msg["jsonrpc"] = ["1.0", 2.0][choice - 1]
        return Case(kind, self.encode(msg), method, params)

    def k_listen(self, kind: str) -> Case:
        params = {"notifications": {"toolsListChanged": True}}
        return Case(kind, self.encode(self.request("subscriptions/listen", params)), "subscriptions/listen", params)


# ====================================================================== accounting
@dataclass
class Ledger:
    """Who is owed an answer, who got one, and what went wrong."""

    owed: dict[tuple[str, Any], int] = field(default_factory=dict)     # id -> frames owed an answer
    allowed: dict[tuple[str, Any], int] = field(default_factory=dict)  # id -> frames that may get one
    answered: dict[tuple[str, Any], int] = field(default_factory=dict)
    excused: set[tuple[str, Any]] = field(default_factory=set)         # cancelled: may stay unanswered
    null_errors: int = 0
    notifications: int = 0
    invalid: list[str] = field(default_factory=list)
    unexpected: list[Any] = field(default_factory=list)
    duplicates: list[Any] = field(default_factory=list)

    def expect(self, e: Expectation) -> None:
        for rid in dict.fromkeys(key(i) for i in e.may):
            self.allowed[rid] = self.allowed.get(rid, 0) + 1
        if e.owed is not _MISSING:
            k = key(e.owed)
            self.owed[k] = self.owed.get(k, 0) + 1
        if e.cancels is not _MISSING:
            self.excused.add(key(e.cancels))

    def take(self, raw: bytes | str) -> Any:
        """Record one line/body the server sent; returns the parsed message (or None)."""
        try:
            msg = json.loads(raw)
        except ValueError as exc:
            self.invalid.append(f"not JSON ({exc}): {raw[:200]!r}")
            return None
        problem = check_message(msg)
        if problem is not None:
            self.invalid.append(f"{problem}: {str(msg)[:200]}")
            return msg
        if "method" in msg:
            self.notifications += 1
            return msg
        rid = msg.get("id")
        if rid is None:
            self.null_errors += 1
            return msg
        k = key(rid)
        n = self.answered[k] = self.answered.get(k, 0) + 1
        if k not in self.allowed:
            self.unexpected.append(rid)
        elif n > self.allowed[k]:
            self.duplicates.append(rid)
        return msg

    def missing(self) -> list[Any]:
        return [k[1] for k, n in self.owed.items() if self.answered.get(k, 0) < n and k not in self.excused]

    def summary(self) -> dict[str, Any]:
        return {
            "owed": sum(self.owed.values()),
            "answered": sum(self.answered.values()),
            "unanswered": len(self.missing()),
            # owed, but cancelled (or past the line limit) before an answer: may stay unanswered
            "excused_unanswered": sum(n - self.answered.get(k, 0) for k, n in self.owed.items()
                                      if k in self.excused and self.answered.get(k, 0) < n),
            "duplicates": len(self.duplicates),
            "unexpected": len(self.unexpected),
            "invalid_lines": len(self.invalid),
            "null_id_errors": self.null_errors,
            "notifications": self.notifications,
        }
