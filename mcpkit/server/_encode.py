"""Era-specific edges of one dispatch: how a request's questions reach the client, and how
its outcome is encoded.

The dispatcher (:mod:`._dispatch`) runs every request the same way; an :class:`Era` then
decides what differs between 2026-07-28 and 2025-11-25:

=================  ==========================================  ==================================
                   :class:`ModernEra` (2026-07-28)             :class:`LegacyEra` (2025-11-25)
=================  ==========================================  ==================================
questions          MRTR: unwind, answer ``input_required``      real server-to-client requests
                   with a sealed ``requestState``
result             ``_meta`` gets the server's ``serverInfo``   ``resultType``/``ttlMs``/
                                                                ``cacheScope`` removed
resource missing   -32602 with ``data.uri``                     -32002
=================  ==========================================  ==================================
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET

from .._lazy import LazyLogger
from ..protocol import codec, errors
from ..protocol import meta as M
from ..protocol import types as t
from ..protocol.codec import Reply
from ._binding import owner_key
from ._input import InputChannel, InputRequests, InputRequired
from ._state import INVALID_STATE_MESSAGE, StateError, digest_arguments

if TYPE_CHECKING:
    from ._context import Context
    from ._server import Server

log = LazyLogger("mcpkit.server")  # logging loads with the first record

_encode_result = codec.encode_result
_encode_error = codec.encode_error


class Era(Protocol):
    """One era's edges of a dispatch (see the module docstring)."""

    def open_input(self, ctx: Context, params: Any) -> InputChannel:
        """The input channel of an MRTR-method request (may raise ``MCPError``)."""
        ...

    def unwound(self, ctx: Context, params: Any, channel: InputChannel | None, need: InputRequired) -> Any:
        """The result to answer when a handler unwound with :class:`InputRequired`."""
        ...

    def result(self, request_id: codec.RequestId, result: Any) -> Reply: ...

    def error(self, request_id: codec.RequestId, exc: errors.MCPError) -> Reply: ...


# ====================================================================== 2026-07-28
def _binding(ctx: Context, params: Any) -> tuple[str, str, str, str | None]:
    """What a requestState is bound to: method, name, a digest of the arguments, principal
    (refused for an authenticated caller with no key: see :mod:`mcpkit.server._binding`)."""
    method = ctx.method
    principal = owner_key(ctx, "a requestState")
    if method == "resources/read":
        name, args = params.uri, None
    else:
        name, args = params.name, (params.arguments if params.arguments not in (UNSET, None) else None)
    return method, name, digest_arguments(args), principal


class MrtrChannel:
    """2026-07-28 questions: answers come from this retry (and earlier rounds' sealed state);
    a question without one unwinds the handler, to be answered ``input_required``."""

    __slots__ = ("answers", "spend")

    def __init__(self, answers: Mapping[str, Any], spend: tuple[str, float] | None = None) -> None:
        self.answers = answers
        #: (state id, expiry) of a single-use requestState to spend before the handler runs.
        self.spend = spend

    async def ask(self, requests: InputRequests) -> dict[str, Any]:
        answers = self.answers
        missing = {k: r for k, r in requests.items() if k not in answers}
        if missing:
            raise InputRequired(missing)
        return {k: answers[k] for k in requests}


#: The channel of every first round (nothing answered yet): shared, so a request that never
#: asks allocates nothing for it.
_FIRST_ROUND = MrtrChannel(MappingProxyType({}))


class ModernEra:
    """2026-07-28: stateless requests, MRTR input, ``serverInfo`` in every result's ``_meta``."""

    __slots__ = ("server", "result_meta")

    def __init__(self, server: Server, include_server_info: bool) -> None:
        self.server = server
        self.result_meta: dict[str, Any] | None = (
            {M.SERVER_INFO: msgspec.to_builtins(server.info)} if include_server_info else None)

    def open_input(self, ctx: Context, params: Any) -> InputChannel:
        """Verify a retry's requestState and collect the answers the handler may use."""
        if params.inputResponses is UNSET and params.requestState is UNSET:
            return _FIRST_ROUND
        answers: dict[str, Any] = {}
        asked: list[str] | None = None
        spend: tuple[str, float] | None = None
        if params.requestState is not UNSET:
            method, name, digest, principal = _binding(ctx, params)
            try:
                payload = self.server.sealer.open(params.requestState, method=method, name=name, digest=digest,
                                                  principal=principal)
            except StateError as exc:
                log.warning("rejected requestState on %s %r: %s", method, name, exc)
                raise errors.invalid_params(INVALID_STATE_MESSAGE) from None
            answers.update(payload.answers)
            ctx.state = dict(payload.state)
            asked = payload.asked
            if self.server.state_single_use:
                from ._once import state_id

                spend = (state_id(params.requestState), payload.expires)
        if params.inputResponses is not UNSET:
            for key, value in params.inputResponses.items():
                # Unknown or unasked keys are ignored, as the spec asks.
                if asked is None or key in asked:
                    answers[key] = value
        return MrtrChannel(answers, spend)

    def unwound(self, ctx: Context, params: Any, channel: InputChannel | None, need: InputRequired) -> Any:
        """The ``input_required`` answer: the questions, and everything answered so far sealed."""
        if not isinstance(channel, MrtrChannel):
            raise errors.internal_error("input was requested outside MRTR")
        method, name, digest, principal = _binding(ctx, params)
        token = self.server.sealer.seal(method=method, name=name, digest=digest, principal=principal,
                                        asked=list(need.requests), answers=dict(channel.answers), state=ctx.state)
        requests = {k: msgspec.convert(v, t.InputRequest) for k, v in need.requests.items()}
        return t.InputRequiredResult(inputRequests=requests, requestState=token)

    def result(self, request_id: codec.RequestId, result: Any) -> Reply:
        meta = self.result_meta
        if meta is not None:
            if result.meta is UNSET:
                result.meta = meta
            else:
                result.meta = {**meta, **result.meta}
        return Reply(_encode_result(request_id, result), None)

    def error(self, request_id: codec.RequestId, exc: errors.MCPError) -> Reply:
        return Reply(_encode_error(request_id, exc), exc.code)


# ====================================================================== 2025-11-25
def legacy_result(result: Any) -> dict[str, Any]:
    """A result shaped for 2025-11-25: no resultType or cache hints (they are 2026-07-28 fields)."""
    out: dict[str, Any] = msgspec.to_builtins(result)
    out.pop("resultType", None)
    out.pop("ttlMs", None)
    out.pop("cacheScope", None)
    return out


class LegacyEra:
    """2025-11-25: questions go through ``channel`` (the session's requests to the client);
    results lose the modern fields; a missing resource is -32002."""

    __slots__ = ("channel",)

    def __init__(self, channel: InputChannel) -> None:
        self.channel = channel

    def open_input(self, ctx: Context, params: Any) -> InputChannel:
        return self.channel

    def unwound(self, ctx: Context, params: Any, channel: InputChannel | None, need: InputRequired) -> Any:
        raise errors.internal_error("input was requested outside MRTR")  # real requests never unwind

    def result(self, request_id: codec.RequestId, result: Any) -> Reply:
        return Reply(_encode_result(request_id, legacy_result(result)), None)

    def error(self, request_id: codec.RequestId, exc: errors.MCPError) -> Reply:
        if isinstance(exc, errors.ResourceNotFound):
            exc = errors.MCPError(errors.LEGACY_RESOURCE_NOT_FOUND, exc.message, exc.data)
        return Reply(_encode_error(request_id, exc), exc.code)
