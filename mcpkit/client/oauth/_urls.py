"""Which URLs the OAuth client may contact: one pure decision (no I/O, stdlib only).

An MCP server names URLs the client then fetches or sends credentials to: the challenge's
``resource_metadata``, the protected resource metadata's ``authorization_servers``, the
endpoints in the authorization server's metadata. A hostile or compromised server could use
them to reach other hosts (internal services, the cloud metadata address, the user's own
machine) or to pull credentials over plain http. The rules (:func:`refusal`):

* **transport**: https; plain http only to a loopback host (``localhost``, 127.0.0.0/8,
  ``::1``), or anywhere with ``allow_http`` (lab setups only);
* **the MCP server's own origin** (scheme, host and port of the URL the user gave) is
  always acceptable (given the transport rule): the user chose that host;
* **resource_metadata** must be on the MCP server's origin unless
  ``allow_cross_origin_metadata``;
* **loopback** targets are acceptable only when the MCP server itself is on loopback (a
  local test stack), or with ``allow_private_network``;
* **non-public addresses** (private, link-local, unique-local, shared, reserved,
  multicast, unspecified...: anything that is not globally routable) are refused unless
  ``allow_private_network``; literal IPs here, resolved host names through
  :func:`address_refusal`.

Loopback names are conservative (RFC 8252 §8.3, RFC 6761 §6.3): only ``localhost`` itself
and real loopback addresses count. ``*.localhost`` and names merely starting with ``127.``
(``127.0.0.1.attacker.example``) are ordinary host names.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Roles of a URL, from most to least trusted.
SERVER = "server"  # the MCP server URL the user gave
CONFIGURED = "configured"  # another URL the user gave (an identity provider's token endpoint)
NAMED = "named"  # a URL a server named (authorization server, its endpoints)
RESOURCE_METADATA = "resource_metadata"  # the challenge's resource_metadata URL

_DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Refusal:
    """Why a URL is refused: ``error`` is the OAuth error code for :class:`OAuthError`
    (``insecure_transport`` or ``url_refused``), ``reason`` completes a sentence that starts
    with the URL."""

    error: str
    reason: str


@dataclass(frozen=True)
class UrlPolicy:
    """What the user allows (the :class:`~mcpkit.auth.Network` options of the same names)."""

    server_url: str
    allow_http: bool = False
    allow_private_network: bool = False
    allow_cross_origin_metadata: bool = False


def ip_literal(host: str) -> IPAddress | None:
    """``host`` as an IP address (IPv4-mapped IPv6 unwrapped), or None for a name."""
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback_host(host: str) -> bool:
    """``localhost`` (exactly, case-insensitive, one trailing dot allowed), or a loopback
    address (127.0.0.0/8, ``::1``, and their IPv4-mapped form)."""
    name = host.lower()
    if name in ("localhost", "localhost."):
        return True
    ip = ip_literal(host)
    return ip is not None and ip.is_loopback


def is_public_address(ip: IPAddress) -> bool:
    """Globally routable unicast (not private, link-local, unique-local, shared, reserved...)."""
    return ip.is_global and not ip.is_multicast


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        p = urlsplit(url)
        port = p.port
    except ValueError:
        return None
    scheme = p.scheme.lower()
    return scheme, (p.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def same_origin(a: str, b: str) -> bool:
    oa, ob = _origin(a), _origin(b)
    return oa is not None and oa == ob and bool(oa[1])


def transport_refusal(url: str, allow_http: bool) -> str | None:
    """Why ``url`` may not carry credentials (not https, not loopback http), or None."""
    try:
        p = urlsplit(url)
        p.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return "is not a valid URL"
    scheme = p.scheme.lower()
    if scheme not in ("http", "https") or not p.hostname:
        return "is not an http(s) URL"
    if scheme == "https" or allow_http or is_loopback_host(p.hostname):
        return None
    return "is not served over HTTPS (plain http is only for loopback hosts; allow_http=True overrides this for lab setups)"


def refusal(url: str, role: str, policy: UrlPolicy) -> Refusal | None:
    """Why the OAuth client must not contact ``url`` in ``role`` under ``policy``; None when
    it may (host names are judged by name here; see :func:`needs_resolving`)."""
    bad = transport_refusal(url, policy.allow_http)
    if bad is not None:
        return Refusal("insecure_transport", bad)
    if role in (SERVER, CONFIGURED) or same_origin(url, policy.server_url):
        return None
    if role == RESOURCE_METADATA and not policy.allow_cross_origin_metadata:
        return Refusal("url_refused", "is not on the MCP server's origin (allow_cross_origin_metadata=True "
                                      "allows resource metadata elsewhere)")
    host = urlsplit(url).hostname or ""
    if is_loopback_host(host):
        if policy.allow_private_network or is_loopback_host(urlsplit(policy.server_url).hostname or ""):
            return None
        return Refusal("url_refused", "is on loopback but the MCP server is not (allow_private_network=True "
                                      "allows this)")
    ip = ip_literal(host)
    return address_refusal([ip], policy) if ip is not None else None


def needs_resolving(url: str, role: str, policy: UrlPolicy) -> str | None:
    """The host name whose addresses must also pass :func:`address_refusal` before ``url``
    is contacted (a server-named URL off the MCP server's origin, by name), else None."""
    if role in (SERVER, CONFIGURED) or policy.allow_private_network or same_origin(url, policy.server_url):
        return None
    host = urlsplit(url).hostname or ""
    if not host or is_loopback_host(host) or ip_literal(host) is not None:
        return None
    return host


def address_refusal(addresses: Iterable[IPAddress], policy: UrlPolicy) -> Refusal | None:
    """The same decision for the addresses a host name resolved to (every one must pass)."""
    server_host = urlsplit(policy.server_url).hostname or ""
    for ip in addresses:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if policy.allow_private_network or is_public_address(ip):
            continue
        if ip.is_loopback:
            if is_loopback_host(server_host):
                continue
            return Refusal("url_refused", f"resolves to the loopback address {ip} but the MCP server is not "
                                          "on loopback (allow_private_network=True allows this)")
        return Refusal("url_refused", f"is (or resolves to) the non-public address {ip} "
                                      "(allow_private_network=True allows this)")
    return None
