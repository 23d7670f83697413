"""Backend calls that wait for the front client's answer.

A backend request (``tools/call``, ``prompts/get``, ``resources/read``) runs as a
:class:`BackendCall` on the backend loop. When the backend asks for input (a legacy session's
``elicitation/create``, ``sampling/createMessage`` or ``roots/list`` request, or a modern
backend's ``input_required``), the call posts the question as an event and waits for its
answer. The front handler relays the question to its own client: a real request for a legacy
front client, an ``input_required`` result for a 2026-07-28 one. In the MRTR case the handler
is unwound while the backend call keeps waiting; :class:`PendingCalls` keeps it, keyed by an
unguessable id that goes into the sealed ``requestState``, until the retry brings the answer
(bounded in number, expiring, bound to the caller's principal).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..protocol import errors

#: Short names of input-request methods, for the question keys the front client sees.
_KINDS = {"elicitation/create": "elicit", "sampling/createMessage": "sample", "roots/list": "roots"}


class Event:
    """What a backend call tells the front handler: progress, a log message, a question, or its end."""

    __slots__ = ("kind", "data", "key")

    def __init__(self, kind: str, data: Any = None, key: str | None = None) -> None:
        self.kind = kind  # "progress" | "log" | "ask" | "done" | "error"
        self.data = data
        self.key = key


class BackendCall:
    """One forwarded request on the backend loop, and the questions it asks on the way."""

    def __init__(self, method: str, principal: str | None, *, max_events: int = 1000) -> None:
        self._id: str | None = None
        self.method = method
        self.principal = principal
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.max_events = max_events
        self.task: asyncio.Task[None] | None = None
        #: Questions not answered yet, by key: (the input request, the future its answer sets).
        self.questions: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}
        self._counts: dict[str, int] = {}
        self.done = False
        #: The 2025-11-25 task whose ``tasks/result`` this is: it gets that task's questions only.
        self.task_id: str | None = None

    @property
    def id(self) -> str:
        """The unguessable id the call is parked under (made when first needed)."""
        if self._id is None:
            self._id = secrets.token_urlsafe(32)
        return self._id

    # ---------------------------------------------------------------- backend side
    def post(self, event: Event) -> None:
        if event.kind in ("progress", "log") and self.events.qsize() >= self.max_events:
            return  # a flood of notifications is dropped, never buffered without bound
        self.events.put_nowait(event)

    async def ask(self, method: str, params: dict[str, Any] | None) -> Any:
        """Relay one backend question to the front and await its answer. Questions asked
        together (a backend asking several at once) reach the front client together."""
        if self.done:
            raise errors.internal_error("the proxied request is over")
        kind = _KINDS.get(method, "input")
        n = self._counts[kind] = self._counts.get(kind, 0) + 1
        key = f"{kind}-{n}"
        question = {"method": method, **({"params": params} if params is not None else {})}
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.questions[key] = (question, fut)
        self.post(Event("ask", question, key))
        try:
            return await fut
        finally:
            self.questions.pop(key, None)

    # ---------------------------------------------------------------- front side (run on the backend loop)
    async def next_event(self) -> Event:
        return await self.events.get()

    async def open_questions(self, settle: float = 0.0) -> dict[str, dict[str, Any]]:
        """The questions still waiting for an answer; ``settle`` seconds first, so that
        questions the backend sends together are asked together."""
        if settle > 0:
            await asyncio.sleep(settle)
        return {k: q for k, (q, fut) in self.questions.items() if not fut.done()}

    async def answer(self, key: str, value: Any) -> None:
        found = self.questions.get(key)
        if found is not None and not found[1].done():
            found[1].set_result(value)

    async def refuse(self, key: str, exc: BaseException) -> None:
        found = self.questions.get(key)
        if found is not None and not found[1].done():
            found[1].set_exception(exc)

    def cancel(self) -> None:
        self.done = True
        for _, fut in list(self.questions.values()):
            if not fut.done():
                fut.set_exception(errors.internal_error("the proxied request was cancelled"))
        if self.task is not None and not self.task.done():
            self.task.cancel()


class PendingCalls:
    """Backend calls parked between an ``input_required`` answer and its retry.

    At most ``limit`` are kept (the oldest is cancelled to make room); each expires ``ttl``
    seconds after it was parked (then cancelled). ``take`` hands a call out once, and only
    to the principal that started it.
    """

    def __init__(self, cancel: Callable[[BackendCall], None], *, limit: int = 1000, ttl: float = 600.0) -> None:
        self._calls: OrderedDict[str, tuple[BackendCall, float]] = OrderedDict()
        self._cancel = cancel
        self.limit = limit
        self.ttl = ttl
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._calls)

    def park(self, call: BackendCall) -> None:
        dropped: list[BackendCall] = []
        with self._lock:
            dropped.extend(self._expired())
            while len(self._calls) >= self.limit:
                dropped.append(self._calls.popitem(last=False)[1][0])
            self._calls[call.id] = (call, time.monotonic() + self.ttl)
        for old in dropped:
            self._cancel(old)

    def take(self, call_id: str, principal: str | None) -> BackendCall | None:
        dropped: list[BackendCall] = []
        with self._lock:
            dropped.extend(self._expired())
            found = self._calls.get(call_id)
            call = None
            if found is not None and secrets.compare_digest(str(found[0].principal), str(principal)):
                call = self._calls.pop(call_id)[0]
        for old in dropped:
            self._cancel(old)
        return call

    def _expired(self) -> list[BackendCall]:
        now = time.monotonic()
        out = []
        while self._calls:
            cid, (call, expires) = next(iter(self._calls.items()))
            if expires > now:
                break
            del self._calls[cid]
            out.append(call)
        return out

    def clear(self) -> list[BackendCall]:
        with self._lock:
            calls = [c for c, _ in self._calls.values()]
            self._calls.clear()
        return calls
