"""The OAuth side of one HTTP endpoint: the URL it protects, its metadata documents (RFC
9728), the caller of each request, and the refusals (401 with a challenge, 403 for scopes).

The decisions are the :class:`~._interface.Authenticator`'s (``mcpkit.auth.server.
ResourceServerAuth``); this module asks it at the right moments and writes its answers.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from ..protocol import codec, errors
from . import _asgi, _resource
from ._asgi import Receive, Scope, Send
from ._hosts import HostPolicy
from ._interface import Authenticator, AuthPrincipal, AuthRefusal, Dispatcher

log = logging.getLogger("mcpkit.http")

PRM_PREFIX = "/.well-known/oauth-protected-resource"
FORBIDDEN_HOST = errors.MCPError(errors.INVALID_REQUEST,
                                 "Forbidden: Origin or Host is not allowed (DNS rebinding protection)")
_NO_RESOURCE = errors.MCPError(errors.INTERNAL_ERROR, "This server cannot tell its own URL, so it cannot check access "
                               "tokens; its operator must configure the resource URL")
_FORBIDDEN_SCOPE = errors.invalid_request("Forbidden: the access token lacks a scope this operation requires")


class Gate:
    """Guards one endpoint (``path``) with ``auth``; ``resource`` is its URL when fixed (None:
    the local address of each request's socket, never a request header)."""

    __slots__ = ("auth", "resource", "path", "policy")

    def __init__(self, auth: Authenticator, resource: str | None, path: str, policy: HostPolicy) -> None:
        self.auth = auth
        self.resource = resource
        self.path = path
        self.policy = policy

    def resource_of(self, scope: Scope) -> str | None:
        """The canonical URL of this endpoint: the fixed one, else from the local address of
        the socket the request came in on (never from the ``Host`` header); None: unknown."""
        if self.resource is not None:
            return self.resource
        where = _resource.socket_authority(scope.get("server"))
        if where is None:
            log.error("cannot tell this endpoint's URL (the audience tokens must name): give ResourceServerAuth(resource=...)")
            return None
        root = scope.get("root_path", "")
        path = self.path if not root or self.path.startswith(root) else root + self.path
        return self.auth.resource_url(scope.get("scheme", "http"), where, path)

    async def metadata(self, scope: Scope, send: Send) -> None:
        """RFC 9728 metadata at the path-inserted URL, and at the root when this app owns it."""
        hdrs = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k in (b"host", b"origin")}
        if not self.policy.host_ok(hdrs.get("host")):
            await _asgi.respond_error(send, 403, FORBIDDEN_HOST)
            return
        resource = self.resource_of(scope)
        if resource is None:
            await _asgi.respond_error(send, 503, _NO_RESOURCE)
            return
        suffix = scope["path"][len(PRM_PREFIX):].rstrip("/")
        own = urlsplit(resource).path.rstrip("/")
        root_ok = suffix == "" and self.auth.serve_root_metadata
        if suffix != own and not root_ok:
            await _asgi.respond_plain(send, 404, b"Not Found")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _asgi.respond_plain(send, 405, b"Method Not Allowed")
            return
        await _asgi.respond_json_with(send, 200, self.auth.metadata_document(resource), [
            (b"cache-control", b"public, max-age=3600"), (b"access-control-allow-origin", b"*")])

    async def caller(self, scope: Scope, hdrs: dict[str, str], receive: Receive, send: Send, server: Dispatcher,
                     max_body: int) -> tuple[AuthPrincipal, str] | None:
        """The authenticated caller of this request and the resource URL it was checked
        against; None when the request was refused (answered here)."""
        resource = self.resource_of(scope)
        if resource is None:
            await _asgi.respond_error(send, 503, _NO_RESOURCE)
            return None
        method = scope["method"]
        principal = await self.auth.authenticate(method, resource, hdrs, scope.get("query_string", b""))
        if type(principal) is AuthRefusal:
            await self._refused(principal, method, hdrs, receive, send, resource, server, max_body)
            return None
        assert not isinstance(principal, AuthRefusal)
        return principal, resource

    async def _refused(self, refusal: AuthRefusal, method: str, hdrs: dict[str, str], receive: Receive, send: Send,
                       resource: str, server: Dispatcher, max_body: int) -> None:
        """A 401; for a request whose operation needs scopes of its own, the challenge names
        them too (one authorization instead of a 401 and then a 403)."""
        request_id = None
        if method == "POST" and refusal.status == 401:
            body = await _asgi.read_body(receive, send, hdrs.get("content-length"), max_body)
            if body is None:
                return  # too large: answered already
            try:
                msg = codec.decode(body)
            except codec.InvalidMessage:
                msg = None
            if type(msg) is codec.Request:
                request_id = msg.id
                needed = server.required_scopes(msg.method, codec.params_dict(msg.params))
                if needed:
                    refusal = self.auth.rescope(refusal, needed, resource)
        await refuse(send, refusal, request_id)

    async def admit(self, send: Send, principal: AuthPrincipal, needed: Collection[str], resource: str,
                    request_id: Any) -> bool:
        """Whether ``principal`` may run an operation needing ``needed``; else answers 403."""
        refusal = self.auth.authorize(principal, needed, resource)
        if refusal is None:
            return True
        await refuse(send, refusal, request_id)
        return False

    async def forbid(self, send: Send, principal: AuthPrincipal, needed: Collection[str], resource: str,
                     request_id: Any) -> None:
        """The 403 for a request the server found ``principal`` lacks scopes for."""
        if await self.admit(send, principal, needed, resource, request_id):
            # The authenticator lets through what its principal's scopes do not cover: refuse anyway.
            await _asgi.respond_error(send, 403, _FORBIDDEN_SCOPE, request_id)


async def refuse(send: Send, refusal: AuthRefusal, request_id: Any = None) -> None:
    extra = [(b"www-authenticate", refusal.challenge.encode("latin-1")), *refusal.headers]
    await _asgi.respond_error(send, refusal.status, refusal.error, request_id, extra)
