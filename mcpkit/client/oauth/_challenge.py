"""``WWW-Authenticate`` parsing (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1).

Pure: no I/O, no asyncio. A header that does not parse yields ``malformed=True`` and no
parameters, never an exception, so a bad header can at worst cost the hints it carried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SPACE = re.compile(r"[ \t]*")


@dataclass
class Challenge:
    scheme: str
    params: dict[str, str] = field(default_factory=dict)
    token68: str | None = None


@dataclass
class WWWAuthenticate:
    """The parts of a 401/403 challenge the OAuth client acts on."""

    challenges: list[Challenge] = field(default_factory=list)
    malformed: bool = False

    def _param(self, name: str) -> str | None:
        # Prefer the OAuth schemes; fall back to any challenge carrying the parameter.
        ordered = sorted(self.challenges, key=lambda c: c.scheme.lower() not in ("bearer", "dpop"))
        for ch in ordered:
            if name in ch.params:
                return ch.params[name]
        return None

    @property
    def resource_metadata(self) -> str | None:
        return self._param("resource_metadata")

    @property
    def scope(self) -> str | None:
        return self._param("scope")

    @property
    def error(self) -> str | None:
        return self._param("error")

    @property
    def error_description(self) -> str | None:
        return self._param("error_description")

    @property
    def schemes(self) -> list[str]:
        return [c.scheme.lower() for c in self.challenges]


def _skip(s: str, i: int) -> int:
    m = _SPACE.match(s, i)
    return m.end() if m else i


def _quoted(s: str, i: int) -> tuple[str, int]:
    """A quoted-string starting at s[i] == '"'; returns (value, index after it)."""
    out: list[str] = []
    i += 1
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise ValueError("unterminated quoted-string")


def _parse(s: str) -> list[Challenge]:
    challenges: list[Challenge] = []
    i = _skip(s, 0)
    n = len(s)
    current: Challenge | None = None
    while i < n:
        if s[i] == ",":
            i = _skip(s, i + 1)
            continue
        m = _TOKEN.match(s, i)
        if not m:
            raise ValueError(f"unexpected character at {i}")
        word, j = m.group(0), m.end()
        k = _skip(s, j)
        if k < n and s[k] == "=" and current is not None and not s[k:].startswith("=="):
            # name=value (an auth-param of the current challenge)
            k = _skip(s, k + 1)
            if k < n and s[k] == '"':
                value, k = _quoted(s, k)
            else:
                vm = _TOKEN.match(s, k)
                if not vm:
                    raise ValueError(f"bad value for {word!r}")
                value, k = vm.group(0), vm.end()
            current.params.setdefault(word.lower(), value)
            i = _skip(s, k)
            if i < n and s[i] != ",":
                raise ValueError(f"expected ',' at {i}")
            continue
        # a new challenge: scheme [token68 | params]
        current = Challenge(word)
        challenges.append(current)
        i = k
        if i < n and s[i] != ",":
            tm = _TOKEN68.match(s, i)
            after = _skip(s, tm.end()) if tm else i
            if tm and (after >= n or s[after] == ",") and "=" not in s[tm.start():tm.end()].rstrip("="):
                # token68 only when no '=' follows a name (name=value is handled above)
                current.token68 = tm.group(0)
                i = after
    return challenges


def parse_www_authenticate(values: str | list[str] | None) -> WWWAuthenticate:
    """Parse one or more ``WWW-Authenticate`` header values."""
    if values is None:
        return WWWAuthenticate()
    if isinstance(values, str):
        values = [values]
    out = WWWAuthenticate()
    for value in values:
        try:
            out.challenges.extend(_parse(value))
        except ValueError:
            out.malformed = True
    return out


def header_values(headers: object, name: str) -> list[str]:
    """Every value of header ``name`` from an httpx-style or plain mapping (case-insensitive)."""
    if headers is None:
        return []
    get_list = getattr(headers, "get_list", None)
    if callable(get_list):
        return list(get_list(name))
    items = getattr(headers, "items", None)
    if not callable(items):
        return []
    lname = name.lower()
    return [str(v) for k, v in items() if str(k).lower() == lname]
