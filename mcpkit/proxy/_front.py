"""The proxy's front: an ordinary :class:`~mcpkit.Server` whose methods forward to a backend.

Every method is answered through the Server's public hooks (``advertise`` and
``wrap_method``), so the front serves both eras, over any transport, and checks every
request with the same inbound ladder as any mcpkit server before anything reaches the
backend. What differs between a request's era and the backend's is translated here:

- questions a legacy backend asks (elicitation, sampling, roots) reach a 2026-07-28 front
  client as ``input_required`` (the waiting backend call parked under an id sealed in the
  ``requestState``), and a 2025-11-25 one as real requests on its session;
- a modern backend's ``input_required`` reaches a 2026-07-28 front client as it is (same
  keys, all questions at once; the backend's ``requestState`` sealed inside the front's, so
  nothing is kept in the proxy), and a 2025-11-25 one as real requests, the retry sent by
  the proxy;
- results are checked against the wire types; cache hints pass through from a modern
  backend, and come from the proxy's options for a legacy one;
- a backend failure is one JSON-RPC error naming what happened.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ..errors import MCPError
from ..protocol import errors, tasks, versions
from ..protocol import headers as H
from ..protocol import meta as M
from ..protocol import types as t
from ..server import InputRequired, Server
from . import _extensions, _tasks_legacy, _tasks_modern
from ._pending import BackendCall, PendingCalls
from ._subscriptions import Upstream

if TYPE_CHECKING:
    from ..server import Context
    from ._backend import Backend
    from ._relay import Relay

log = logging.getLogger("mcpkit.proxy")

#: Where a parked backend call's id travels in ``ctx.state`` (sealed into the requestState).
STATE_KEY = "mcpkit.proxy/call"
#: Which process holds the parked call (its backend session lives there), in ``ctx.state``.
WORKER_KEY = "mcpkit.proxy/worker"
#: This process's id for WORKER_KEY (random: a restarted worker is another one).
WORKER_ID = secrets.token_urlsafe(12)
#: Where a modern backend's own requestState travels in ``ctx.state`` (sealed into the front's).
BACKEND_STATE_KEY = "mcpkit.proxy/backend"
#: Input rounds the proxy drives itself for a legacy front client (a modern backend that keeps asking).
_MAX_ROUNDS = 16
#: How long a legacy backend's question waits for others sent with it (asked together).
_SETTLE = 0.005

_LISTS: dict[str, type[t.CacheableResult]] = {
    "tools/list": t.ListToolsResult,
    "resources/list": t.ListResourcesResult,
    "resources/templates/list": t.ListResourceTemplatesResult,
    "prompts/list": t.ListPromptsResult,
}
_ASKING: dict[str, type[t.Result]] = {
    "tools/call": t.CallToolResult,
    "prompts/get": t.GetPromptResult,
    "resources/read": t.ReadResourceResult,
}


def front_capabilities(backend_caps: dict[str, Any], extensions: dict[str, dict[str, Any]] | None = None
                       ) -> t.ServerCapabilities:
    """What the front advertises: what the backend has, and the proxy can carry
    (``extensions``: the backend's that it carries, with their settings)."""
    keep = {k: v for k, v in backend_caps.items()
            if k in ("tools", "resources", "prompts", "completions", "logging") and isinstance(v, dict)}
    if extensions:
        keep["extensions"] = extensions
    try:
        return msgspec.convert(keep, t.ServerCapabilities)
    except msgspec.ValidationError as exc:
        raise MCPError(errors.INTERNAL_ERROR, f"the backend's capabilities are malformed: {exc}") from None


class Forwarder:
    """The forwarding wrappers of one proxy Server."""

    def __init__(self, server: Server, backend: Backend, *, ttl_ms: int | None, cache_scope: str | None,
                 pending_limit: int, pending_ttl: float) -> None:
        self.server = server
        self.backend = backend
        card = backend.card
        if backend.era == "legacy":
            self.ttl_ms = ttl_ms if ttl_ms is not None else 0
            self.cache_scope = cache_scope or ("private" if server.auth is not None else "public")
        else:  # a modern backend's own hints pass through; these only fill in a missing one
            self.ttl_ms = ttl_ms if ttl_ms is not None else int(card.get("ttlMs") or 0)
            self.cache_scope = cache_scope or str(card.get("cacheScope") or "private")
        self.pending = PendingCalls(self._cancel, limit=pending_limit, ttl=pending_ttl)
        #: This worker's id in a parked call's requestState; with Redis, the node's, and retries
        #: that reach another worker are relayed to it (:mod:`._relay`).
        self.worker_id = WORKER_ID
        self.relay: Relay | None = None
        #: 2025-11-25 tasks' questions held for 2026-07-28 front clients (:mod:`._tasks_legacy`).
        self.waiting = _tasks_legacy.Waiting(limit=pending_limit)
        self.front_loop: asyncio.AbstractEventLoop | None = None
        #: The backend tools' ``x-mcp-header`` annotations, by tool name (replaced whole on change).
        self.header_maps: dict[str, dict[str, tuple[str, ...]]] = {}
        #: Rewrites a backend result (method, raw dict) before it is typed (a mount's names).
        self.rewrite: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
        self._refreshing: asyncio.Future[None] | None = None
        #: The resources the front's clients follow, followed on the backend.
        self.upstream = Upstream(backend)

    def install(self) -> None:
        server = self.server
        for method in _LISTS:
            server.wrap_method(method, self.forward_list)
        for method in _ASKING:
            server.wrap_method(method, self.forward_asking)
        server.wrap_method("completion/complete", self.forward_complete)
        server.wrap_method("subscriptions/listen", self.note_loop)
        self.backend.on_change = self._changed
        _extensions.install(server, self.backend, self.forward_extension)
        server.watch_subscriptions(self.upstream.changed)

    # ---------------------------------------------------------------- tool header annotations
    def load_tool_headers(self) -> None:
        """Read the backend tools' ``x-mcp-header`` annotations (blocking; at startup), so the
        front checks ``Mcp-Param-*`` headers against them as a server checks its own tools'."""
        bridge = self.backend.bridge
        if bridge is not None and isinstance((self.backend.card.get("capabilities") or {}).get("tools"), dict):
            bridge.run_sync(self._refresh_tool_headers(), self.backend.request_timeout + 5.0)

    async def _refresh_tool_headers(self) -> None:
        client = self.backend.client
        if client is None:
            return
        try:
            tools = await client.list_tools(timeout=self.backend.request_timeout, cache="refresh")
        except Exception as exc:  # the front then checks no Mcp-Param headers; the backend still does
            log.warning("could not read the backend's tools for their header annotations: %s", exc)
            return
        maps: dict[str, dict[str, tuple[str, ...]]] = {}
        for tool in tools:
            try:
                found = H.header_annotations(msgspec.to_builtins(tool.inputSchema))
            except H.InvalidHeaderAnnotation:
                continue
            if found:
                maps[tool.name] = found
        self.header_maps = maps

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        return self.header_maps.get(name)

    def _changed_headers(self, method: str) -> None:
        """On the backend loop: the backend's tools changed, read their annotations again."""
        if method == "notifications/tools/list_changed":
            self._refreshing = asyncio.ensure_future(self._refresh_tool_headers())

    # ---------------------------------------------------------------- change notifications
    def _changed(self, method: str, params: dict[str, Any]) -> None:
        """A backend change (on the backend loop) published on the front's bus (on its loop)."""
        self._changed_headers(method)
        loop = self.front_loop
        if loop is None or loop.is_closed():
            return
        server = self.server
        if method == "notifications/tools/list_changed":
            loop.call_soon_threadsafe(server.notify_tools_changed)
        elif method == "notifications/prompts/list_changed":
            loop.call_soon_threadsafe(server.notify_prompts_changed)
        elif method == "notifications/resources/list_changed":
            loop.call_soon_threadsafe(server.notify_resources_changed)
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            loop.call_soon_threadsafe(server.notify_resource_updated, params["uri"])

    def _seen(self) -> None:
        if self.front_loop is None:
            self.front_loop = asyncio.get_running_loop()

    async def note_loop(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        return await call_next(ctx, params)

    # ---------------------------------------------------------------- results
    def _params(self, ctx: Context, params: Any) -> dict[str, Any]:
        raw = msgspec.to_builtins(params)
        return self.backend.params_for(raw if isinstance(raw, dict) else {}, ctx.client_capabilities)

    def _typed(self, method: str, typ: type[Any], raw: dict[str, Any]) -> Any:
        raw = dict(raw) if self.rewrite is None else self.rewrite(method, raw)
        meta = raw.get("_meta")
        if isinstance(meta, dict) and M.SERVER_INFO in meta:
            meta = {k: v for k, v in meta.items() if k != M.SERVER_INFO}  # the front names itself
            if meta:
                raw["_meta"] = meta
            else:
                del raw["_meta"]
        raw.pop("resultType", None)
        if issubclass(typ, t.CacheableResult):
            raw.setdefault("ttlMs", self.ttl_ms)
            raw.setdefault("cacheScope", self.cache_scope)
        try:
            return msgspec.convert(raw, typ)
        except msgspec.ValidationError as exc:
            raise errors.internal_error(f"proxy: the backend server's answer to {method} is malformed: {exc}") from None

    @staticmethod
    def _error(method: str, params: Any, exc: MCPError) -> MCPError:
        if exc.code == errors.LEGACY_RESOURCE_NOT_FOUND and method == "resources/read":
            return errors.ResourceNotFound(params.uri)  # each era's own code at the front
        return exc

    # ---------------------------------------------------------------- methods that ask nothing
    async def _session(self, ctx: Context) -> Backend:
        """The backend session for this request's caller and client capabilities (a legacy
        backend's, from the pool; a modern backend is stateless: the one client)."""
        backend = self.backend
        if backend.era != "legacy" or backend.bridge is None:
            return backend
        return await backend.bridge.run(backend.session_for(ctx.principal, ctx.client_capabilities))

    async def forward_list(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        method = ctx.method
        out: dict[str, Any] = {}
        if params.cursor is not UNSET:
            out["cursor"] = params.cursor
        raw = await (await self._session(ctx)).request(method, out or None)
        return self._typed(method, _LISTS[method], raw)

    async def forward_complete(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        raw = await (await self._session(ctx)).request("completion/complete", self._params(ctx, params))
        return self._typed("completion/complete", t.CompleteResult, raw)

    async def forward_extension(self, method: str, typ: type[Any], ctx: Context, params: Any) -> Any:
        """A carried extension's method (skills, tasks): one backend request, its result typed."""
        self._seen()
        if self.backend.era == "legacy" and method.startswith("tasks/"):  # 2025-11-25 tasks
            legacy_front = not versions.is_modern(ctx.protocol_version)
            if method in _tasks_legacy.LEGACY_METHODS and not legacy_front:
                raise errors.method_not_found(method)
            task_id, relay = getattr(params, "taskId", None), self.relay
            owner = await relay.task_owner(task_id) if relay is not None and isinstance(task_id, str) else None
            if relay is not None and owner is not None:  # the task lives in another worker's backend session
                raw = await relay.task(ctx, method, params, owner, legacy_front=legacy_front)
                return raw if legacy_front else msgspec.convert(raw, typ)
            session = await self._session(ctx)
            if method == "tasks/result":  # it waits for the task, whose questions come meanwhile
                return await self._drive(ctx, params, None, {"taskId": params.taskId}, final=False, session=session,
                                         task_id=params.taskId)
            return await _tasks_legacy.forward(session, method, params, legacy_front=legacy_front,
                                               waiting=self.waiting, principal=ctx.principal)
        if method.startswith("tasks/") and not versions.is_modern(ctx.protocol_version):
            if method == "tasks/update":  # (a 2026-07-28 backend's tasks, as 2025-11-25 ones)
                raise errors.method_not_found(method)
            return await _tasks_modern.forward(self.backend, ctx, method, params)
        if method == "tasks/result":
            raise errors.method_not_found(method)
        send = self._params(ctx, params)
        if getattr(params, "inputResponses", UNSET) is not UNSET:  # tasks/update: the answers are the request
            send["inputResponses"] = msgspec.to_builtins(params.inputResponses)
        raw = await (await self._session(ctx)).request(method, send)
        return self._typed(method, typ, raw)

    # ---------------------------------------------------------------- methods that may ask
    def _cancel(self, call: BackendCall) -> None:
        bridge = self.backend.bridge
        if bridge is not None:
            bridge.call_soon(call.cancel)

    async def forward_asking(self, ctx: Context, params: Any, call_next: Any) -> Any:
        """``tools/call``, ``prompts/get``, ``resources/read``: the backend may ask questions."""
        self._seen()
        if self.backend.era != "legacy":
            return await self._forward_stateless(ctx, params)
        method = ctx.method
        call_id = ctx.state.get(STATE_KEY)
        if isinstance(call_id, str):
            worker = ctx.state.get(WORKER_KEY)
            if worker != self.worker_id and self.relay is not None and isinstance(worker, str):
                return await self.relay.retry(ctx, params, worker, call_id)  # to the worker holding it
            if worker != self.worker_id:
                raise errors.invalid_params(
                    f"{method}: this retry reached another proxy worker than the one whose backend session holds "
                    "the request (each worker has its own backend, and a 2025-11-25 backend's questions wait in "
                    "the worker that asked them); share Redis between the workers (--redis), route a client's "
                    "requests to one worker, or run one worker, and send the request again without requestState")
            call = self.pending.take(call_id, ctx.principal)
            if call is None:
                raise errors.invalid_params(f"{method}: the proxied request this retry answers has expired or was "
                                            "already answered; send the request again without requestState")
            bridge = self.backend.bridge
            assert bridge is not None
            questions = await bridge.run(call.open_questions())
            if questions:
                await self._answer(ctx, call, questions)
            return await self._drive(ctx, params, call)
        session = await self._session(ctx)
        send = self._params(ctx, params)
        front_task = getattr(params, "task", UNSET)  # a 2025-11-25 front client's task-augmented call
        as_is = front_task is not UNSET and not versions.is_modern(ctx.protocol_version) \
            and _tasks_legacy.offers(self.backend)
        if as_is or await self._as_legacy_task(ctx, session, params):
            send["task"] = front_task if as_is else {}
            raw = await self._drive(ctx, params, None, send, session=session, final=False)
            if _tasks_legacy.is_created(raw):
                if self.relay is not None:  # the task's later requests may reach another worker
                    await self.relay.own_task(raw["task"])
                return raw if as_is else _tasks_legacy.created(raw)
            return self._typed(method, _ASKING[method], raw)
        return await self._drive(ctx, params, None, send, session=session)

    async def _as_legacy_task(self, ctx: Context, session: Backend, params: Any) -> bool:
        """Whether this ``tools/call`` runs as a 2025-11-25 task (the front client declared the
        tasks extension, the backend offers tool tasks, and the tool supports them)."""
        if ctx.method != "tools/call" or tasks.EXTENSION_ID not in self.backend.extensions:
            return False
        if not _tasks_legacy.wanted(ctx):
            return False
        bridge = self.backend.bridge
        assert bridge is not None
        return await bridge.run(_tasks_legacy.task_support(session, params.name)) in ("optional", "required")

    async def _forward_stateless(self, ctx: Context, params: Any) -> Any:
        """A modern backend: its ``input_required`` passes through as it is (same keys, every
        question at once), its ``requestState`` sealed inside the front's own, so the retry
        (to any worker) goes back to the backend with nothing kept here. A legacy front
        client gets the questions as real requests, and the proxy sends the retry itself."""
        method = ctx.method
        base = self._params(ctx, params)
        responses = msgspec.to_builtins(params.inputResponses) if params.inputResponses is not UNSET else None
        modern_front = versions.is_modern(ctx.protocol_version)
        as_task = not modern_front and getattr(params, "task", UNSET) is not UNSET and _tasks_modern.offers(self.backend)
        if as_task:  # a 2025-11-25 task-augmented call: the backend's tasks extension, declared
            base = _tasks_modern.declare(base)
        for _ in range(_MAX_ROUNDS):
            out = dict(base)
            if responses is not None:
                out["inputResponses"] = responses
            state = ctx.state.get(BACKEND_STATE_KEY)
            if isinstance(state, str):
                out["requestState"] = state
            result = await self._drive(ctx, params, None, out, final=False)
            if _extensions.is_task(result):  # a tasks backend's handle: the task lives there
                return _tasks_modern.created(result) if as_task else _extensions.task_handle(result)
            if result.get("resultType") != "input_required":
                return self._typed(method, _ASKING[method], result)
            requests = result.get("inputRequests")
            if requests is not None and not isinstance(requests, dict):
                raise errors.internal_error(f"proxy: the backend server's input_required for {method} is malformed")
            new_state = result.get("requestState")
            if isinstance(new_state, str):
                ctx.state[BACKEND_STATE_KEY] = new_state
            else:
                ctx.state.pop(BACKEND_STATE_KEY, None)
            if modern_front:
                raise InputRequired(dict(requests or {}))  # the front answers input_required, ctx.state sealed
            answers = await ctx.ask(dict(requests or {})) if requests else {}
            responses = {k: msgspec.to_builtins(v) for k, v in answers.items()}
        raise errors.internal_error(f"proxy: the backend server still wants input for {method} after "
                                    f"{_MAX_ROUNDS} rounds")

    async def _drive(self, ctx: Context, params: Any, call: BackendCall | None,
                     send: dict[str, Any] | None = None, *, final: bool = True, session: Backend | None = None,
                     task_id: str | None = None) -> Any:
        """Run a backend call (``call``, resumed; or a new one with params ``send``), passing
        its progress and log messages on and its questions to the front, until it ends: its
        result (typed when ``final``, else the raw dict) or its error raised."""
        method = ctx.method
        bridge = self.backend.bridge
        assert bridge is not None
        if call is None and self.backend.era != "legacy" and ctx.progress_token is None and ctx.log_level is None \
                and bridge.on_loop():  # nothing but the answer can come: awaited in place
            try:
                raw = await (session or self.backend).call(method, send or {})
            except MCPError as exc:
                raise self._error(method, params, exc) from None
            return self._typed(method, _ASKING[method], raw) if final else raw
        if call is None:
            call = BackendCall(method, ctx.principal)
            call.task_id = task_id
            await bridge.run((session or self.backend).start_call(
                call, method, send or {}, progress=ctx.progress_token is not None, log_level=ctx.log_level))
        try:
            while True:
                event = await bridge.run(call.next_event())
                if event.kind == "progress":
                    done, total, message = event.data
                    try:
                        await ctx.report_progress(done, total, message)
                    except ValueError:
                        pass  # a backend's progress that goes backwards is not passed on
                elif event.kind == "log":
                    data = event.data if isinstance(event.data, dict) else {}
                    level = data.get("level")
                    if level in M.LOG_LEVEL_RANK:
                        await ctx.log(level, data.get("data"), data.get("logger"))
                elif event.kind == "ask":
                    questions = await bridge.run(call.open_questions(_SETTLE))
                    if questions:  # (else: answered together with an earlier one)
                        await self._answer(ctx, call, questions)
                elif event.kind == "done":
                    return self._typed(method, _ASKING[method], event.data) if final else event.data
                else:
                    raise self._error(method, params, event.data)
        except InputRequired:
            raise  # the call stays parked; the retry finds it by the id in its requestState
        except BaseException:
            self._cancel(call)
            raise

    async def _answer(self, ctx: Context, call: BackendCall, questions: dict[str, dict[str, Any]]) -> None:
        """Ask the front client ``questions`` (real requests, or MRTR) and hand the answers back."""
        bridge = self.backend.bridge
        assert bridge is not None
        ctx.state[STATE_KEY] = call.id
        ctx.state[WORKER_KEY] = self.worker_id
        if self.relay is not None and versions.is_modern(ctx.protocol_version):
            await self.relay.listen()  # this worker's inbox is open before the retry can go elsewhere
        self.pending.park(call)
        try:
            answers = await ctx.ask(questions)
        except InputRequired:
            raise
        except MCPError as exc:
            # The front cannot answer (e.g. -32021, the client lacks the capability): the backend's
            # questions fail with the same error, and so does this request.
            self.pending.take(call.id, ctx.principal)
            for key in questions:
                await bridge.run(call.refuse(key, exc))
            raise
        except BaseException:
            self.pending.take(call.id, ctx.principal)
            raise
        self.pending.take(call.id, ctx.principal)
        del ctx.state[STATE_KEY]
        ctx.state.pop(WORKER_KEY, None)
        for key, answer in answers.items():
            await bridge.run(call.answer(key, msgspec.to_builtins(answer)))
