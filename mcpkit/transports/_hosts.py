"""DNS-rebinding protection for the HTTP endpoint: which ``Host`` and ``Origin`` values it accepts."""

from __future__ import annotations

import re
from collections.abc import Iterable

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

_HOSTPORT = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?")


def _split_host(value: str) -> tuple[str, str | None] | None:
    """``host[:port]`` -> (host, port), or None when it is not a plain authority (userinfo, paths...)."""
    m = _HOSTPORT.fullmatch(value.strip().lower())
    return (m.group(1), m.group(2)) if m else None


class HostPolicy:
    """DNS-rebinding protection: which ``Host`` and ``Origin`` values are accepted.

    Entries are host names (any port) or ``host:port``; ``"*"`` accepts anything. An absent
    ``Origin`` (non-browser clients) is accepted.
    """

    def __init__(self, allowed_hosts: Iterable[str] | None, allowed_origins: Iterable[str] | None) -> None:
        self._seen: dict[str, bool] = {}
        hosts = list(allowed_hosts) if allowed_hosts is not None else list(LOOPBACK_HOSTS)
        self.any_host = "*" in hosts
        self.hosts = {h.lower() for h in hosts}
        if allowed_origins is None:
            self.any_origin = False
            self.origins: set[str] = set()
            self.origin_hosts = {h for h in self.hosts if h != "*"}
        else:
            origins = list(allowed_origins)
            self.any_origin = "*" in origins
            self.origins = {o.lower().rstrip("/") for o in origins}
            self.origin_hosts = set()

    def _authority_ok(self, authority: str, allowed: set[str]) -> bool:
        hp = _split_host(authority)
        if hp is None:
            return False
        host, port = hp
        return host in allowed or (port is not None and f"{host}:{port}" in allowed)

    def host_ok(self, host: str | None) -> bool:
        if self.any_host:
            return True
        if not host:
            return False
        # Clients send the same Host on every request: remember verdicts (bounded).
        ok = self._seen.get(host)
        if ok is None:
            ok = self._authority_ok(host, self.hosts)
            self._remember(host, ok)
        return ok

    def _remember(self, key: str, ok: bool) -> None:
        if len(self._seen) >= 512:
            self._seen.clear()
        self._seen[key] = ok

    def origin_ok(self, origin: str | None) -> bool:
        if origin is None or self.any_origin:
            return True
        ok = self._seen.get("\x00" + origin)
        if ok is None:
            ok = self._origin_ok(origin)
            self._remember("\x00" + origin, ok)
        return ok

    def _origin_ok(self, origin: str) -> bool:
        origin = origin.strip().lower()
        if origin.rstrip("/") in self.origins:
            return True
        # An Origin is scheme://host[:port] and nothing else (no userinfo, path, query).
        scheme, sep, authority = origin.partition("://")
        if not sep or scheme not in ("http", "https") or authority.endswith("/"):
            return False
        return self._authority_ok(authority, self.origin_hosts)
