"""The proxy's backend: one :class:`~mcpkit.Client` to the server being fronted, on its own loop.

It is connected before serving starts (so the front knows what the backend offers), speaks
whichever era the backend does, and answers a legacy session's questions (its server-to-client
requests) by relaying them to the front request they belong to (:mod:`._pending`). A modern
backend's ``input_required`` is not answered here: it comes back as a result, and the front
passes it on (:mod:`._front`).

Which front request a legacy backend's question belongs to: a stdio session carries no link
between a server-to-client request and the request it serves. The question goes to the one
forwarded request in flight; when several are in flight it goes to the latest only if they all
come from the same caller, and is refused otherwise (never sent to someone else's client).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPError, NoAnswer, ProtocolError, RequestNotRetried, TransportError
from ..protocol import errors
from ..protocol import meta as M
from ._bridge import LoopThread
from ._pending import BackendCall, Event
from ._pool import SessionPool

if TYPE_CHECKING:
    from ..client import Client

log = logging.getLogger("mcpkit.proxy")

#: A 2025-11-25 server's mark on a message that belongs to a task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Notifications that change what the front serves.
CHANGE_NOTES = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                          "notifications/resources/list_changed", "notifications/resources/updated"})
#: A front request's params the backend is not given as they are (see :meth:`Backend.params_for`).
_NOT_PASSED = frozenset({"_meta", "inputResponses", "requestState", "task"})


def describe_target(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, (list, tuple)):
        return " ".join(str(a) for a in target)
    name = getattr(target, "name", None)
    return f"in-process server {name!r}" if name else repr(target)


class Backend:
    """The server behind the proxy (a command line, an ``http(s)`` URL or a ``Server``)."""

    def __init__(self, target: Any, *, connect_timeout: float = 10.0, request_timeout: float = 60.0,
                 call_timeout: float = 600.0, declare: Sequence[str] = ("elicitation", "sampling", "roots"),
                 label: str | None = None, max_sessions: int = 16, idle_ttl: float = 300.0,
                 bridge: LoopThread | None = None, **client_options: Any) -> None:
        for name in declare:
            if name not in ("elicitation", "sampling", "roots"):
                raise ValueError(f"declare: unknown client capability {name!r} (elicitation, sampling, roots)")
        if connect_timeout <= 0 or request_timeout <= 0 or call_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self.target = target
        self.label = label or describe_target(target)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.call_timeout = call_timeout
        self.declare = tuple(declare)
        self.client_options = client_options
        self.client: Client | None = None
        #: "modern" or "legacy", once connected.
        self.era: str | None = None
        #: The backend's card (a DiscoverResult; for a legacy backend, built from initialize).
        self.card: dict[str, Any] = {}
        self.version: str | None = None
        #: Called (on the backend loop) with each change notification: (method, params).
        self.on_change: Callable[[str, dict[str, Any]], None] | None = None
        self.inflight: list[BackendCall] = []  # backend loop only
        self.bridge: LoopThread | None = None
        #: A loop shared with other backends (a host's mounts): used, never stopped, here.
        self.shared_bridge = bridge
        self._listener: asyncio.Task[None] | None = None
        self._level_rank: int | None = None  # a legacy backend's session log level, once set
        #: The backend's extensions the front carries (their declarations reach the backend).
        self.extensions: frozenset[str] = frozenset()
        #: A legacy backend's sessions by caller and client capabilities (:mod:`._pool`).
        self.pool = SessionPool(self, max_sessions=max_sessions, idle_ttl=idle_ttl)
        #: The resource URIs the front's clients follow (a modern backend's listen stream).
        self.followed: list[str] = []
        #: A legacy backend's tools' ``execution.taskSupport`` (:mod:`._tasks_legacy`).
        self.task_support: dict[str, str | None] = {}
        #: The resources a legacy backend session is subscribed to.
        self.subscribed: set[str] = set()

    # ---------------------------------------------------------------- lifecycle
    def connect(self) -> None:
        """Start the backend loop and connect (blocking; raises the connection's error)."""
        if self.bridge is None:
            self.bridge = self.shared_bridge or LoopThread()
        try:
            self.bridge.run_sync(self.open(), self.connect_timeout + 5.0)
        except BaseException:
            self.close()
            raise

    async def open(self) -> None:
        """Connect the backend client (on the backend loop)."""
        from ..client import Client

        options: dict[str, Any] = {"timeout": self.connect_timeout, "probe_timeout": min(5.0, self.connect_timeout),
                                   "cache": False, "on_notification": self._note, **self.client_options}
        if "elicitation" in self.declare:
            options.setdefault("elicitation", self._elicit)
            options.setdefault("elicitation_modes", ("form", "url"))
        if "sampling" in self.declare:
            options.setdefault("sampling", self._sample)
        if "roots" in self.declare:
            options.setdefault("roots", self._roots)
        client = Client(self.target, **options)
        try:
            await asyncio.wait_for(client.start(), self.connect_timeout)
        except TimeoutError:
            await client.close()
            raise TransportError(f"{self.label}: no answer within {self.connect_timeout:g} s") from None
        except BaseException:
            await client.close()
            raise
        self.client = client
        self.era = client.era
        self.card = await client.discover_raw()
        self.version = client.legacy_version if client.era == "legacy" else client.protocol_version
        if client.era != "legacy":
            self._listener = asyncio.ensure_future(self._listen())

    async def _listen(self) -> None:
        """A modern backend's list changes and the resources the front follows
        (:attr:`followed`), from one ``subscriptions/listen`` stream."""
        caps = self.card.get("capabilities") or {}

        def changes(name: str) -> bool:
            cap = caps.get(name)
            return isinstance(cap, dict) and bool(cap.get("listChanged"))

        tools, prompts, resources = changes("tools"), changes("prompts"), changes("resources")
        uris = self.followed
        if not (tools or prompts or resources or uris) or self.client is None:
            return
        while True:
            try:
                async for _note in self.client.listen(tools=tools, prompts=prompts, resources_list=resources,
                                                      resources=uris):
                    pass  # every note reaches _note through the client's on_notification
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("the backend's listen stream ended (%s); opening it again", exc)
            await asyncio.sleep(1.0)

    async def follow(self, uri: str, on: bool, followed: list[str]) -> None:
        """Subscribe the backend to ``uri`` (or leave it); ``followed``: every URI followed now."""
        if self.client is None:
            return
        if self.era == "legacy":
            caps = (self.card.get("capabilities") or {}).get("resources")
            if not (isinstance(caps, dict) and caps.get("subscribe")):
                return
            method = "resources/subscribe" if on else "resources/unsubscribe"
            (self.subscribed.add if on else self.subscribed.discard)(uri)
            try:
                await self.client.request(method, {"uri": uri}, timeout=self.request_timeout)
            except Exception as exc:
                log.warning("the backend refused %s %s: %s", method, uri, exc)
            return
        self.followed = followed  # a modern backend: one listen stream, opened again with the new set
        if self._listener is not None:
            self._listener.cancel()
        self._listener = asyncio.ensure_future(self._listen())

    def close(self) -> None:
        """Disconnect (a stdio backend is stopped) and stop the backend loop."""
        bridge = self.bridge
        if bridge is None:
            return
        self.bridge = None
        try:
            bridge.run_sync(self.shutdown(), 5.0)
        except Exception:  # the loop is going away regardless
            log.debug("closing the backend failed", exc_info=True)
        if bridge is not self.shared_bridge:
            bridge.stop()

    def busy(self) -> bool:
        """Whether a forwarded request is in flight (or parked for an MRTR retry) here, or a
        front client follows a resource on this session."""
        return bool(self.subscribed) or any(not call.done for call in self.inflight)

    async def session_for(self, principal: str | None, client_caps: dict[str, Any] | None) -> Backend:
        """The session that serves a request of ``principal`` with ``client_caps``: this one
        for a modern backend, the pool's for a legacy one (on the backend loop)."""
        if self.era != "legacy":
            return self
        return await self.pool.session_for(principal, client_caps)

    async def shutdown(self) -> None:
        """Disconnect the client (a stdio backend is stopped) and the pool's sessions; the
        loop keeps running."""
        await self.pool.close()
        if self._listener is not None:
            self._listener.cancel()
        for call in list(self.inflight):
            call.cancel()
        if self.client is not None:
            await self.client.close()

    # ---------------------------------------------------------------- notifications
    def _note(self, method: str, params: dict[str, Any]) -> None:
        if method in CHANGE_NOTES and self.on_change is not None:
            self.on_change(method, params)
        elif method == "notifications/message" and self.era == "legacy":
            # A legacy session's log message tied to no request stream (stdio, the GET stream):
            # it goes to the request it most likely belongs to, as a question would.
            call = self._route()
            if call is not None:
                call.post(Event("log", params))

    async def _log_level(self, level: str) -> None:
        """A legacy backend logs at the session's level: lower it to ``level`` when a front
        request asks for more (the front filters each message by its own request's level)."""
        rank = M.LOG_LEVEL_RANK.get(level)
        caps = self.card.get("capabilities") or {}
        if rank is None or self.client is None or not isinstance(caps.get("logging"), dict):
            return
        if self._level_rank is not None and self._level_rank <= rank:
            return
        self._level_rank = rank
        try:
            await self.client.request("logging/setLevel", {"level": level}, timeout=self.request_timeout)
        except Exception as exc:
            log.info("the backend refused logging/setLevel %s: %s", level, exc)

    # ---------------------------------------------------------------- the backend's questions
    def _route(self, task_id: str | None = None) -> BackendCall | None:
        if task_id is not None:  # a 2025-11-25 task's question: to that task's tasks/result
            for c in self.inflight:
                if c.task_id == task_id and not c.done:
                    return c
            return None
        live = [c for c in self.inflight if not c.done and c.task_id is None]
        if not live:
            return None
        if len({c.principal for c in live}) > 1:
            return None  # several callers: the question could reach the wrong one
        return live[-1]

    async def _relay(self, method: str, params: Any, raw: Any = None) -> Any:
        meta = raw.get("_meta") if isinstance(raw, dict) else None
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        task_id = related.get("taskId") if isinstance(related, dict) else None
        call = self._route(task_id if isinstance(task_id, str) else None)
        if call is None:
            raise errors.MCPError(errors.INTERNAL_ERROR, f"{method}: the proxy cannot tell which client request "
                                  "this is for (none, or several from different callers, are in flight)")
        return await call.ask(method, params)

    async def _elicit(self, params: Any) -> Any:
        from ..client import asking_params

        return await self._relay("elicitation/create", _plain(params), asking_params())

    async def _sample(self, params: Any) -> Any:
        from ..client import asking_params

        return await self._relay("sampling/createMessage", _plain(params), asking_params())

    async def _roots(self) -> Any:
        answer = await self._relay("roots/list", None)
        return answer.get("roots", []) if isinstance(answer, dict) else []

    # ---------------------------------------------------------------- forwarding
    def params_for(self, params: dict[str, Any], client_caps: dict[str, Any] | None) -> dict[str, Any]:
        """A front request's params as the backend gets them: the front's own ``_meta`` is
        not passed on; a modern backend is told the front client's input capabilities."""
        out = dict(params)
        for k in params.keys() & _NOT_PASSED:  # (a set operation in C: usually just _meta)
            del out[k]
        if self.era != "legacy" and client_caps is not None:
            caps = {k: v for k, v in client_caps.items() if k in self.declare}
            declared = client_caps.get("extensions")
            if isinstance(declared, dict) and self.extensions:
                caps["extensions"] = {k: v for k, v in declared.items() if k in self.extensions}
            out["_meta"] = {M.CLIENT_CAPABILITIES: caps}
        return out

    async def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """One request that asks nothing of the client (lists, completion), from any loop."""
        assert self.bridge is not None
        return await self.bridge.run(self._request(method, params))

    async def _request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        if self.client is None:
            raise errors.internal_error("the proxy's backend is not connected")
        try:
            return await self.client.request(method, params, timeout=self.request_timeout)
        except MCPError:
            raise
        except Exception as exc:
            raise self.failure(method, exc) from None

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A modern backend's call that wants no progress or log messages, awaited in place on
        the backend loop (no :class:`BackendCall`, task or event queue: nothing can come
        before its answer; its ``input_required`` comes back as it is)."""
        if self.client is None:
            raise errors.internal_error("the proxy's backend is not connected")
        try:
            return await self.client.request(method, params, timeout=self.call_timeout, answer_input=False)
        except (MCPError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise self.failure(method, exc) from None

    async def start_call(self, call: BackendCall, method: str, params: dict[str, Any], *, progress: bool,
                         log_level: str | None) -> None:
        """Start ``call`` on the backend loop; its events say how it goes."""
        self.inflight.append(call)
        call.task = asyncio.ensure_future(self._run(call, method, params, progress, log_level))

    async def _run(self, call: BackendCall, method: str, params: dict[str, Any], progress: bool,
                   log_level: str | None) -> None:
        on_progress = None
        if progress:
            def on_progress(done: float, total: float | None, message: str | None) -> None:
                call.post(Event("progress", (done, total, message)))
        try:
            if self.client is None:
                raise errors.internal_error("the proxy's backend is not connected")
            if log_level is not None and self.era == "legacy":
                await self._log_level(log_level)
            # A modern backend's input_required comes back as it is: the front passes it on.
            result = await self.client.request(method, params, progress=on_progress, log_level=log_level,
                                               on_log=(lambda p: call.post(Event("log", p))) if log_level else None,
                                               timeout=self.call_timeout, answer_input=self.era == "legacy")
            call.post(Event("done", result))
        except asyncio.CancelledError:
            raise
        except MCPError as exc:
            call.post(Event("error", exc))
        except Exception as exc:
            call.post(Event("error", self.failure(method, exc)))
        finally:
            call.done = True
            if call in self.inflight:
                self.inflight.remove(call)

    def failure(self, method: str, exc: BaseException) -> MCPError:
        """The one error the front client gets when the backend failed ``method``."""
        if isinstance(exc, RequestNotRetried):
            text = f"the backend server exited while handling {method}; it was restarted, but the request was " \
                   "not sent again (it may not be safe to repeat)"
        elif isinstance(exc, NoAnswer):
            text = f"the backend server did not answer {method} in time"
        elif isinstance(exc, ProtocolError):
            text = f"the backend server's answer to {method} is malformed: {exc}"
        elif isinstance(exc, TransportError):
            text = f"the backend server is unavailable: {exc}"
        else:
            log.exception("proxying %s failed", method)
            text = f"proxying {method} failed"
        return errors.internal_error(f"proxy: {text}")


def _plain(params: Any) -> Any:
    out = msgspec.to_builtins(params)
    if isinstance(out, dict):
        out.pop("_meta", None)
    return out
