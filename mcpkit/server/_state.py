"""Sealed ``requestState``: AES-256-GCM under a configurable key ring.

The state is attacker-controlled input on its way back, so it is authenticated and
encrypted, and bound to the request that minted it (method, name, a digest of the
arguments), an expiry and, when known, the principal. Every worker sharing the key ring
accepts the others' state; the first key seals, all keys open (rotation).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

import msgspec

from .._lazy import LazyLogger
from ..errors import StateError as StateError
from ..protocol import lazy_re

# hashlib and base64 are imported where used: a server that never asks for input never pays for them.

log = LazyLogger("mcpkit.server")  # logging loads with the first record

#: v2: keys are random (no passphrases), AES key and key id derived by HKDF (see ._keys);
#: the version byte and key id are authenticated with the payload.
_VERSION = b"\x02"
_AAD = b"mcpkit/requestState/v2"
_HEAD = 1 + 8  # version, key id
#: The one message every verification failure gets; the reason goes to the server log only.
INVALID_STATE_MESSAGE = "Invalid or expired requestState"
#: What seal() writes: the base64url alphabet (RFC 4648 §5), no padding.
_B64URL = lazy_re(globals(), "_B64URL", r"[A-Za-z0-9_-]*")


class _Payload(msgspec.Struct, array_like=True, omit_defaults=True):
    method: str
    name: str
    digest: str
    expires: float
    principal: str | None = None
    asked: list[str] = []
    answers: dict[str, Any] = {}
    state: dict[str, Any] = {}


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Payload).decode


class KeyRing:
    """Keys for sealing ``requestState``. ``keys[0]`` seals; every key opens (rotation).

    Each key is at least 32 random bytes as base64url, base64 or hex text (or raw bytes);
    anything else, a passphrase above all, raises :class:`~._keys.WeakKeyError` (a
    ``ValueError`` whose text is one line saying how to make a key). Without keys,
    ``MCPKIT_STATE_KEYS`` (comma-separated) is read; failing that a random per-process key
    is made, which only suits a single process.
    """

    def __init__(self, keys: Iterable[str | bytes] | None = None) -> None:
        env = os.environ.get("MCPKIT_STATE_KEYS") if keys is None else None
        if keys is None and not (env and env.strip(" ,")):
            raw: list[bytes] = []  # (nothing to check: the key code is not even imported yet)
        else:
            from ._keys import key_material, parse_state_keys

            raw = parse_state_keys(env) if env is not None else [key_material(k, index=i) for i, k in
                                                                 enumerate(keys or (), 1)]
        self.ephemeral = not raw
        self._raw = raw or [os.urandom(32)]
        self._derived: tuple[dict[bytes, bytes], bytes] | None = None
        self._aead: dict[bytes, Any] = {}

    @property
    def _keys(self) -> dict[bytes, bytes]:
        return (self._derived or self._derive())[0]

    @property
    def _sealing_id(self) -> bytes:
        return (self._derived or self._derive())[1]

    def _derive(self) -> tuple[dict[bytes, bytes], bytes]:
        """Key ids and AES keys, on first use (HKDF pulls in hashlib and hmac: a server whose
        first answers need no requestState does not pay for them at start-up)."""
        from ._keys import derive

        keys: dict[bytes, bytes] = {}
        for material in self._raw:
            key_id, aes_key = derive(material)
            keys.setdefault(key_id, aes_key)
        self._derived = keys, derive(self._raw[0])[0]
        return self._derived

    def _cipher(self, key_id: bytes) -> Any:
        c = self._aead.get(key_id)
        if c is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded only when MRTR is used

            c = self._aead[key_id] = AESGCM(self._keys[key_id])
        return c

    def seal(self, payload: bytes) -> str:
        """``payload`` encrypted and authenticated (AES-256-GCM) with ``keys[0]``, as unpadded base64url."""
        import base64

        nonce = os.urandom(12)
        head = _VERSION + self._sealing_id
        ct = self._cipher(self._sealing_id).encrypt(nonce, payload, _AAD + head)
        return base64.urlsafe_b64encode(head + nonce + ct).decode().rstrip("=")

    def open(self, token: str) -> bytes:
        """The payload of a token :meth:`seal` made with any key of the ring; StateError when the
        token is not canonical base64url, names no key of the ring, or fails authentication.
        """
        import base64

        # Canonical unpadded base64url only, exactly as seal() writes it. The lenient decoder
        # would also take padding, stray characters, the +/ alphabet and non-zero trailing
        # bits, so that many strings would open as one token; each of those is refused.
        if type(token) is not str or _B64URL.fullmatch(token) is None or len(token) % 4 == 1:
            raise StateError("not canonical base64url")
        blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        if base64.urlsafe_b64encode(blob).rstrip(b"=") != token.encode("ascii"):
            raise StateError("not canonical base64url (non-zero trailing bits)")
        if len(blob) < _HEAD + 12 + 16 or blob[:1] != _VERSION:
            raise StateError("malformed or unknown version")
        key_id = blob[1:_HEAD]
        if key_id not in self._keys:
            raise StateError("sealed with a key this key ring does not hold")
        from cryptography.exceptions import InvalidTag

        try:
            plain: bytes = self._cipher(key_id).decrypt(blob[_HEAD:_HEAD + 12], blob[_HEAD + 12:], _AAD + blob[:_HEAD])
            return plain
        except InvalidTag:
            raise StateError("authentication failed (tampered)") from None


def digest_arguments(arguments: Any) -> str:
    """A stable digest of a request's salient parameters."""
    import hashlib

    canon = msgspec.json.encode(arguments, order="sorted") if arguments is not None else b"null"
    return hashlib.sha256(canon).hexdigest()[:32]


class StateSealer:
    def __init__(self, ring: KeyRing, ttl_s: float) -> None:
        self.ring = ring
        self.ttl_s = ttl_s

    def seal(self, *, method: str, name: str, digest: str, principal: str | None, asked: list[str],
             answers: dict[str, Any], state: dict[str, Any]) -> str:
        p = _Payload(method, name, digest, time.time() + self.ttl_s, principal, asked, answers, state)
        return self.ring.seal(_encode(p))

    def open(self, token: str, *, method: str, name: str, digest: str, principal: str | None) -> _Payload:
        try:
            p = _decode(self.ring.open(token))
        except msgspec.DecodeError:
            raise StateError("payload does not decode") from None
        if p.expires < time.time():
            raise StateError("expired")
        if p.method != method or p.name != name:
            raise StateError(f"minted for {p.method} {p.name!r}, presented on {method} {name!r}")
        if p.digest != digest:
            raise StateError("minted for different arguments")
        if p.principal != principal:
            raise StateError("minted for another principal")
        return p
