"""Extra HTTP routes beside the MCP endpoint: documents a server or an extension publishes over
plain HTTP (a server card, a domain catalog), mounted by the Streamable HTTP transport.

A route is registered on the server, usually by an extension's ``install``::

    from mcpkit.transports.routes import HttpRequest, HttpResponse

    async def hello(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, b"hello", [("content-type", "text/plain")])

    server.add_http_route("hello", hello)                    # <mcp-url>/hello
    server.add_http_route("/.well-known/hello.json", hello)  # at the site root

A path without a leading ``/`` is relative to the MCP endpoint (``server-card`` under ``/mcp``
is ``/mcp/server-card``); one with it is absolute. Routes are read-only: ``GET`` (which also
answers ``HEAD``, without the body) and ``OPTIONS`` (CORS preflight); a request has no body.

What the transport does for a route: it checks the ``Host`` header against the app's
allow-list (403 otherwise, as for the MCP endpoint), answers a method the route does not take
with 405 and ``Allow``, and otherwise hands the request to the handler. It applies no
``Origin`` check and no OAuth: routes serve public documents, and the handler says which
origins may read them (its CORS headers). Routes are fixed when the HTTP app is built: add
them before serving. The MCP endpoint pays nothing for them (they are looked up only for a
path that is not the MCP endpoint's).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["HttpRequest", "HttpResponse", "HttpRoute", "RouteHandler", "mount", "serve"]

_METHODS = frozenset({"GET", "OPTIONS"})


@dataclasses.dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request to a route: its method, path, raw query string and headers (names lower-cased;
    repeated headers joined with ``", "``), and the path of the MCP endpoint it is served beside."""

    method: str
    path: str
    query: bytes
    headers: Mapping[str, str]
    mcp_path: str
    scheme: str = "http"

    def base_url(self) -> str:
        """``scheme://host`` of this request (the ``Host`` header, which the allow-list passed)."""
        return f"{self.scheme}://{self.headers.get('host', '')}"


@dataclasses.dataclass(slots=True)
class HttpResponse:
    """A route's answer: the status, the body and the headers (``(name, value)`` pairs)."""

    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)


#: A route's handler: called with each request, returns the response.
RouteHandler = Callable[[HttpRequest], Awaitable[HttpResponse]]


@dataclasses.dataclass(frozen=True, slots=True)
class HttpRoute:
    """A route as registered: the path (relative to the MCP endpoint unless it starts with
    ``/``), the handler and the methods it takes (``GET``, ``OPTIONS``)."""

    path: str
    handler: RouteHandler
    methods: tuple[str, ...] = ("GET",)

    def __post_init__(self) -> None:
        path = self.path
        if not isinstance(path, str) or not path.strip("/") or any(c in path for c in " ?#\\\x00") \
                or any(seg in (".", "..") for seg in path.split("/")):
            raise ValueError(f"invalid route path {path!r}: a path like 'server-card' or '/.well-known/x.json'")
        if not callable(self.handler):
            raise TypeError("a route's handler is an async function of an HttpRequest")
        methods = tuple(m.upper() for m in self.methods)
        if not methods or not set(methods) <= _METHODS:
            raise ValueError(f"a route takes GET and/or OPTIONS (read-only, no body), not {list(self.methods)}")
        object.__setattr__(self, "methods", methods)

    def absolute(self, mcp_path: str) -> str:
        """This route's path when the MCP endpoint is at ``mcp_path``."""
        if self.path.startswith("/"):
            return self.path
        return mcp_path.rstrip("/") + "/" + self.path


def mount(routes: Mapping[str, HttpRoute], mcp_path: str) -> dict[str, HttpRoute]:
    """The routes by absolute path, beside an MCP endpoint at ``mcp_path`` (ValueError when one
    lands on the MCP path itself or two land on the same path)."""
    out: dict[str, HttpRoute] = {}
    for route in routes.values():
        path = route.absolute(mcp_path)
        if path.rstrip("/") == mcp_path.rstrip("/"):
            raise ValueError(f"the route {route.path!r} would replace the MCP endpoint {mcp_path!r}")
        if path in out:
            raise ValueError(f"two routes at {path!r}")
        out[path] = route
    return out


async def serve(route: HttpRoute, scope: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]],
                host_ok: Callable[[str | None], bool], mcp_path: str) -> None:
    """Answer one ASGI request for ``route``: the Host check, the method, then its handler."""
    headers: dict[str, str] = {}
    for k, v in scope.get("headers") or ():
        name = k.decode("latin-1").lower()
        value = v.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    method = scope["method"]
    allowed = route.methods + (("HEAD",) if "GET" in route.methods else ())
    if not host_ok(headers.get("host")):
        response = HttpResponse(403, b"Forbidden: Host not allowed", [("content-type", "text/plain")])
    elif method not in allowed:
        response = HttpResponse(405, b"Method Not Allowed", [("content-type", "text/plain"),
                                                             ("allow", ", ".join(allowed))])
    else:
        request = HttpRequest("GET" if method == "HEAD" else method, scope["path"], scope.get("query_string", b""),
                              headers, mcp_path, scope.get("scheme", "http"))
        try:
            response = await route.handler(request)
        except Exception:  # a broken handler is a 500, logged; the connection stays usable
            logging.getLogger("mcpkit.http").exception("the HTTP route %s failed", route.path)
            response = HttpResponse(500, b"Internal Server Error", [("content-type", "text/plain")])
    body = b"" if method == "HEAD" or response.status in (204, 304) else response.body
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    if response.status not in (204, 304):
        raw.append((b"content-length", str(len(response.body if method == "HEAD" else body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
