"""JSON-RPC framing: bytes in, one typed message (or a precise error) out; messages in, bytes out.

Pure functions over bytes, shared by every transport.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Union

import msgspec
from msgspec import UNSET, UnsetType

from . import errors

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
    """An encoded response, and its error code (None for a result) so HTTP can pick a status."""

    body: bytes
    error_code: int | None


class InvalidMessage(Exception):
    """Raised by :func:`decode`: ``error`` is what to answer, ``id`` the request id if it was readable."""

    def __init__(self, error: errors.MCPError, id: RequestId | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.id = id


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
    ``parse_params`` is set. Raises :class:`InvalidMessage` with -32700 or -32600.
    """
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
    except msgspec.DecodeError as exc:
        raise InvalidMessage(errors.parse_error(str(exc))) from None

    rid = env.id
    id_ok = rid is UNSET or (type(rid) is int or type(rid) is str)
    readable_id = rid if (type(rid) is int or type(rid) is str) else None
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
        elif memoryview(params)[:1] != b"{":
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
        return Response(rid, _decode_any(env.result), None)

    raise InvalidMessage(errors.invalid_request('no "method", "result" or "error"'), readable_id)


def _shape_of(data: bytes | str, exc: Exception) -> str:
    head = data.lstrip()[:1]
    if head in (b"[", "["):
        return "batches (JSON arrays) are not supported; send one JSON-RPC object per message"
    return "a JSON-RPC message must be a JSON object"


def decode_params(raw: Any, typ: type) -> Any:
    """Decode a request's params (Raw or dict) into ``typ``; raises msgspec.ValidationError."""
    if isinstance(raw, msgspec.Raw):
        return msgspec.json.decode(raw, type=typ)
    return msgspec.convert(raw, typ)


def params_dict(raw: Any) -> dict | None:
    """The params as a plain dict (None when absent)."""
    if isinstance(raw, msgspec.Raw):
        return _decode_any(raw)
    return raw


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
