"""A 2025-11-25 backend's question answered through another worker (several workers, Redis).

A legacy backend's question waits in the worker whose backend session asked it (a
:class:`~._pending.BackendCall` parked under an id sealed in the ``requestState``, beside that
worker's id). With Redis (``--workers N --redis URL``) an MRTR retry that reaches another
worker is relayed to that one through its Redis inbox: the worker holding the call checks the
caller (the principal that started it), checks each answer's shape, hands the answers to the
backend, and drives the call to its next step, which comes back as the retry's answer: the
result, the error, or the next questions (``input_required`` again, still held there).

Progress and log messages the backend sends during a relayed step are not passed on (they
would reach the other worker's connection, which has no stream for them). A worker that is
gone (or does not answer in the call's time) makes the retry fail with ``-32602``: send the
request again without ``requestState``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ..errors import MCPError
from ..protocol import errors
from ..server import InputRequired
from ._tasks_legacy import ANSWER_TYPES

if TYPE_CHECKING:
    from ..server import Context
    from ._front import Forwarder

log = logging.getLogger("mcpkit.proxy")

#: The inbox message type of a relayed retry.
MESSAGE = "proxy.mrtr"
#: How long a question waits for others sent with it (asked together).
_SETTLE = 0.005


class Relay:
    """The relayed retries of one :class:`~._front.Forwarder`, through one Redis node."""

    def __init__(self, forwarder: Forwarder, node: Any) -> None:
        self.forwarder = forwarder
        self.node = node
        node.handlers[MESSAGE] = self.handle

    @property
    def worker_id(self) -> str:
        return str(self.node.worker_id)

    async def listen(self) -> None:
        """Have this worker's Redis inbox open (so another worker can relay a retry here); a
        Redis that is down only means the retry must come back to this worker."""
        try:
            await self.node.ensure("a proxied question")
        except Exception as exc:
            log.warning("proxy: Redis is unavailable, a retry must reach this worker: %s", exc)

    # ---------------------------------------------------------------- the worker the retry reached
    async def retry(self, ctx: Context, params: Any, worker: str, call_id: str) -> Any:
        """Send the retry's answers to ``worker`` (which holds the call) and answer its next step."""
        from ._front import _ASKING, STATE_KEY, WORKER_KEY

        method = ctx.method
        answers = msgspec.to_builtins(params.inputResponses) if params.inputResponses is not UNSET else {}
        fw = self.forwarder
        reply = await self.node.call(worker, {"t": MESSAGE, "call": call_id, "principal": ctx.principal,
                                              "answers": answers}, timeout=fw.backend.call_timeout + 5.0)
        if reply is None:
            raise errors.invalid_params(f"{method}: the proxy worker whose backend session holds this request is gone "
                                        "(or did not answer in time); send the request again without requestState")
        err = reply.get("error")
        if isinstance(err, dict):
            raise fw._error(method, params, MCPError(int(err.get("code", errors.INTERNAL_ERROR)),
                                                     str(err.get("message", "")), err.get("data")))
        asked = reply.get("ask")
        if isinstance(asked, dict):
            ctx.state[STATE_KEY] = call_id
            ctx.state[WORKER_KEY] = worker
            raise InputRequired(asked)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise errors.internal_error(f"proxy: a relayed {method} came back malformed")
        return fw._typed(method, _ASKING[method], result)

    # ---------------------------------------------------------------- the worker holding the call
    async def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer the parked call ``msg["call"]`` with ``msg["answers"]``; its next step."""
        fw = self.forwarder
        bridge = fw.backend.bridge
        call_id, principal, answers = msg.get("call"), msg.get("principal"), msg.get("answers")
        if not isinstance(call_id, str) or not isinstance(answers, dict) or bridge is None:
            raise errors.invalid_params("a malformed relayed retry")
        call = fw.pending.take(call_id, principal if isinstance(principal, str) else None)
        if call is None:
            raise errors.invalid_params("the proxied request this retry answers has expired or was already "
                                        "answered; send the request again without requestState")
        questions = await bridge.run(call.open_questions())
        missing = {k: q for k, q in questions.items() if k not in answers}
        for key, value in answers.items():  # checked as the front checks its own answers
            if key in questions:
                asked_for = str(questions[key].get("method"))
                try:
                    msgspec.convert(value, ANSWER_TYPES.get(asked_for, dict[str, Any]))
                except msgspec.ValidationError as exc:
                    fw._cancel(call)
                    raise errors.invalid_params(f"Invalid input response {key!r} for {asked_for}: {exc}") from None
        for key in questions:
            if key in answers:
                await bridge.run(call.answer(key, answers[key]))
        if missing:  # answered in part: the rest is asked again, the call still held here
            fw.pending.park(call)
            return {"ask": missing}
        try:
            while True:
                event = await bridge.run(call.next_event())
                if event.kind == "ask":
                    asked = await bridge.run(call.open_questions(_SETTLE))
                    if asked:
                        fw.pending.park(call)
                        return {"ask": asked}
                elif event.kind == "done":
                    return {"result": event.data}
                elif event.kind == "error":
                    failure = event.data
                    return {"error": failure.to_error() if isinstance(failure, MCPError) else
                            errors.internal_error("proxy: the backend call failed").to_error()}
        except BaseException:
            fw._cancel(call)
            raise
