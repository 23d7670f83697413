"""JSON-RPC framing: bytes in, one typed message (or a precise error) out; messages in, bytes out.

Pure functions over bytes, shared by every transport.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Union

import msgspec
from msgspec import UNSET, UnsetType

from . import errors, lazy_re
from .errors import InvalidMessage as InvalidMessage  # raised by decode()

RequestId = Union[int, str]


class Request(msgspec.Struct, frozen=True):
    id: RequestId
    method: str
    params: Any  # msgspec.Raw (unparsed) or dict


class Notification(msgspec.Struct, frozen=True):
    method: str
    params: Any


class Response(msgspec.Struct, frozen=True):
    id: RequestId | None
    result: Any = None
    error: Any = None  # dict with code/message/data


Message = Union[Request, Notification, Response]


class Reply(NamedTuple):
    """An encoded response, and its error code (None for a result) so HTTP can pick a status.

    ``rejected``: the request failed the inbound check (it never reached a handler); HTTP
    answers those errors with the status the spec fixes for them (400, 404).
    """

    body: bytes
    error_code: int | None
    rejected: bool = False


class _Envelope(msgspec.Struct):
    jsonrpc: Any = UNSET
    id: Any = UNSET
    method: Any = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: Any = UNSET


_decode_envelope = msgspec.json.Decoder(_Envelope).decode
_decode_any = msgspec.json.Decoder().decode
_encoder = msgspec.json.Encoder()
encode = _encoder.encode
_NULL_RAW = msgspec.Raw(b"null")


def decode(data: bytes | str, *, parse_params: bool = False) -> Message:
    """Decode one JSON-RPC message.

    Params stay as ``msgspec.Raw`` (decoded later against the method's own type) unless
    ``parse_params`` is set. Raises :class:`InvalidMessage` with -32700 or -32600, never
    anything else; a message it returns has params (and result) that decode cleanly. The
    error carries the request id whenever it can be read (see :func:`_salvage_id`).
    """
    # Deep nesting is refused before any parsing (see MAX_NESTING_DEPTH): below this size a
    # valid JSON text cannot be that deep, so the common small frame pays one comparison.
    if len(data) > _DEPTH_SCAN_ABOVE and _too_deep(data):
        raise InvalidMessage(errors.invalid_request(f"JSON nested deeper than {MAX_NESTING_DEPTH} levels"),
                             _salvage_id(data, deep=True))
    try:
        try:
            env = _decode_envelope(data)
        except msgspec.ValidationError as exc:
            # msgspec stops at the first wrong type, before it sees whether the rest even parses.
            try:
                _decode_any(data)
            except msgspec.DecodeError as bad:
                raise InvalidMessage(errors.parse_error(str(bad))) from None
            # Valid JSON, but not an object: an array (batching is gone), a string, a number...
            raise InvalidMessage(errors.invalid_request(_shape_of(data, exc))) from None
        except (msgspec.DecodeError, UnicodeError) as exc:
            # UnicodeError: a str holding a lone surrogate (it has no UTF-8 form).
            data, env = _decode_after_error(data, exc)

        rid = env.id
        id_ok = rid is UNSET or (type(rid) is int or type(rid) is str)
        readable_id = rid if (type(rid) is int or type(rid) is str) else None
        if type(data) is bytes and not data.isascii():
            # msgspec checks the UTF-8 of the strings it decodes, not of what it skips (the
            # raw params): check it here, so that the params decode later without surprises.
            try:
                data.decode()
            except UnicodeDecodeError as bad:
                raise InvalidMessage(errors.parse_error(f"invalid UTF-8 (byte {bad.start})"), readable_id) from None
        if env.jsonrpc != "2.0":
            raise InvalidMessage(errors.invalid_request('"jsonrpc" must be "2.0"'), readable_id)
        if not id_ok:
            if rid is None and env.method is UNSET:
                # Plain JSON-RPC error replies carry "id": null for unreadable requests.
                return Response(None, None, env.error if env.error is not UNSET else None)
            raise InvalidMessage(errors.invalid_request('"id" must be a string or an integer'))

        method = env.method
        if method is not UNSET:
            if type(method) is not str:
                raise InvalidMessage(errors.invalid_request('"method" must be a string'), readable_id)
            params: Any = env.params
            if params is UNSET:
                params = None
            elif parse_params or params == _NULL_RAW:
                params = _decode_any(params)
                if params is not None and type(params) is not dict:
                    raise InvalidMessage(errors.invalid_request('"params" must be an object'), readable_id)
            elif memoryview(params)[0] != 123:  # "{"
                raise InvalidMessage(errors.invalid_request('"params" must be an object'), readable_id)
            if rid is UNSET:
                return Notification(method, params)
            return Request(rid, method, params)

        if env.result is not UNSET or env.error is not UNSET:
            if rid is UNSET and env.error is UNSET:
                raise InvalidMessage(errors.invalid_request('a result response needs an "id"'))
            if rid is UNSET:
                rid = None  # an error about a request the peer could not read carries no id
            if env.error is not UNSET:
                err = env.error
                if not (type(err) is dict and type(err.get("code")) is int and type(err.get("message")) is str):
                    raise InvalidMessage(errors.invalid_request('"error" must have an integer code and a string message'))
                return Response(rid, None, err)
            result: Any = env.result
            return Response(rid, _decode_any(result), None)

        raise InvalidMessage(errors.invalid_request('no "method", "result" or "error"'), readable_id)
    except RecursionError:
        # Only reachable when decode itself is called from deep in the stack: the depth limit
        # keeps frames far below Python's recursion limit. Never let it escape a transport.
        raise InvalidMessage(errors.invalid_request("JSON nested too deeply to decode here"),
                             _salvage_id(data, deep=True)) from None


def _shape_of(data: bytes | str, exc: Exception) -> str:
    head = data.lstrip()[:1]
    if head in (b"[", "["):
        return "batches (JSON arrays) are not supported; send one JSON-RPC object per message"
    return "a JSON-RPC message must be a JSON object"


# ------------------------------------------------------------------ byte-order mark
# RFC 8259 §8.1: senders MUST NOT add a byte-order mark; parsers MAY ignore one rather than
# treat it as an error. mcpkit ignores ONE leading UTF-8 BOM (EF BB BF; U+FEFF in a str) and
# decodes the rest as usual: a peer whose runtime writes text files "with BOM" (PowerShell,
# some Windows encoders) then works, and a strict peer loses nothing. A second BOM, or one
# anywhere else, is a parse error like any stray character (its error still carries the id a
# lenient parse finds). The check costs nothing on the valid path: it runs only after
# msgspec has refused the frame.
_BOM = b"\xef\xbb\xbf"


def _decode_after_error(data: bytes | str, exc: Exception) -> tuple[bytes | str, _Envelope]:
    """The envelope of a frame msgspec refused: it may only have been a leading BOM; else raise
    a parse error that keeps the id when a lenient parse can read it."""
    stripped = _strip_bom(data)
    if stripped is not None:
        try:
            return stripped, _decode_envelope(stripped)
        except msgspec.ValidationError:
            # A BOM before a non-object: let the non-object message say what is wrong.
            try:
                _decode_any(stripped)
            except msgspec.DecodeError as bad:
                raise InvalidMessage(errors.parse_error(str(bad)), _salvage_id(stripped)) from None
            raise InvalidMessage(errors.invalid_request(_shape_of(stripped, exc))) from None
        except (msgspec.DecodeError, UnicodeError) as again:
            data, exc = stripped, again
    raise InvalidMessage(errors.parse_error(str(exc)), _salvage_id(data)) from None


def _strip_bom(data: bytes | str) -> bytes | str | None:
    if type(data) is str:
        return data[1:] if data[:1] == "\ufeff" else None
    return data[3:] if data[:3] == _BOM else None


# ------------------------------------------------------------------ salvaging the id
# A frame msgspec refuses can still have an id a client is waiting on: a lone-surrogate
# escape ("\ud800": JSON by RFC 8259's grammar, refused as not interoperable), NaN, a raw
# control character or bad UTF-8 inside a string. The error then carries that id, so the
# client's call fails at once instead of hanging. The id must be a top-level "id" of type
# int or str that the error reply can carry (a str with a lone surrogate cannot be encoded).
# A frame that does not parse even leniently (truncated, garbage) keeps no id, as JSON-RPC
# says; a frame refused for its depth keeps an id found before the deep part.

#: Top-level members with plain scalar values, then ``"id"``: what a streaming parser
#: would have read before it stopped at the nesting limit.
_LEADING_ID = lazy_re(
    globals(), "_LEADING_ID",
    rb'\s*\{(?:\s*"[A-Za-z0-9_]*"\s*:\s*(?:"[^"\\]*"|-?[0-9][0-9.eE+-]*|true|false|null)\s*,)*?'
    rb'\s*"id"\s*:\s*(-?(?:0|[1-9][0-9]*)|"[^"\\]*")\s*[,}]'
)


def _salvage_id(data: bytes | str, *, deep: bool = False) -> RequestId | None:
    import json  # (the error path only: not loaded with the codec)

    try:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        while raw[:3] == _BOM:  # leniently, any number of them
            raw = raw[3:]
        found: Any = None
        m = _LEADING_ID.match(raw, 0, 65536) if deep else None
        if m is not None:
            found = json.loads(m.group(1))
        elif not deep or len(raw) <= 65536:
            # The stdlib parser is lenient where it matters here: surrogate escapes,
            # NaN/Infinity, control characters (strict=False); bad bytes become U+FFFD.
            # (A deep frame gets this only when small: the parse of a big one would cost.)
            msg = json.loads(raw.decode("utf-8", "replace"), strict=False)
            if type(msg) is dict:
                found = msg.get("id")
        if type(found) is str:
            found.encode()  # refuses lone surrogates: they could not be sent back
            return found
        if type(found) is int:
            return found
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeError and int limits are ValueErrors
        pass
    return None


# ------------------------------------------------------------------ nesting depth
#: The deepest nesting of arrays and objects a message may have (RFC 8259 §9 lets a parser
#: set limits). Frames nested deeper are refused with -32600 before any parsing: msgspec
#: and the stdlib parser recurse in C, and an attacker-chosen depth would otherwise surface
#: as a RecursionError in the codec, or later in a handler. MCP messages nest a handful of
#: levels; tool arguments rarely more than ten.
MAX_NESTING_DEPTH = 256

# A valid JSON text deeper than the limit has an opener and a closer per level, so shorter
# frames are never scanned. (A shorter invalid one nests a few hundred levels at most before
# the parser stops at its error; a RecursionError there would be caught all the same.)
_DEPTH_SCAN_ABOVE = 2 * MAX_NESTING_DEPTH
_OPENERS = (b"[", b"{")
_ONLY_OPENERS = bytes(c for c in range(256) if c not in b"[{")
_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_STRUCTURAL = bytes(c for c in range(256) if c not in b'[]{}"')
_TOO_DEEP_RUN = b"(" * (MAX_NESTING_DEPTH + 1)


def _too_deep(data: bytes | str) -> bool:
    """Whether ``data`` nests arrays/objects (outside strings) deeper than MAX_NESTING_DEPTH.

    Exact for valid JSON and never below the depth a parser would reach; C-speed passes only
    (find, translate, replace, count), cheapest first, each skipped when one before settles
    it: a frame needs more openers than the limit before its structure is looked at.
    """
    raw = data if type(data) is bytes else data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    limit = MAX_NESTING_DEPTH
    if len(raw) <= 8192:
        if len(raw.translate(None, _ONLY_OPENERS)) <= limit:
            return False
    else:
        # Large frames are mostly text or base64, with few openers: count them by memchr
        # jumps, on a budget (one find per KiB) so a bracket-rich frame wastes little.
        budget = min(limit, len(raw) >> 10)
        seen = 0
        for opener in _OPENERS:
            i = raw.find(opener)
            while i >= 0 and seen <= budget:
                seen += 1
                i = raw.find(opener, i + 1)
        if seen <= budget:
            return False
    # The structure: brackets as parens, and quotes to tell strings apart.
    if b"\\" in raw and b'\\"' in raw:
        # Drop escaped backslashes, then escaped quotes: every quote left delimits a string.
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = raw.translate(_PARENS, _NOT_STRUCTURAL)
    parens = skeleton.translate(None, b'"')
    if parens.count(b"(") <= limit:
        return False
    # A bracket is inside a string when an odd number of quotes precede it. When every run of
    # quotes between brackets is even (as many quotes as twice the non-overlapping quote
    # pairs: two C-speed counts), none is; else keep the pieces between strings only.
    if len(skeleton) - len(parens) != 2 * skeleton.count(b'""'):
        parens = b"".join(skeleton.replace(b'""', b"").split(b'"')[::2])
    return _paren_depth(parens) > limit


def _paren_depth(p: bytes) -> int:
    """How deep a string of ``(`` and ``)`` nests: a value above the limit exactly when its
    deepest prefix is (for a balanced string; an unbalanced one may be over-estimated, never
    under-estimated up to where a parser would stop).

    Walked in chunks no longer than the room left below the limit: such a chunk cannot
    cross the limit, so one ``count`` per chunk suffices. Close to the limit chunks would get
    short; the rest is then peeled by ``replace`` passes (each removes one level of innermost
    pairs) or, once those pairs are few for the length (long deep chains), walked by its
    mountains, in time proportional to their number.
    """
    limit = MAX_NESTING_DEPTH
    if _TOO_DEEP_RUN in p:
        return limit + 1
    depth = 0
    start, end = 0, len(p)
    while start < end:
        room = limit - depth
        if room < 32:
            break
        opens = p.count(b"(", start, start + room)
        depth += 2 * opens - len(p[start:start + room])
        start += room
    else:
        return limit  # no chunk could cross it
    # Deep already: the rest decides, from ``depth`` up.
    p = p[start:]
    peeled = 0
    while True:
        peaks = p.count(b"()")
        if peaks == 0:
            return depth + peeled + p.count(b"(")  # only ")))(((" is left (unbalanced): bound it
        if peaks * 64 < len(p):
            return depth + peeled + _mountain_depth(p)
        p = p.replace(b"()", b"")
        peeled += 1


def _mountain_depth(p: bytes) -> int:
    """Max prefix depth of ``p``, one step per valley: split at ``)(``, every piece is
    ``(``*a + ``)``*b (the separators' parens are added back)."""
    pieces = p.split(b")(")
    last = len(pieces) - 1
    depth = best = 0
    for j, piece in enumerate(pieces):
        opens = piece.count(b"(")
        depth += opens + (j > 0)
        if depth > best:
            best = depth
        depth -= len(piece) - opens + (j < last)
    return best


def decode_params(raw: Any, typ: type) -> Any:
    """Decode a request's params (Raw or dict) into ``typ``; raises msgspec.ValidationError."""
    try:
        if isinstance(raw, msgspec.Raw):
            return msgspec.json.decode(raw, type=typ)
        return msgspec.convert(raw, typ)
    except msgspec.ValidationError:
        raise
    except (msgspec.DecodeError, RecursionError) as exc:
        # Params from decode() always parse; anything else must still fail the documented way.
        raise msgspec.ValidationError(f"params do not decode: {exc}") from None


def params_dict(raw: Any) -> dict[str, Any] | None:
    """The params as a plain dict (None when absent)."""
    params: dict[str, Any] | None = _decode_any(raw) if isinstance(raw, msgspec.Raw) else raw
    return params


# ------------------------------------------------------------------ encoding
def encode_result(id: RequestId, result: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "id": id, "result": result})


def encode_error(id: RequestId | None, error: errors.MCPError) -> bytes:
    if id is None:
        return _encoder.encode({"jsonrpc": "2.0", "error": error.to_error()})
    return _encoder.encode({"jsonrpc": "2.0", "id": id, "error": error.to_error()})


def encode_request(id: RequestId, method: str, params: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "id": id, "method": method, "params": params})


def encode_notification(method: str, params: Any = None) -> bytes:
    if params is None:
        return _encoder.encode({"jsonrpc": "2.0", "method": method})
    return _encoder.encode({"jsonrpc": "2.0", "method": method, "params": params})
