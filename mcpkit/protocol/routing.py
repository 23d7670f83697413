"""Which era serves a message, and where it goes: sans-IO routing for both transports.

**stdio.** One process speaks one era, decided by the first message that can decide it.
:class:`StdioRouter` is that decision as a state machine, in the manner of h11's
``Connection``: the transport decodes a line, feeds the message in, and does what the
returned action says. The router does no I/O and holds no tasks; the legacy session is an
opaque value the transport opens when told to (:class:`OpenLegacy`) and binds back with
:meth:`StdioRouter.bind_legacy`, so later actions can carry it::

    AWAITING ──request with _meta──────────────▶ MODERN
        │
        └──valid initialize (legacy served)───▶ LEGACY_INITIALIZING ──notifications/initialized──▶ LEGACY_READY

    any state ──close()──▶ CLOSED ──receive──▶ ERROR        misuse anywhere ──▶ ERROR (sticky)

Messages that decide nothing leave AWAITING as it is: a ``ping`` (answered), an
``initialize`` that fails validation (refused), a request without ``_meta`` (the modern
ladder answers it and names what is missing), notifications, responses.

**HTTP.** Every POST is routed on its own, from its message and its ``Mcp-Session-Id`` and
``MCP-Protocol-Version`` headers (:func:`route_request`, :func:`route_notification`,
:func:`route_response`); GET and DELETE from the method (:func:`route_method`). A session
route carries the session id; looking it up is the transport's business.

Pure: no asyncio, no sockets; actions without data are shared singletons, so the hot paths
(a modern request on either transport) allocate nothing here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, Union, overload

from . import codec, eras, errors, versions
from .errors import RoutingError as RoutingError

P = TypeVar("P")
_A = TypeVar("_A")




# ====================================================================== stdio actions
# Plain slotted classes: this module is on the stdio cold-start path, where generating
# dataclass methods would cost milliseconds.
class _Singleton:
    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Value:
    """An action with data: read-only by convention, compared and shown by its fields."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Value) and type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self), self._fields()))


class ServeModern(_Singleton):
    """Serve the request statelessly (the dispatcher's modern ladder)."""


class OpenLegacy(_Singleton):
    """Open a legacy session for this (validated) ``initialize``, :meth:`~StdioRouter.bind_legacy`
    it, then serve the request in it."""


class AnswerPing(_Singleton):
    """Answer with an empty result (a ``ping`` before ``initialize``; it decides nothing)."""


class Ignore(_Singleton):
    """Nothing to do."""


class IgnoreResponse(_Singleton):
    """Nothing to do, but worth a warning: a client answered a request no one sent."""

    warning = "ignoring a JSON-RPC response from the client (2026-07-28 servers send no requests)"


class ServeLegacy(_Value, Generic[P]):
    """Serve the request in the process's legacy session."""

    __slots__ = ("peer",)
    __match_args__ = ("peer",)

    def __init__(self, peer: P) -> None:
        self.peer = peer


class NotifyLegacy(_Value, Generic[P]):
    """Hand the notification to the legacy session (``notifications/cancelled`` included)."""

    __slots__ = ("peer",)
    __match_args__ = ("peer",)

    def __init__(self, peer: P) -> None:
        self.peer = peer


class AnswerLegacy(_Value, Generic[P]):
    """Hand the response to the legacy session: the client's answer to its own request."""

    __slots__ = ("peer",)
    __match_args__ = ("peer",)

    def __init__(self, peer: P) -> None:
        self.peer = peer


class Refuse(_Value):
    """Answer the request with this error; nothing else changes."""

    __slots__ = ("error",)
    __match_args__ = ("error",)

    def __init__(self, error: errors.MCPError) -> None:
        self.error = error


class CancelRequest(_Value):
    """Cancel the transport's in-flight request with this id (stateless ``notifications/cancelled``)."""

    __slots__ = ("request_id",)
    __match_args__ = ("request_id",)

    def __init__(self, request_id: codec.RequestId) -> None:
        self.request_id = request_id


SERVE_MODERN = ServeModern()
OPEN_LEGACY = OpenLegacy()
ANSWER_PING = AnswerPing()
IGNORE = Ignore()
IGNORE_RESPONSE = IgnoreResponse()

if TYPE_CHECKING:  # (only for annotations: building these at import would cost the cold start)
    RequestAction = Union[ServeModern, OpenLegacy, AnswerPing, ServeLegacy[P], Refuse]
    NotificationAction = Union[CancelRequest, NotifyLegacy[P], Ignore]
    ResponseAction = Union[AnswerLegacy[P], IgnoreResponse]
    StdioAction = Union[RequestAction[P], NotificationAction[P], ResponseAction[P]]


class StdioState(enum.Enum):
    AWAITING = "awaiting"  # no message has decided the era yet
    MODERN = "modern"
    LEGACY_INITIALIZING = "legacy-initializing"  # initialize accepted; notifications/initialized not seen yet
    LEGACY_READY = "legacy-ready"
    CLOSED = "closed"
    ERROR = "error"


_LEGACY_STATES = (StdioState.LEGACY_INITIALIZING, StdioState.LEGACY_READY)
_MODERN = StdioState.MODERN  # a module global: the hot path's one comparison skips the enum lookup


def cancelled_request_id(params: Any) -> codec.RequestId | None:
    """The request a ``notifications/cancelled`` names (params Raw or dict), or None when malformed.

    Only a string or an integer names a request (``True == 1`` in Python, not in JSON-RPC).
    """
    p = codec.params_dict(params) if params is not None else None
    rid = p.get("requestId") if isinstance(p, dict) else None
    return rid if type(rid) is int or type(rid) is str else None


class StdioRouter(Generic[P]):
    """The era of one stdio stream, and where each of its messages goes.

    ``legacy``: whether 2025-11-25 clients are served (``initialize``, ``ping``); P is the
    transport's legacy session type (opaque here).
    """

    __slots__ = ("_state", "_legacy", "_legacy_versions", "_peer", "_version", "_serve", "_notify", "_answer")

    def __init__(self, *, legacy: bool, legacy_versions: tuple[str, ...] = versions.LEGACY_VERSIONS) -> None:
        self._state = StdioState.AWAITING
        self._legacy = legacy
        self._legacy_versions = legacy_versions
        self._peer: P | None = None
        self._version: str | None = None
        # Built once when the session is bound: a legacy message allocates no action.
        self._serve: ServeLegacy[P] | None = None
        self._notify: NotifyLegacy[P] | None = None
        self._answer: AnswerLegacy[P] | None = None

    @property
    def state(self) -> StdioState:
        return self._state

    @property
    def legacy_version(self) -> str | None:
        """The version the legacy handshake negotiated (None before one, and on a modern stream)."""
        return self._version

    # ------------------------------------------------------------------ inbound
    @overload
    def receive(self, msg: codec.Request) -> RequestAction[P]: ...
    @overload
    def receive(self, msg: codec.Notification) -> NotificationAction[P]: ...
    @overload
    def receive(self, msg: codec.Response) -> ResponseAction[P]: ...

    def receive(self, msg: codec.Message) -> StdioAction[P]:
        """Route one decoded message (see the typed ``receive_*`` methods)."""
        if type(msg) is codec.Request:
            return self.receive_request(msg)
        if type(msg) is codec.Notification:
            return self.receive_notification(msg)
        assert type(msg) is codec.Response
        return self.receive_response(msg)

    def receive_request(self, req: codec.Request) -> RequestAction[P]:
        state = self._state
        if state is _MODERN and req.method != "initialize":
            return SERVE_MODERN  # the hot path: no second look at params
        self._check_usable()
        params = codec.params_dict(req.params)
        modern = eras.request_era(params) == "modern"
        if state is StdioState.AWAITING:
            return self._first(req, params, modern)
        if state is StdioState.MODERN:  # an initialize on a modern stream
            if modern:
                return SERVE_MODERN  # the modern ladder answers it (method not found)
            return Refuse(errors.invalid_request(
                "this stdio session already speaks 2026-07-28 (per-request _meta); initialize is not accepted now"))
        if modern:
            return Refuse(errors.invalid_request(
                f"this stdio session speaks {self._version or 'the legacy protocol'} after initialize; "
                "a 2026-07-28 request (_meta) cannot be mixed in: start a new process"))
        return self._legacy_action(self._serve)

    def _first(self, req: codec.Request, params: Any, modern: bool) -> RequestAction[P]:
        if modern:
            self._state = StdioState.MODERN
            return SERVE_MODERN
        if self._legacy:
            if req.method == "ping":
                return ANSWER_PING  # 2025-11-25 allows a ping before initialize; it decides nothing
            if req.method == "initialize":
                bad = eras.validate_initialize(params)
                if bad is not None:
                    return Refuse(bad)  # a broken handshake decides nothing
                assert isinstance(params, dict)
                self._version = eras.negotiate_legacy(params["protocolVersion"], self._legacy_versions)
                self._state = StdioState.LEGACY_INITIALIZING
                return OPEN_LEGACY
        return SERVE_MODERN  # undecided: the modern ladder answers it (and names what is missing)

    def receive_notification(self, note: codec.Notification) -> NotificationAction[P]:
        state = self._state
        if state in _LEGACY_STATES:
            action = self._legacy_action(self._notify)
            if state is StdioState.LEGACY_INITIALIZING and note.method == "notifications/initialized":
                self._state = StdioState.LEGACY_READY
            return action  # the session cancels by id itself
        self._check_usable()
        if note.method == "notifications/cancelled":
            rid = cancelled_request_id(note.params)
            # Malformed or unknown cancellations are ignored silently, as the spec asks.
            return IGNORE if rid is None else CancelRequest(rid)
        return IGNORE  # nothing else a stateless server must act on

    def receive_response(self, resp: codec.Response) -> ResponseAction[P]:
        if self._state in _LEGACY_STATES:
            return self._legacy_action(self._answer)
        self._check_usable()
        return IGNORE_RESPONSE

    # ------------------------------------------------------------------ transport events
    def bind_legacy(self, peer: P) -> ServeLegacy[P]:
        """The session the transport opened on :class:`OpenLegacy`; returns the action that
        serves the ``initialize`` in it."""
        if self._state is not StdioState.LEGACY_INITIALIZING or self._peer is not None:
            self._fail(f"bind_legacy() in state {self._state.value} (only right after OpenLegacy)")
        self._peer = peer
        self._serve, self._notify, self._answer = ServeLegacy(peer), NotifyLegacy(peer), AnswerLegacy(peer)
        return self._serve

    def close(self) -> P | None:
        """The input ended. Returns the legacy session for the transport to close (once), if any."""
        peer, self._peer = self._peer, None
        self._serve = self._notify = self._answer = None
        if self._state is not StdioState.ERROR:
            self._state = StdioState.CLOSED
        return peer

    # ------------------------------------------------------------------ internals
    def _legacy_action(self, action: _A | None) -> _A:
        if action is None:  # OpenLegacy was never followed by bind_legacy()
            self._check_usable()
            self._fail("a legacy message arrived before bind_legacy()")
        return action

    def _check_usable(self) -> None:
        if self._state is StdioState.CLOSED:
            self._fail("a message was received after close()")
        if self._state is StdioState.ERROR:
            raise RoutingError("the router is in its error state")

    def _fail(self, why: str) -> NoReturn:
        self._state = StdioState.ERROR
        raise RoutingError(why)


# ====================================================================== HTTP routes
class RefuseHttp(_Value):
    """Answer with this status and a JSON-RPC error (``allow``: the ``Allow`` header of a 405)."""

    __slots__ = ("status", "error", "request_id", "allow")
    __match_args__ = ("status", "error", "request_id", "allow")

    def __init__(self, status: int, error: errors.MCPError, request_id: codec.RequestId | None = None,
                 allow: str | None = None) -> None:
        self.status = status
        self.error = error
        self.request_id = request_id
        self.allow = allow


class Accept(_Singleton):
    """Answer 202 Accepted and do nothing else."""


class OpenSession(_Singleton):
    """A legacy ``initialize`` with valid params and no session: open one (if there is room)."""


class ToSession(_Value):
    """Deliver the message to this legacy session (404 when it is unknown or expired)."""

    __slots__ = ("session_id",)
    __match_args__ = ("session_id",)

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


class SessionStream(_Value):
    """GET: open the session's own stream (list changes, resource updates, its requests)."""

    __slots__ = ("session_id",)
    __match_args__ = ("session_id",)

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


class EndSession(_Value):
    """DELETE: end the session."""

    __slots__ = ("session_id",)
    __match_args__ = ("session_id",)

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


ACCEPT = Accept()
OPEN_SESSION = OpenSession()

if TYPE_CHECKING:
    HttpRequestRoute = Union[ServeModern, OpenSession, ToSession, RefuseHttp]
    HttpNotificationRoute = Union[Accept, ToSession, RefuseHttp]
    HttpResponseRoute = Union[ToSession, RefuseHttp]
    HttpMethodRoute = Union[SessionStream, EndSession, RefuseHttp]
    HttpPostRoute = Union[ServeModern, OpenSession, Accept, ToSession, RefuseHttp]

_SESSION_ID = "mcp-session-id"
_VERSION = "mcp-protocol-version"
_RESPONSE_REFUSED = RefuseHttp(400, errors.invalid_request("clients must not send JSON-RPC responses"))


def _session_wire(headers: Mapping[str, str]) -> bool:
    """Whether a notification or response is for the session wire: it names a session, and
    no modern version header outranks that (a modern POST is never served as legacy)."""
    if _SESSION_ID not in headers:
        return False
    version = headers.get(_VERSION)
    return version is None or not versions.is_modern(version.strip())


def _bad_session_version(headers: Mapping[str, str], rid: codec.RequestId | None) -> RefuseHttp | None:
    version = headers.get(_VERSION)
    if version is not None and version.strip() not in versions.LEGACY_VERSIONS:
        return RefuseHttp(400, errors.invalid_request(
            f"unsupported MCP-Protocol-Version {version.strip()!r} for a session request"), rid)
    return None


def route_request(req: codec.Request, headers: Mapping[str, str], legacy: bool) -> HttpRequestRoute:
    """Route a POSTed request. ``headers``: the request's headers by lower-cased name;
    ``legacy``: whether 2025-11-25 sessions are served.

    The era comes from the body (``params._meta``), with the version header as the
    cross-check: a modern header or body is never served as legacy.
    """
    if legacy:
        version = headers.get(_VERSION)
        if version is None or not versions.is_modern(version.strip()):
            return _route_legacy_request(req, headers)
    return SERVE_MODERN  # the hot path: no look at params


def _route_legacy_request(req: codec.Request, headers: Mapping[str, str]) -> HttpRequestRoute:
    params = codec.params_dict(req.params)
    if eras.request_era(params) == "modern":
        return SERVE_MODERN
    refused = _bad_session_version(headers, req.id)
    if refused is not None:
        return refused
    session_id = headers.get(_SESSION_ID)
    if session_id is None:
        if req.method == "initialize":
            bad = eras.validate_initialize(params)
            # Checked before any session exists: a flood of bad initializes costs nothing.
            return OPEN_SESSION if bad is None else RefuseHttp(400, bad, req.id)
        return RefuseHttp(400, errors.invalid_request(
            "missing Mcp-Session-Id header: send initialize first (or use 2026-07-28 with params._meta)"), req.id)
    return ToSession(session_id.strip())


def route_notification(note: codec.Notification, headers: Mapping[str, str], legacy: bool) -> HttpNotificationRoute:
    """Route a POSTed notification. Stateless ones are accepted and dropped: on HTTP a closed
    stream is the cancel signal, and no other client notification exists in 2026-07-28."""
    if not (legacy and _session_wire(headers)):
        return ACCEPT
    return _bad_session_version(headers, None) or ToSession(headers[_SESSION_ID].strip())


def route_response(resp: codec.Response, headers: Mapping[str, str], legacy: bool) -> HttpResponseRoute:
    """Route a POSTed response: only a legacy session ever asked the client anything."""
    if not (legacy and _session_wire(headers)):
        return _RESPONSE_REFUSED
    return _bad_session_version(headers, resp.id) or ToSession(headers[_SESSION_ID].strip())


def route_post(msg: codec.Message, headers: Mapping[str, str], legacy: bool) -> HttpPostRoute:
    """Route one POSTed message, whatever its kind."""
    if type(msg) is codec.Request:
        return route_request(msg, headers, legacy)
    if type(msg) is codec.Notification:
        return route_notification(msg, headers, legacy)
    assert type(msg) is codec.Response
    return route_response(msg, headers, legacy)


def route_method(method: str, headers: Mapping[str, str], legacy: bool) -> HttpMethodRoute:
    """Route a request that is not a POST: only legacy sessions have a GET stream and a DELETE."""
    session_id = headers.get(_SESSION_ID)
    if legacy and session_id is not None:
        if method == "GET":
            return SessionStream(session_id.strip())
        if method == "DELETE":
            return EndSession(session_id.strip())
    return RefuseHttp(405, errors.MCPError(
        errors.INVALID_REQUEST, f"Method Not Allowed: this endpoint accepts POST only, not {method}"), allow="POST")
