"""Reading a compact JWS (an access token or a DPoP proof) before anything trusts it.

Everything here runs on attacker-chosen bytes before any signature is checked, so sizes
and JSON nesting are capped before a parser sees them, the base64url alphabet is strict,
and every failure is a plain :class:`MalformedJWS` (the caller turns it into a 401).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from ...errors import MalformedJWS as MalformedJWS

#: The longest access token accepted (characters of the compact form). Real JWT access
#: tokens are well under 8 KiB, even with many groups or roles.
MAX_TOKEN_LENGTH = 16384
#: The longest DPoP proof accepted: a header with one public key, a few short claims.
MAX_PROOF_LENGTH = 8192
#: The deepest nesting of arrays and objects in a token's header or claims (real tokens
#: nest a few levels: ``cnf``, ``realm_access.roles``...).
MAX_JSON_DEPTH = 32

_B64URL = re.compile(r"[A-Za-z0-9_-]*\Z")
_ONLY_OPENERS = bytes(c for c in range(256) if c not in b"[{")


def too_deep(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``raw`` nests arrays/objects (outside strings) deeper than ``limit``.

    Cheap for real tokens: when the text has no more openers than the limit, it cannot
    nest deeper, and only otherwise (at most a few KiB, sizes are capped first) it is walked.
    """
    if len(raw.translate(None, _ONLY_OPENERS)) <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for c in raw:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:  # quote
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif c in (0x5D, 0x7D):
            depth -= 1
    return False


def b64url_decode(part: str) -> bytes:
    """Strict base64url without padding (RFC 7515 §2): other characters are refused, not skipped."""
    if not _B64URL.match(part) or len(part) % 4 == 1:
        raise MalformedJWS("not base64url")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise MalformedJWS("not base64url") from None


def json_segment(part: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """One base64url JSON segment, decoded with its nesting capped."""
    raw = b64url_decode(part)
    if too_deep(raw, max_depth):
        raise MalformedJWS("nested too deep")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise MalformedJWS("not JSON") from None


def parse_compact(token: str, *, max_length: int = MAX_TOKEN_LENGTH,
                  max_depth: int = MAX_JSON_DEPTH) -> tuple[dict[str, Any], Any]:
    """The (unverified) header and payload of a compact JWS, or :class:`MalformedJWS`.

    The header must be a JSON object whose ``alg``, ``typ`` and ``kid`` (when present) are
    strings and whose ``jwk`` (when present) is an object; the payload is checked to be JSON
    within the nesting limit too (the JOSE library parses it again once the signature holds).
    """
    if not isinstance(token, str) or len(token) > max_length:
        raise MalformedJWS("too long")
    parts = token.split(".")
    if len(parts) != 3 or not parts[0]:
        raise MalformedJWS("not a compact JWS")
    header = json_segment(parts[0], max_depth=max_depth)
    if not isinstance(header, dict):
        raise MalformedJWS("the header is not an object")
    for name in ("alg", "typ", "kid", "cty"):
        if name in header and not isinstance(header[name], str):
            raise MalformedJWS(f"the header's {name} is not a string")
    if not isinstance(header.get("alg"), str):
        raise MalformedJWS("the header names no algorithm")
    if "jwk" in header and not isinstance(header["jwk"], dict):
        raise MalformedJWS("the header's jwk is not an object")
    if "crit" in header:
        # No extension is understood here, so a critical one cannot be honoured (RFC 7515 §4.1.11).
        raise MalformedJWS("the header names critical extensions")
    payload = json_segment(parts[1], max_depth=max_depth)
    b64url_decode(parts[2])
    return header, payload
