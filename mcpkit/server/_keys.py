"""The keys of the ``requestState`` key ring: what is accepted, and what is derived from each.

A key must be at least 32 random bytes, written as base64url or base64 (padding optional)
or as hex (at least 64 hex digits). A passphrase is refused, not stretched: the sealed
state can be taken home by any client and every guess tested against its AES-GCM tag
offline, so only a key nobody can guess is safe, whatever the key derivation costs.
Strings that are obviously not random (a word, a repeated pattern, one character class)
are refused too; mcpkit cannot tell a hand-made string that happens to look random from
a random one, so make keys with :data:`MAKE_KEY`.

From each key, HKDF-SHA256 (RFC 5869) derives two independent values under distinct
labels: the AES-256-GCM key, and the 8-byte key id a token carries to say which key sealed
it. The id is a PRF output of the key, not a hash of it: it tells nothing about the AES key
and, as the key has at least 256 bits of entropy, it offers no way to test guesses (nor
does the tag), so it can travel in every token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re

from ..errors import WeakKeyError as WeakKeyError

#: How to make a good key (printed in the refusal).
MAKE_KEY = 'python -c "import secrets,base64;print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"'
#: The fewest random bytes a key must hold.
MIN_KEY_BYTES = 32
#: Bytes of key id in each token.
KEY_ID_BYTES = 8

_HEX = re.compile(r"[0-9a-fA-F]+")
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+={0,2}")
_SALT = b"mcpkit/requestState/v2"
_INFO_AEAD = b"mcpkit/requestState/v2 aes-256-gcm key"
_INFO_ID = b"mcpkit/requestState/v2 key id"


def _refuse(source: str, index: int, why: str) -> WeakKeyError:
    return WeakKeyError(f"{source}: key {index} {why}; a key must be at least {MIN_KEY_BYTES} random bytes as "
                        f"base64url, base64 or hex; make one with: {MAKE_KEY}")


def _decode_text(text: str) -> bytes | None:
    """The bytes a hex or base64(url) key stands for, or None when it is neither."""
    if len(text) >= 2 * MIN_KEY_BYTES and len(text) % 2 == 0 and _HEX.fullmatch(text):
        return bytes.fromhex(text)
    if _B64.fullmatch(text) is None:
        return None
    # Letters of both cases: a random base64 string of >= 43 characters lacks one with a
    # probability below 1e-9; a lower-case word or passphrase never has both.
    if not (re.search(r"[a-z]", text) and re.search(r"[A-Z]", text)):
        return None
    body = text.rstrip("=").replace("+", "-").replace("/", "_")
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def key_material(key: str | bytes, *, source: str = "state_keys", index: int = 1) -> bytes:
    """The random bytes of one configured key, or :class:`WeakKeyError`.

    ``str``: hex or base64(url) text. ``bytes``: the raw key (or, when it is all printable
    ASCII, its text form). ``source`` names where the key came from in the refusal.
    """
    if isinstance(key, bytes):
        if key.isascii() and all(32 < c < 127 for c in key):
            key = key.decode("ascii")
        else:
            raw = key
            if len(raw) < MIN_KEY_BYTES:
                raise _refuse(source, index, f"has {len(raw)} bytes")
            if len(set(raw)) < 16:
                raise _refuse(source, index, "is not random (too few distinct bytes)")
            return raw
    if not isinstance(key, str):
        raise _refuse(source, index, f"is a {type(key).__name__}, not a string")
    text = key.strip()
    raw_or_none = _decode_text(text)
    if raw_or_none is None:
        raise _refuse(source, index, "is not random base64url, base64 or hex text (a passphrase?)")
    if len(raw_or_none) < MIN_KEY_BYTES:
        raise _refuse(source, index, f"decodes to {len(raw_or_none)} bytes")
    if len(set(raw_or_none)) < 16:
        raise _refuse(source, index, "is not random (a repeated pattern)")
    return raw_or_none


def derive(material: bytes) -> tuple[bytes, bytes]:
    """(key id, AES-256 key) of one key's random bytes (HKDF-SHA256, one block each)."""
    prk = hmac.new(_SALT, material, hashlib.sha256).digest()
    aes = hmac.new(prk, _INFO_AEAD + b"\x01", hashlib.sha256).digest()
    key_id = hmac.new(prk, _INFO_ID + b"\x01", hashlib.sha256).digest()[:KEY_ID_BYTES]
    return key_id, aes


def parse_state_keys(value: str, *, source: str = "MCPKIT_STATE_KEYS") -> list[bytes]:
    """The key material of a comma-separated key list (``MCPKIT_STATE_KEYS``); refuses a weak key."""
    keys = [k.strip() for k in value.split(",") if k.strip()]
    return [key_material(k, source=source, index=i) for i, k in enumerate(keys, 1)]
