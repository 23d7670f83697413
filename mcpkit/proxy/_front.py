"""The proxy's front: an ordinary :class:`~mcpkit.Server` whose methods forward to a backend.

Every method is answered through the Server's public hooks (``advertise`` and
``wrap_method``), so the front serves both eras, over any transport, and checks every
request with the same inbound ladder as any mcpkit server before anything reaches the
backend. What differs between a request's era and the backend's is translated here:

- questions the backend asks (elicitation, sampling, roots) reach a 2026-07-28 front client
  as ``input_required`` (the waiting backend call parked under an id sealed in the
  ``requestState``), and a 2025-11-25 one as real requests on its session;
- results are checked against the wire types; cache hints pass through from a modern
  backend, and come from the proxy's options for a legacy one;
- a backend failure is one JSON-RPC error naming what happened.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ..errors import MCPError
from ..protocol import errors
from ..protocol import meta as M
from ..protocol import types as t
from ..server import InputRequired, Server
from ._pending import BackendCall, PendingCalls

if TYPE_CHECKING:
    from ..server import Context
    from ._backend import Backend

log = logging.getLogger("mcpkit.proxy")

#: Where a parked backend call's id travels in ``ctx.state`` (sealed into the requestState).
STATE_KEY = "mcpkit.proxy/call"

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


def front_capabilities(backend_caps: dict[str, Any]) -> t.ServerCapabilities:
    """What the front advertises: what the backend has, and the proxy can carry."""
    keep = {k: v for k, v in backend_caps.items()
            if k in ("tools", "resources", "prompts", "completions", "logging") and isinstance(v, dict)}
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
        self.front_loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        server = self.server
        for method in _LISTS:
            server.wrap_method(method, self.forward_list)
        for method in _ASKING:
            server.wrap_method(method, self.forward_asking)
        server.wrap_method("completion/complete", self.forward_complete)
        server.wrap_method("subscriptions/listen", self.note_loop)
        self.backend.on_change = self._changed

    # ---------------------------------------------------------------- change notifications
    def _changed(self, method: str, params: dict[str, Any]) -> None:
        """A backend change (on the backend loop) published on the front's bus (on its loop)."""
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
        raw = dict(raw)
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
    async def forward_list(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        method = ctx.method
        out: dict[str, Any] = {}
        if params.cursor is not UNSET:
            out["cursor"] = params.cursor
        raw = await self.backend.request(method, out or None)
        return self._typed(method, _LISTS[method], raw)

    async def forward_complete(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        raw = await self.backend.request("completion/complete", self._params(ctx, params))
        return self._typed("completion/complete", t.CompleteResult, raw)

    # ---------------------------------------------------------------- methods that may ask
    def _cancel(self, call: BackendCall) -> None:
        bridge = self.backend.bridge
        if bridge is not None:
            bridge.call_soon(call.cancel)

    async def forward_asking(self, ctx: Context, params: Any, call_next: Any) -> Any:
        """``tools/call``, ``prompts/get``, ``resources/read``: the backend may ask questions."""
        self._seen()
        method = ctx.method
        bridge = self.backend.bridge
        assert bridge is not None
        call_id = ctx.state.get(STATE_KEY)
        if isinstance(call_id, str):
            call = self.pending.take(call_id, ctx.principal)
            if call is None:
                raise errors.invalid_params(f"{method}: the proxied request this retry answers has expired or was "
                                            "already answered; send the request again without requestState")
            if call.key is not None and call.question is not None:
                await self._answer(ctx, call, call.key, call.question)
        else:
            call = BackendCall(method, ctx.principal)
            await bridge.run(self.backend.start_call(
                call, method, self._params(ctx, params), progress=ctx.progress_token is not None,
                log_level=ctx.log_level))
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
                    assert event.key is not None
                    await self._answer(ctx, call, event.key, event.data)
                elif event.kind == "done":
                    return self._typed(method, _ASKING[method], event.data)
                else:
                    raise self._error(method, params, event.data)
        except InputRequired:
            raise  # the call stays parked; the retry finds it by the id in its requestState
        except BaseException:
            self._cancel(call)
            raise

    async def _answer(self, ctx: Context, call: BackendCall, key: str, question: dict[str, Any]) -> None:
        """Ask the front client ``question`` (a real request, or MRTR) and hand the answer back."""
        bridge = self.backend.bridge
        assert bridge is not None
        ctx.state[STATE_KEY] = call.id
        self.pending.park(call)
        try:
            answer = await ctx.ask({key: question})
        except InputRequired:
            raise
        except MCPError as exc:
            # The front cannot answer (e.g. -32021, the client lacks the capability): the backend's
            # question fails with the same error, and so does this request.
            self.pending.take(call.id, ctx.principal)
            await bridge.run(call.refuse(key, exc))
            raise
        except BaseException:
            self.pending.take(call.id, ctx.principal)
            raise
        self.pending.take(call.id, ctx.principal)
        del ctx.state[STATE_KEY]
        await bridge.run(call.answer(key, msgspec.to_builtins(answer[key])))
