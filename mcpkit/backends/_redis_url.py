"""Redis connections from a URL: ``redis://``, ``rediss://``, ``unix://``, or Redis Sentinel.

A Sentinel URL names the sentinels and the monitored service; the connection follows the
primary they elect, so a failover moves every client to the promoted replica::

    redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/SERVICE[/DB][?sentinel_password=...]

(``rediss+sentinel://`` for TLS to the data nodes). The port defaults to 26379; the
password, if any, is the data nodes' (``sentinel_password`` is the sentinels' own). redis-py's
Sentinel support does the discovery; each new connection asks the sentinels where the
primary is, so a reconnect after a failover lands on the new one.
"""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote

SCHEMES = ("redis+sentinel", "rediss+sentinel")


class SentinelUrl(NamedTuple):
    sentinels: list[tuple[str, int]]
    service: str
    db: int
    username: str | None
    password: str | None
    sentinel_password: str | None
    ssl: bool


def is_sentinel(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES


def parse_sentinel(url: str) -> SentinelUrl:
    """The parts of a Sentinel URL (ValueError, saying what is wrong, for a malformed one)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ValueError(f"not a Redis Sentinel URL (redis+sentinel://host:port/service): {url!r}")
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    username = password = None
    if "@" in netloc:
        auth, _, netloc = netloc.rpartition("@")
        user, colon, pw = auth.partition(":")
        username = unquote(user) or None
        password = unquote(pw) if colon else None
        if not colon:  # redis://secret@host: the password alone
            username, password = None, unquote(user) or None
    sentinels: list[tuple[str, int]] = []
    for part in netloc.split(","):
        part = part.strip()
        if part.startswith("["):  # [v6]:port
            host, _, tail = part[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else "26379"
        elif ":" in part:
            host, _, port = part.rpartition(":")
        else:
            host, port = part, "26379"
        if not host:
            raise ValueError(f"Redis Sentinel URL without a sentinel host: {url!r}")
        try:
            number = int(port)
        except ValueError:
            raise ValueError(f"Redis Sentinel URL with a bad port {port!r}: {url!r}") from None
        if not 0 < number < 65536:
            raise ValueError(f"Redis Sentinel URL with a port out of range ({number}): {url!r}")
        sentinels.append((host, number))
    segments = [unquote(s) for s in path.split("/") if s]
    if not segments:
        raise ValueError(f"Redis Sentinel URL without the service name (…/SERVICE): {url!r}")
    if len(segments) > 2:
        raise ValueError(f"Redis Sentinel URL path must be /SERVICE or /SERVICE/DB: {url!r}")
    db = 0
    if len(segments) == 2:
        if not segments[1].isdigit():
            raise ValueError(f"Redis Sentinel URL with a bad database number {segments[1]!r}: {url!r}")
        db = int(segments[1])
    params = parse_qs(query)
    sentinel_password = params.get("sentinel_password", [None])[0]
    return SentinelUrl(sentinels, segments[0], db, username, password, sentinel_password,
                       scheme.lower().startswith("rediss"))


def _kwargs(parts: SentinelUrl, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    node = dict(options, db=parts.db)
    if parts.username:
        node["username"] = parts.username
    if parts.password:
        node["password"] = parts.password
    if parts.ssl:
        node["ssl"] = True
    sentinel: dict[str, Any] = {k: v for k, v in options.items() if k in ("socket_connect_timeout", "socket_timeout")}
    if parts.sentinel_password:
        sentinel["password"] = parts.sentinel_password
    return node, sentinel


def async_client(url: str, **options: Any) -> Any:
    """A ``redis.asyncio.Redis`` for ``url`` (following the primary for a Sentinel URL)."""
    return _client("redis.asyncio", url, options)


def sync_client(url: str, **options: Any) -> Any:
    """A blocking ``redis.Redis`` for ``url`` (following the primary for a Sentinel URL)."""
    return _client("redis", url, options)


def _client(package: str, url: str, options: dict[str, Any]) -> Any:
    """``package``'s (``redis`` or ``redis.asyncio``) client for ``url``."""
    if not is_sentinel(url):
        return _module(package).Redis.from_url(url, **options)
    parts = parse_sentinel(url)
    node, sentinel = _kwargs(parts, options)
    found: Any = _module(f"{package}.sentinel").Sentinel(parts.sentinels, sentinel_kwargs=sentinel, **node)
    return found.master_for(parts.service)


def _module(name: str) -> Any:
    import importlib

    return importlib.import_module(name)
