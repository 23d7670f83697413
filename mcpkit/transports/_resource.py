"""Which auth an HTTP app applies, and the URL it protects (the audience tokens must name).

One rule for every way of serving a server (``Server.run("http")``, ``http_app()``,
``run_http_server``, ``mcpkit serve --http``, ``--workers``, ``--reload``,
``serve_workers()``): the server's own ``auth`` applies unless another one is passed in.

The protected resource URL never comes from a request header. It is, in order: the auth's
own ``resource=``; the ``public_url`` given to the app; the address the server is bound to
(fixed when ``run_http_server`` binds it); for an app under another ASGI server, the local
address of the socket the request came in on (``scope["server"]``). A wildcard bind
(``0.0.0.0``, ``::``) names no URL a client uses, so it is refused without ``resource=``.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._interface import Authenticator, Dispatcher


def serving_auth(server: Dispatcher, auth: Authenticator | None = None) -> Authenticator | None:
    """The authenticator an HTTP app for ``server`` applies: ``auth`` when given, else the
    server's own (``Server(auth=...)``); ``None`` (open) only when neither is set."""
    return auth if auth is not None else server.serving.auth


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is a bind-to-every-interface address (``0.0.0.0``, ``::``, ``""``...)."""
    h = host.strip().strip("[]")
    if h in ("", "*"):
        return True
    try:
        return ipaddress.ip_address(h).is_unspecified
    except ValueError:
        return False


def authority(host: str, port: int | None) -> str:
    """``host:port`` for a URL (IPv6 addresses in brackets)."""
    h = host.strip().strip("[]").lower()
    if ":" in h:
        h = f"[{h}]"
    return h if port is None else f"{h}:{port}"


def endpoint_url(scheme: str, host: str, port: int | None, path: str) -> str:
    """``scheme://host:port/path`` without a trailing slash (the form of a resource URL)."""
    tail = "" if path in ("", "/") else "/" + path.strip("/")
    return f"{scheme}://{authority(host, port)}{tail}"


WILDCARD_REFUSAL = ("{host} listens on every interface, so the URL clients use (the audience their tokens must name) "
                    "cannot be told from it: give ResourceServerAuth(resource='https://PUBLIC-HOST/mcp')")


def bound_resource(host: str, port: int, path: str, sockets: list[Any] | None = None) -> str | None:
    """The resource URL of a server bound to ``host:port`` (or to ``sockets``), or None when
    the port is only known once bound (port 0: each request's socket names it then).

    Raises ValueError for a wildcard address (no client URL is that)."""
    if sockets:
        name = sockets[0].getsockname()
        if not isinstance(name, tuple) or len(name) < 2:
            return None  # a Unix socket: no URL; each request's scope decides (or refuses)
        host, port = str(name[0]), int(name[1])
    if is_wildcard(host):
        raise ValueError(WILDCARD_REFUSAL.format(host=host or "''"))
    if not port:
        return None
    return endpoint_url("http", host, port, path)


def fixed_resource(auth: Authenticator | None, public_url: str | None, any_host: bool) -> str | None:
    """The resource URL an app with ``auth`` protects when it is fixed: the auth's own
    ``resource=``, else ``public_url``; None: each request's socket names it. Raises
    ValueError when the two disagree, or for ``allowed_hosts=['*']`` without either (behind a
    proxy, what ``'*'`` is for, the socket's address is not the URL clients use)."""
    if auth is None:
        return None
    own = auth.resource
    public = public_url.rstrip("/") if public_url else None
    if own and public and own.rstrip("/") != public:
        raise ValueError(f"the auth names resource={own!r}; a different public_url ({public!r}) cannot apply")
    fixed: str | None = own or public
    if any_host and fixed is None:
        raise ValueError("with allowed_hosts=['*'], give the canonical URL: ResourceServerAuth(resource=...)")
    return fixed


def bind(server: Dispatcher, app_options: dict[str, Any], host: str, port: int, path: str,
         sockets: list[Any] | None) -> None:
    """Fix the audience of the app ``run_http_server`` builds from ``app_options``: when the
    auth that applies names no ``resource=`` and no ``public_url`` is given, the bound address
    becomes ``public_url`` (ValueError for a wildcard address)."""
    auth = serving_auth(server, app_options.get("auth"))
    if auth is not None and auth.resource is None and not app_options.get("public_url"):
        app_options["public_url"] = bound_resource(host, port, path, sockets)


def socket_authority(scope_server: Any) -> str | None:
    """``host:port`` of the local socket from an ASGI ``scope["server"]`` (None: unknown or not TCP)."""
    if not isinstance(scope_server, (tuple, list)) or len(scope_server) != 2:
        return None
    host, port = scope_server
    if not isinstance(host, str) or not host or isinstance(port, bool) or not isinstance(port, int):
        return None
    if is_wildcard(host):
        return None
    return authority(host, port)
