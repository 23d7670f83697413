"""Where to look for metadata (RFC 9728, RFC 8414, OpenID Connect Discovery), and the checks
on what comes back. Pure: URL arithmetic only, the fetching is in ``_metadata``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _origin(url: str) -> str:
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, "", "", ""))


def _path(url: str) -> str:
    path = urlsplit(url).path
    return "" if path in ("", "/") else path.rstrip("/")


def prm_urls(server_url: str, from_header: str | None) -> list[str]:
    """Protected resource metadata locations, in the spec's order: the challenge's
    ``resource_metadata``, then the path-inserted well-known URI, then the root one."""
    urls: list[str] = []
    if from_header:
        urls.append(from_header)
    origin, path = _origin(server_url), _path(server_url)
    if path:
        urls.append(f"{origin}{PRM_WELL_KNOWN}{path}")
    urls.append(f"{origin}{PRM_WELL_KNOWN}")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Authorization server metadata locations for ``issuer``, in the spec's order.

    With a path: RFC 8414 path-inserted, OpenID path-inserted, OpenID path-appended.
    Without: RFC 8414, then OpenID.
    """
    origin, path = _origin(issuer), _path(issuer)
    if path:
        return [f"{origin}/.well-known/oauth-authorization-server{path}",
                f"{origin}/.well-known/openid-configuration{path}",
                f"{origin}{path}/.well-known/openid-configuration"]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def legacy_endpoints(server_url: str) -> dict[str, Any]:
    """The 2025-03-26 fallback when no metadata exists: endpoints at the server's origin."""
    origin = _origin(server_url)
    return {"issuer": origin, "authorization_endpoint": f"{origin}/authorize", "token_endpoint": f"{origin}/token",
            "registration_endpoint": f"{origin}/register", "code_challenge_methods_supported": ["S256"]}


def resource_covers(resource: str, server_url: str) -> bool:
    """Does protected resource metadata ``resource`` name this server (RFC 9728 §3.3, RFC 8707)?

    Scheme, host and port must be equal; the resource's path must be the server URL's path or
    a path-segment prefix of it (a server may publish its origin as the resource).
    """
    try:
        r, s = urlsplit(resource), urlsplit(server_url)
        r_port, s_port = r.port, s.port
    except ValueError:
        return False
    if r.scheme.lower() != s.scheme.lower() or (r.hostname or "").lower() != (s.hostname or "").lower():
        return False
    default = {"http": 80, "https": 443}.get(s.scheme.lower())
    if (r_port or default) != (s_port or default):
        return False
    if r.fragment:
        return False
    rp, sp = r.path.rstrip("/"), s.path.rstrip("/")
    return sp == rp or sp.startswith(rp + "/")


def canonical_resource(server_url: str) -> str:
    """The server's canonical URI (RFC 8707): no fragment, lowercase scheme and host."""
    p = urlsplit(server_url)
    return urlunsplit((p.scheme.lower(), p.netloc.lower(), p.path, p.query, ""))


def htu(url: str) -> str:
    """A URL as a DPoP ``htu`` claim: without query and fragment (RFC 9449 §4.2)."""
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, p.path, "", ""))
