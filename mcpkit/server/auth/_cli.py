"""``mcpkit serve --http --auth-issuer ...``: a :class:`ResourceServerAuth` from command-line options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._gate import ResourceServerAuth


def build_auth_from_cli(args: Any = None, /, **kwargs: Any) -> ResourceServerAuth | None:
    """The auth of ``serve --http`` from an argparse namespace (or keyword arguments).

    Reads ``auth_issuer``, ``auth_audience``, ``auth_scope`` (a list), ``public_url``,
    ``auth_introspect``, ``auth_no_typ_check`` (``--auth-no-typ-check``: accept JWTs without
    ``typ: at+jwt``), and, for the public URL default, ``host``, ``port`` and ``path``.
    Returns None when neither ``auth_issuer`` nor ``auth_introspect`` is set.

    The canonical resource URL is ``--public-url`` when given (behind a proxy), else the
    bound URL with the mount path (``http://HOST:PORT/PATH``). ``--auth-audience`` overrides
    the accepted ``aud`` (default: that URL). ``--auth-introspect URL`` checks tokens at an
    RFC 7662 endpoint with client credentials from ``MCPKIT_AUTH_CLIENT_ID`` and
    ``MCPKIT_AUTH_CLIENT_SECRET`` (so no secret sits in the process list).
    """
    opts: dict[str, Any] = dict(vars(args)) if args is not None else {}
    opts.update(kwargs)
    issuer = opts.get("auth_issuer")
    introspect = opts.get("auth_introspect")
    if not issuer and not introspect:
        return None
    scopes = opts.get("auth_scope") or []
    if isinstance(scopes, str):
        scopes = scopes.split()
    resource = opts.get("public_url")
    if not resource:
        host = opts.get("host") or "127.0.0.1"
        port = opts.get("port") or 8000
        path = opts.get("path") or "/mcp"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        resource = f"http://{host}:{port}{'/' + path.lstrip('/') if path != '/' else ''}"
    audience = opts.get("auth_audience") or None
    env: Mapping[str, str] = opts.get("environ") or os.environ
    verifier: Any
    if introspect:
        client_id = env.get("MCPKIT_AUTH_CLIENT_ID")
        secret = env.get("MCPKIT_AUTH_CLIENT_SECRET")
        if not client_id or not secret:
            raise SystemExit("mcpkit: --auth-introspect needs MCPKIT_AUTH_CLIENT_ID and MCPKIT_AUTH_CLIENT_SECRET")
        from ._introspection import IntrospectionVerifier

        verifier = IntrospectionVerifier(introspect, client_id=client_id, client_secret=secret, issuer=issuer or None,
                                         audience=audience)
    else:
        from ._jwt import JWTVerifier

        verifier = JWTVerifier(str(issuer), audience=audience, require_at_jwt_typ=not opts.get("auth_no_typ_check"))
    servers = [issuer] if issuer else None
    if servers is None:
        raise SystemExit("mcpkit: --auth-introspect needs --auth-issuer too (named in the resource metadata)")
    return ResourceServerAuth(verifier, resource=resource, authorization_servers=servers, scopes=scopes)
