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

A 2025-11-25 backend's task lives in the backend session (and process) of the worker that
created it, and so does the ``tasks/result`` held open for its questions. That worker records
itself as the task's owner in Redis (``<prefix>:proxy-task:<taskId>``, for the task's ``ttl``);
``tasks/get``, ``tasks/update``, ``tasks/cancel`` and ``tasks/result`` for it that reach another
worker are relayed there the same way (a ``tasks/result`` whose task asks comes back as the
questions, asked by the worker the client reached, the answers relayed on as above).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ..errors import MCPError
from ..protocol import errors
from ..server import InputRequired
from ._pending import BackendCall
from ._tasks_legacy import ANSWER_TYPES

if TYPE_CHECKING:
    from ..server import Context
    from ._front import Forwarder

log = logging.getLogger("mcpkit.proxy")

#: The inbox message type of a relayed retry.
MESSAGE = "proxy.mrtr"
#: The inbox message type of a relayed 2025-11-25 task request.
TASK_MESSAGE = "proxy.task"
#: How long a question waits for others sent with it (asked together).
_SETTLE = 0.005


class Relay:
    """The relayed retries of one :class:`~._front.Forwarder`, through one Redis node."""

    def __init__(self, forwarder: Forwarder, node: Any) -> None:
        self.forwarder = forwarder
        self.node = node
        node.handlers[MESSAGE] = self.handle
        node.handlers[TASK_MESSAGE] = self.handle_task

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
            return {"ask": missing, "call": call.id}
        return await self._step(call)

    async def _step(self, call: BackendCall) -> dict[str, Any]:
        """Drive ``call`` to its next step: ``{"result"}``, ``{"error"}``, or ``{"ask"}`` (parked)."""
        fw = self.forwarder
        bridge = fw.backend.bridge
        assert bridge is not None
        try:
            while True:
                event = await bridge.run(call.next_event())
                if event.kind == "ask":
                    asked = await bridge.run(call.open_questions(_SETTLE))
                    if asked:
                        fw.pending.park(call)
                        return {"ask": asked, "call": call.id}
                elif event.kind == "done":
                    return {"result": event.data}
                elif event.kind == "error":
                    failure = event.data
                    return {"error": failure.to_error() if isinstance(failure, MCPError) else
                            errors.internal_error("proxy: the backend call failed").to_error()}
        except BaseException:
            fw._cancel(call)
            raise

    # ---------------------------------------------------------------- 2025-11-25 tasks
    def _task_key(self, task_id: str) -> str:
        return f"{self.node.keys.prefix}:proxy-task:{task_id}"

    async def own_task(self, task: dict[str, Any]) -> None:
        """Record this worker as the owner of a task its backend session created."""
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            return
        ttl = task.get("ttl")
        seconds = max(int(ttl) // 1000 + 60, 60) if isinstance(ttl, int) and ttl > 0 else \
            int(self.forwarder.pending.ttl) + 60
        try:
            await self.node.ensure("a proxied task")
            await self.node.client.set(self._task_key(task_id), self.worker_id, ex=seconds)
        except Exception as exc:
            log.warning("proxy: could not record task %s in Redis, its requests must reach this worker: %s",
                        task_id, exc)

    async def task_owner(self, task_id: str) -> str | None:
        """The worker that owns ``task_id`` if it is another one (None: this one, or unknown)."""
        try:
            await self.node.ensure("a proxied task")
            owner = await self.node.client.get(self._task_key(task_id))
        except Exception as exc:
            log.warning("proxy: could not look up task %s in Redis: %s", task_id, exc)
            return None
        if isinstance(owner, bytes):
            owner = owner.decode()
        return owner if isinstance(owner, str) and owner != self.worker_id else None

    async def task(self, ctx: Context, method: str, params: Any, worker: str, *, legacy_front: bool) -> Any:
        """Relay a task request to ``worker`` (the task's owner); the raw result."""
        fw = self.forwarder
        timeout = (fw.backend.call_timeout if method == "tasks/result" else fw.backend.request_timeout) + 5.0
        reply = await self.node.call(worker, {
            "t": TASK_MESSAGE, "method": method, "params": msgspec.to_builtins(params), "principal": ctx.principal,
            "caps": ctx.client_capabilities, "legacy_front": legacy_front}, timeout=timeout)
        while True:
            if reply is None:
                raise errors.invalid_params(f"{method}: the proxy worker whose backend session holds this task is gone "
                                            "(or did not answer in time)")
            err = reply.get("error")
            if isinstance(err, dict):
                raise MCPError(int(err.get("code", errors.INTERNAL_ERROR)), str(err.get("message", "")),
                               err.get("data"))
            asked, call_id = reply.get("ask"), reply.get("call")
            if not isinstance(asked, dict) or not isinstance(call_id, str):
                break
            answers = await ctx.ask(asked)  # a 2025-11-25 front client's tasks/result: real requests
            reply = await self.node.call(worker, {
                "t": MESSAGE, "call": call_id, "principal": ctx.principal,
                "answers": {k: msgspec.to_builtins(v) for k, v in answers.items()}}, timeout=timeout)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise errors.internal_error(f"proxy: a relayed {method} came back malformed")
        return result

    async def handle_task(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Serve a task request relayed from another worker, on this (the owner's) backend session."""
        from . import _tasks_legacy

        fw = self.forwarder
        backend = fw.backend
        method, raw, principal, caps = msg.get("method"), msg.get("params"), msg.get("principal"), msg.get("caps")
        if method not in _TASK_METHODS or not isinstance(raw, dict) or backend.bridge is None:
            raise errors.invalid_params("a malformed relayed task request")
        who = principal if isinstance(principal, str) else None
        session = await backend.bridge.run(backend.session_for(who, caps if isinstance(caps, dict) else None))
        params = msgspec.convert(raw, _TaskParams)
        if method == "tasks/result":
            call = BackendCall("tasks/result", who)
            call.task_id = params.taskId
            await backend.bridge.run(session.start_call(call, "tasks/result", {"taskId": params.taskId},
                                                        progress=False, log_level=None))
            return await self._step(call)
        result = await _tasks_legacy.forward(session, method, params, legacy_front=bool(msg.get("legacy_front")),
                                             waiting=fw.waiting, principal=who)
        return {"result": msgspec.to_builtins(result)}


#: The task requests relayed to the worker owning the task.
_TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel", "tasks/result")


class _TaskParams(msgspec.Struct):
    """A relayed task request's params (what :func:`._tasks_legacy.forward` reads of them)."""

    taskId: str | None = None
    cursor: str | None = None
    inputResponses: dict[str, Any] = {}
