"""Which auth ``mcpkit serve --http`` applies: the server file's own ``Server(auth=...)`` or the
``--auth-*`` options, never both, and never silently none; and what the startup line says.

A file's auth and ``--auth-*`` options together are refused (which one would apply is not
something to guess). A wildcard bind (``--host 0.0.0.0`` or ``::``) with auth needs
``--public-url`` (or the auth's ``resource=``): no client reaches the server at
``http://0.0.0.0:PORT/mcp``, so no token could name that as its audience.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..transports import is_wildcard

#: (auth, public_url) to serve with, or the one line saying why not.
Plan = tuple[Any, "str | None"]


def _flags(ns: argparse.Namespace) -> list[str]:
    named = (("--auth-issuer", "auth_issuer"), ("--auth-introspect", "auth_introspect"),
             ("--auth-audience", "auth_audience"), ("--auth-scope", "auth_scope"),
             ("--auth-no-typ-check", "auth_no_typ_check"))
    return [flag for flag, attr in named if getattr(ns, attr, None)]


def _wildcard(host: str) -> str:
    return (f"--host {host or repr(host)} listens on every interface, so the URL clients use (the audience their "
            "access tokens must name) cannot be told from it: pass --public-url https://HOST/mcp")


def plan_auth(ns: argparse.Namespace, server: Any) -> Plan | str:
    """The auth to serve ``server`` with under the options ``ns``, and the public URL to give
    the app (when the auth names no ``resource=`` of its own); or why not, in one line."""
    flags = _flags(ns)
    public_url = getattr(ns, "public_url", None) or None
    own = getattr(server, "auth", None)
    if own is not None:
        if flags:
            return (f"{ns.spec} protects its server with Server(auth=...) and {flags[0]} was given too; "
                    "use one: drop the --auth-* options, or the auth= in the file")
        resource = getattr(own, "resource", None)
        if resource:
            if public_url and public_url.rstrip("/") != resource.rstrip("/"):
                return (f"{ns.spec}: the server's auth names resource={resource}; "
                        "--public-url must be the same URL (or left out)")
            return own, None
        if public_url is None and is_wildcard(ns.host):
            return _wildcard(ns.host)
        return own, public_url
    if not (getattr(ns, "auth_issuer", None) or getattr(ns, "auth_introspect", None)):
        if flags:
            return f"{flags[0]} needs --auth-issuer (or --auth-introspect): without it nothing is protected"
        return None, None
    if public_url is None and is_wildcard(ns.host):
        return _wildcard(ns.host)
    try:
        from ..server.auth import build_auth_from_cli

        return build_auth_from_cli(ns), None
    except ImportError:
        return "--auth-* needs the oauth extra: pip install 'mcpkit[oauth]'"
    except SystemExit as exc:  # a missing client credential, said in one line
        return str(exc.code).removeprefix("mcpkit: ")


def protection(auth: Any) -> str:
    """How the startup line names what guards the endpoint: ``OAuth: ISSUER`` or ``unprotected``."""
    if auth is None:
        return "unprotected"
    servers = getattr(auth, "authorization_servers", None)
    if servers:
        return "OAuth: " + ", ".join(map(str, servers))
    return f"protected by {type(auth).__name__}"
