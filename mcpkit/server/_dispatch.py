"""One dispatch path for every request of every era: checked request -> handler -> result | MCPError.

:func:`serve` is the one entry transports call per modern request (through ``Server.serve``):
the inbound check, the caller's scopes, then :func:`dispatch`.

The method table keeps each method's handler precomposed with the wrappers and middleware
registered for it, so a server without any pays nothing per request for the hooks.
What differs between eras is left to the :class:`~._encode.Era` a request comes with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from .._lazy import LazyLogger
from ..protocol import codec, errors, inbound
from ..protocol.codec import Reply
from ..protocol.mrtr import MRTR_METHODS
from ._context import Context, Emit
from ._encode import LegacyEra, MrtrChannel
from ._input import InputRequired

if TYPE_CHECKING:
    from ..transports import Envelope
    from ._encode import Era
    from ._server import Server

log = LazyLogger("mcpkit.server")  # logging loads with the first record

#: Answers one method: ``handler(ctx, params)`` returns its wire result (or raises MCPError).
Handler = Callable[[Context, Any], Awaitable[Any]]
"""Answers one method: ``handler(ctx, params)`` returns its wire result (or raises MCPError)."""
#: Wraps a handler: ``wrapper(ctx, params, call_next)``; ``call_next(ctx, params)`` runs what it wraps.
Wrapper = Callable[[Context, Any, Handler], Awaitable[Any]]
"""Wraps a handler: ``wrapper(ctx, params, call_next)``; ``call_next(ctx, params)`` runs what it wraps."""


def _bind(wrapper: Wrapper, inner: Handler) -> Handler:
    # A plain function returning the wrapper's awaitable: no extra coroutine per call.
    def handler(ctx: Context, params: Any) -> Awaitable[Any]:
        return wrapper(ctx, params, inner)

    return handler


class MethodTable:
    """The methods a server answers, each composed as ``middleware(wrappers(handler))``.

    Each registration wraps what is already there: the wrapper or middleware added last runs
    first. Middleware wraps every method, outside the method's own wrappers.
    """

    __slots__ = ("handlers", "wrappers", "middleware", "chains")

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.wrappers: dict[str, list[Wrapper]] = {}
        self.middleware: list[Wrapper] = []
        #: What dispatch calls, per method (rebuilt on every registration).
        self.chains: dict[str, Handler] = {}

    def set(self, method: str, handler: Handler) -> None:
        self.handlers[method] = handler
        self._compose(method)

    def wrap(self, method: str, wrapper: Wrapper) -> None:
        if method not in self.handlers:
            raise ValueError(f"no method {method!r} to wrap (add it first)")
        self.wrappers.setdefault(method, []).append(wrapper)
        self._compose(method)

    def add_middleware(self, middleware: Wrapper) -> None:
        self.middleware.append(middleware)
        for method in self.handlers:
            self._compose(method)

    def _compose(self, method: str) -> None:
        chain = self.handlers[method]
        for wrapper in self.wrappers.get(method, ()):
            chain = _bind(wrapper, chain)
        for mw in self.middleware:
            chain = _bind(mw, chain)
        self.chains[method] = chain


async def spend_state(server: Server, state_id: str, expires: float) -> None:
    """Record a verified single-use requestState as spent; a second use is refused."""
    from ._once import spent_state_error

    if not await server.used_states.spend(state_id, expires):
        log.warning("refused a requestState presented a second time")
        raise spent_state_error()


async def _rejected(request_id: codec.RequestId, exc: errors.MCPError) -> Reply:
    return Reply(codec.encode_error(request_id, exc), exc.code, True)


def serve(server: Server, chains: dict[str, Handler], era: Era, req: codec.Request,
          envelope: Envelope) -> Coroutine[Any, Any, Reply]:
    """The one entry for transports: check ``req`` (with the envelope's headers, if any),
    make sure the envelope's principal has the scopes it needs, and answer it.

    Returns the coroutine of the answer (a reply marked ``rejected`` when the check failed).
    Raises :class:`~mcpkit.protocol.errors.InsufficientScope` at once, before anything runs,
    when the principal lacks a scope the request needs.
    """
    principal = envelope.principal
    try:
        checked = server.check(req, envelope.headers, scoped=principal is not None)
    except errors.MCPError as exc:
        return _rejected(req.id, exc)
    if principal is None:
        return dispatch(server, chains, req, checked, envelope.emit, None, era, None, envelope.peer)
    if checked.scopes and not principal.allows(checked.scopes):
        raise errors.InsufficientScope(checked.scopes)
    return dispatch(server, chains, req, checked, envelope.emit, principal.key, era, principal, envelope.peer)


async def dispatch(server: Server, chains: dict[str, Handler], req: codec.Request, checked: inbound.Checked,
                   emit: Emit | None, principal: str | None, era: Era, auth: Any = None,
                   peer: str | None = None) -> Reply:
    """Answer a request that passed the inbound ladder. Never raises except for cancellation."""
    method = req.method
    params = checked.params
    ctx = Context(server, req.id, method, params.meta, checked.meta, emit, peer)
    ctx.principal = principal
    if auth is not None:
        ctx.auth = auth
    try:
        channel = None
        if method in MRTR_METHODS or (method == "tasks/result" and type(era) is LegacyEra):
            # (2025-11-25: a task's questions come to the client while its tasks/result waits)
            channel = ctx.input_channel = era.open_input(ctx, params)
            if type(channel) is MrtrChannel and channel.spend is not None:
                # A single-use requestState (Server(state_single_use=True)): spent before the handler runs.
                await spend_state(server, *channel.spend)
        try:
            result = await chains[method](ctx, params)
        except InputRequired as need:
            result = era.unwound(ctx, params, channel, need)
        return era.result(req.id, result)
    except errors.MCPError as exc:
        return era.error(req.id, exc)
    except Exception:  # (asyncio.CancelledError is a BaseException: it passes through)
        log.exception("internal error while handling %s", method)
        return era.error(req.id, errors.internal_error(f"Internal error while handling {method}"))
