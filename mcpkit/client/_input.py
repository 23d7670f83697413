"""Answering the server's questions: MRTR ``inputRequests`` (2026-07-28), and the server's own
requests in a 2025-11-25 session (sampling, elicitation, roots, ping), with the same handlers."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any, Union

import msgspec

from ..errors import ProtocolError
from ..protocol import errors
from ..protocol import types as t

log = logging.getLogger("mcpkit.client")

# (the params types as strings: the sampling/elicitation/roots wire types load on first use)
#: Answers one input request's params; sync or async.
ElicitationHandler = Callable[["t.ElicitRequestParams"],
                              "t.ElicitResult | dict[str, Any] | Awaitable[t.ElicitResult | dict[str, Any]]"]
SamplingHandler = Callable[["t.CreateMessageRequestParams"], "t.CreateMessageResult | dict[str, Any] | Awaitable[Any]"]
RootsProvider = Callable[[], "list[t.Root | dict[str, Any]] | Awaitable[list[t.Root | dict[str, Any]]]"]
Roots = Union[RootsProvider, "list[t.Root | dict[str, Any]]"]


class InputHandlers:
    """The client's elicitation, sampling and roots handlers, and how they answer."""

    __slots__ = ("elicitation", "sampling", "roots", "serving")

    def __init__(self, elicitation: ElicitationHandler | None, sampling: SamplingHandler | None,
                 roots: Roots | None) -> None:
        self.elicitation = elicitation
        self.sampling = sampling
        self.roots = roots
        #: True once a 2025-11-25 handshake begins: the server may then send its own requests.
        self.serving = False

    def declare(self, capabilities: dict[str, Any] | None, elicitation_modes: Sequence[str]) -> dict[str, Any]:
        """The client capabilities: those given, plus what the handlers can answer."""
        caps = dict(capabilities) if capabilities is not None else {}
        if self.elicitation is not None:
            caps.setdefault("elicitation", {m: {} for m in elicitation_modes})
        if self.sampling is not None:
            caps.setdefault("sampling", {})
        if self.roots is not None:
            caps.setdefault("roots", {})
        return caps

    # ------------------------------------------------------------ MRTR
    def retry_params(self, method: str, params: dict[str, Any] | None, result: dict[str, Any],
                     answers: dict[str, Any] | None) -> dict[str, Any]:
        """The params of the retry after an ``input_required`` result."""
        retry = dict(params or {})
        if answers is not None:
            retry["inputResponses"] = answers
        if "requestState" in result:
            retry["requestState"] = result["requestState"]  # echoed exactly, never inspected
        return retry

    async def answer_all(self, method: str, requests: Any) -> dict[str, Any] | None:
        """Answers to an ``inputRequests`` object, by key (None when there is nothing to answer)."""
        if not requests:
            return None
        if not isinstance(requests, dict):
            raise ProtocolError(f"{method}: inputRequests is not an object")
        keys = list(requests)
        answers = await asyncio.gather(*(self.answer(k, requests[k]) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def answer(self, key: str, request: Any) -> Any:
        """One input request's answer, as plain JSON values."""
        if not isinstance(request, dict):
            raise ProtocolError(f"input request {key!r} is not an object")
        method = request.get("method")
        params = request.get("params") or {}
        answer: Any
        try:
            if method == "elicitation/create":
                if self.elicitation is None:
                    raise ProtocolError("the server asked for elicitation, but this client has no elicitation handler")
                answer = await _call(self.elicitation, msgspec.convert(params, t.ElicitRequestParams))
            elif method == "sampling/createMessage":
                if self.sampling is None:
                    raise ProtocolError("the server asked for sampling, but this client has no sampling handler")
                answer = await _call(self.sampling, msgspec.convert(params, t.CreateMessageRequestParams))
            elif method == "roots/list":
                if self.roots is None:
                    raise ProtocolError("the server asked for roots, but this client has none")
                roots = self.roots if isinstance(self.roots, list) else await _call(self.roots)
                answer = {"roots": msgspec.to_builtins(roots)}
            else:
                raise ProtocolError(f"unknown input request method {method!r}")
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"input request {key!r} ({method}) is malformed: {exc}") from None
        return msgspec.to_builtins(answer)

    # ------------------------------------------------------------ the server's own requests
    async def serve(self, method: str, params: dict[str, Any]) -> Any:
        """Answer a request the server sent us: the one place ``ping`` is answered. Other
        methods only in a 2025-11-25 session (2026-07-28 servers never send requests)."""
        if method == "ping":
            return {}
        if not self.serving:
            log.warning("server sent a request (%s) outside a 2025-11-25 session; 2026-07-28 servers never do", method)
            raise errors.method_not_found(method)
        token = _ASKING.set(params)
        try:
            return await self.answer("request", {"method": method, "params": params})
        except ProtocolError as exc:
            raise errors.MCPError(errors.METHOD_NOT_FOUND, str(exc)) from None
        finally:
            _ASKING.reset(token)


_ASKING: ContextVar[dict[str, Any] | None] = ContextVar("mcpkit.client.asking", default=None)


def asking_params() -> dict[str, Any] | None:
    """In a handler answering a 2025-11-25 server's request (elicitation, sampling, roots):
    that request's params as sent, ``_meta`` included (e.g. a task's related-task mark); None
    elsewhere."""
    return _ASKING.get()


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


class InputProperties:
    """The Client's input handlers as properties (set at construction; the capabilities
    declared then stay)."""

    _input: InputHandlers

    @property
    def elicitation(self) -> ElicitationHandler | None:
        """The handler answering the server's ``elicitation/create`` questions, or None (declined)."""
        return self._input.elicitation

    @elicitation.setter
    def elicitation(self, handler: ElicitationHandler | None) -> None:
        self._input.elicitation = handler

    @property
    def sampling(self) -> SamplingHandler | None:
        """The handler answering the server's ``sampling/createMessage`` requests, or None."""
        return self._input.sampling

    @sampling.setter
    def sampling(self, handler: SamplingHandler | None) -> None:
        self._input.sampling = handler

    @property
    def roots(self) -> Roots | None:
        """The roots offered to the server (``roots/list``), or None."""
        return self._input.roots

    @roots.setter
    def roots(self, roots: Roots | None) -> None:
        self._input.roots = roots
