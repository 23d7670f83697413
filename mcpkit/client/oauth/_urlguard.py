"""The OAuth client's gate before it contacts a URL: the pure rules of :mod:`._urls`, plus
(for server-named host names) a look at the addresses the name resolves to.

The look-up is a cheap check, not a guarantee: the HTTP client resolves the name again when
it connects (a DNS answer may change in between), and behind a proxy the proxy resolves it.
A name that does not resolve here is let through (the connection then fails on its own, or
a proxy reaches it); only addresses actually seen are judged.
"""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

from . import _urls as U
from ._errors import OAuthError

#: Seconds the address look-up may take before the name is let through unjudged.
RESOLVE_TIMEOUT = 5.0


def _raise(url: str, what: str, refused: U.Refusal) -> None:
    raise OAuthError(f"{what} {url} {refused.reason}: refusing to contact it", error=refused.error)


def check_url_now(url: str, role: str, policy: U.UrlPolicy, what: str) -> None:
    """The pure rules only (for URLs the user gave, and for synchronous callers)."""
    refused = U.refusal(url, role, policy)
    if refused is not None:
        _raise(url, what, refused)


async def check_url(url: str, role: str, policy: U.UrlPolicy, what: str) -> None:
    """Raise :class:`OAuthError` (``insecure_transport`` or ``url_refused``) unless the OAuth
    client may contact ``url``; ``what`` names it in the message."""
    check_url_now(url, role, policy, what)
    host = U.needs_resolving(url, role, policy)
    if host is None:
        return
    try:
        port = urlsplit(url).port or (443 if url.lower().startswith("https:") else 80)
        infos = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT)
    except (OSError, TimeoutError, UnicodeError, ValueError):
        return
    addresses = [ip for ip in (U.ip_literal(str(info[4][0])) for info in infos) if ip is not None]
    refused = U.address_refusal(addresses, policy)
    if refused is not None:
        _raise(url, what, refused)
