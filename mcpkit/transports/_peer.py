"""The caller's address behind reverse proxies: ``X-Forwarded-For`` only from proxies you trust.

By default the peer of a request is the socket's peer (ASGI ``scope["client"]``) and
forwarded headers are ignored: anyone can send ``X-Forwarded-For``. With
``trusted_proxies`` (addresses or networks, e.g. ``10.0.0.0/8``), a request whose socket
peer is one of them takes its peer from ``X-Forwarded-For`` instead: the right-most
address that is not itself a trusted proxy (each proxy appends the address it saw). A
malformed entry stops the walk there: the last trusted hop is the peer (fail closed).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

__all__ = ["TrustedProxies"]

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    """Addresses and networks whose ``X-Forwarded-For`` is believed."""

    __slots__ = ("networks",)

    def __init__(self, entries: Iterable[str]) -> None:
        networks: list[_Network] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(f"trusted proxy {entry!r} is not an IP address or network (e.g. 10.0.0.5, "
                                 "10.0.0.0/8, fd00::/8)") from None
        if not networks:
            raise ValueError("trusted_proxies needs at least one address or network (or None: trust none)")
        self.networks = tuple(networks)

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            return False
        return any(ip in net for net in self.networks)

    def peer(self, socket_peer: str | None, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """The caller's address for a request from ``socket_peer`` with the raw ASGI ``headers``."""
        if socket_peer is None or not self.trusts(socket_peer):
            return socket_peer
        hops: list[str] = []
        for name, value in headers:
            if name == b"x-forwarded-for":
                hops.extend(value.decode("latin-1").split(","))
        peer = socket_peer
        for hop in reversed(hops):
            hop = hop.strip()
            try:
                ipaddress.ip_address(hop)
            except ValueError:
                return peer  # garbage (or a name): believe nothing further left
            peer = hop
            if not self.trusts(hop):
                return hop
        return peer


def socket_peer(scope: Any) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None
