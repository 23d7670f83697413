"""The auth hook: a flow that sees each outgoing request and each transport Response.

Modelled on ``httpx.Auth``: :meth:`Auth.flow` is a generator that yields the request to
send (after adding headers), receives the :class:`Response`, and may yield a changed request
to send again (e.g. on a 401 with ``WWW-Authenticate``: fetch a token, then retry). When the
generator returns, the latest Response is the answer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

from ._transport import OnNote, Response


class OutgoingRequest:
    """One request on its way out, before ``_meta`` is stamped and an id assigned.

    An auth flow reads :attr:`method` and :attr:`params` and edits :attr:`headers` (extra
    HTTP headers; ignored off HTTP). The other attributes are the call's own options.
    """

    __slots__ = ("method", "params", "headers", "on_note", "progress_token", "log_level", "timeout", "stamp_meta",
                 "http_method", "credentials")

    def __init__(self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None,
                 on_note: OnNote | None = None, progress_token: str | None = None, log_level: str | None = None,
                 timeout: float | None = None, stamp_meta: bool = True, http_method: str = "POST") -> None:
        self.method = method
        self.params = params
        self.headers: dict[str, str] = headers if headers is not None else {}
        self.on_note = on_note
        self.progress_token = progress_token
        self.log_level = log_level
        #: Seconds for each attempt; None means the client's default; ``inf`` waits forever.
        self.timeout = timeout
        #: False for ``initialize``, whose params carry no ``_meta``.
        self.stamp_meta = stamp_meta
        #: The HTTP method it goes out with: POST, except a transport's own GET stream and
        #: DELETE (an auth hook that signs requests, e.g. DPoP, needs it).
        self.http_method = http_method
        #: Set once sent: the partition of the credentials its final exchange carried (see
        #: :attr:`Response.credentials`); None when unknown (private results are then not cached).
        self.credentials: str | None = None

    def copy(self, params: dict[str, Any] | None) -> OutgoingRequest:
        """The same call with other params (an MRTR retry); headers start afresh."""
        return OutgoingRequest(self.method, params, on_note=self.on_note, progress_token=self.progress_token,
                               log_level=self.log_level, timeout=self.timeout, stamp_meta=self.stamp_meta)

    def __repr__(self) -> str:
        return f"OutgoingRequest({self.method!r})"


class Auth:
    """Base class of auth hooks. Override :meth:`flow` (or :meth:`async_flow` when the flow
    must await, e.g. a token endpoint). The default flow sends the request unchanged."""

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        """Sign ``request`` (set its headers) and ``yield`` it; the ``Response`` is sent back in,
        so a flow may yield a retried request (e.g. after a 401). The default sends it unchanged.
        """
        yield request

    async def async_flow(self, request: OutgoingRequest) -> AsyncGenerator[OutgoingRequest, Response]:
        """Drives :meth:`flow`; override instead of it to await between steps."""
        flow = self.flow(request)
        try:
            request = next(flow)
            while True:
                response = yield request
                try:
                    request = flow.send(response)
                except StopIteration:
                    return
        finally:
            flow.close()

    def cache_context(self) -> str:
        """Narrows the partition of private cache entries further. Not needed for what the
        hook puts in headers: private entries are already partitioned by the credential
        headers each request actually carried (a hook that changes the request's params
        makes its private results uncacheable). Empty by default."""
        return ""

    def client_extensions(self) -> dict[str, Any]:
        """Extensions this hook implements, declared in the client's capabilities
        (``clientCapabilities.extensions``, e.g. ``io.modelcontextprotocol/oauth-client-credentials``)."""
        return {}


class BearerAuth(Auth):
    """``Authorization: Bearer <token>`` on every request."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._value = f"Bearer {token}"

    def flow(self, request: OutgoingRequest) -> Generator[OutgoingRequest, Response, None]:
        """Send ``request`` with ``Authorization: Bearer TOKEN``."""
        request.headers["Authorization"] = self._value
        yield request

    def cache_context(self) -> str:
        """A digest of the token: private cache entries of one token are not served to another."""
        import hashlib

        return hashlib.sha256(self._value.encode()).hexdigest()[:16]


async def first_step(auth: Auth, request: OutgoingRequest) -> OutgoingRequest:
    """The request as the flow would first send it; for messages no answer comes back to
    (notifications, a session's own GET stream and DELETE)."""
    flow = auth.async_flow(request)
    try:
        return await flow.__anext__()
    finally:
        await flow.aclose()
