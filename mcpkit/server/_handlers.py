"""The built-in MCP methods: discover, the lists, tools/call, resources/read, prompts/get,
completion/complete and subscriptions/listen, answered from a server's registrations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from .._lazy import LazyLogger
from ..errors import ToolError
from ..protocol import errors
from ..protocol import meta as M
from ..protocol import types as t
from ._context import Context
from ._input import InputRequired
from ._pagination import page
from ._primitives import PromptDef, ResourceDef, TemplateDef, ToolDef, not_found, resource_contents
from ._resolve import allowed, completion_target, resolve_resource, resource_scopes
from ._signature import isawaitable

if TYPE_CHECKING:
    import asyncio

    from ._bus import Subscription
    from ._dispatch import Handler
    from ._primitives import CacheScope
    from ._server import Server

log = LazyLogger("mcpkit.server")  # logging loads with the first record


async def invoke(sig: Any, blocking: bool, kwargs: dict[str, Any]) -> Any:
    """Call a registered function: awaited if async, in a worker thread if ``blocking``."""
    fn = sig.fn
    if sig.is_async:
        return await fn(**kwargs)
    if blocking:
        import asyncio

        return await asyncio.to_thread(fn, **kwargs)
    value = fn(**kwargs)
    if isawaitable(value):
        value = await value
    return value


def tool_error_text(name: str, exc: BaseException, server: Server) -> str:
    """What the client reads when tool ``name`` raised ``exc`` (not a ToolError)."""
    if server.expose_errors:
        return f"Error executing tool {name}: {exc}"
    return f"Error executing tool {name}"


class CoreMethods:
    """The built-in handlers of one server. They read the registries the server fills in."""

    def __init__(self, server: Server, *, tools: dict[str, ToolDef], resources: dict[str, ResourceDef],
                 templates: dict[str, TemplateDef], prompts: dict[str, PromptDef],
                 completions: dict[tuple[str, str], Callable[..., Any]]) -> None:
        self.server = server
        self.tools = tools
        self.resources = resources
        self.templates = templates
        self.prompts = prompts
        self.completions = completions
        #: Futures that end open listen streams (set by ``close_listeners``).
        self.listeners: set[asyncio.Future[None]] = set()

    def table(self) -> dict[str, Handler]:
        return {
            "server/discover": self.discover,
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "resources/list": self.list_resources,
            "resources/templates/list": self.list_templates,
            "resources/read": self.read_resource,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
            "subscriptions/listen": self.listen,
        }

    # ---------------------------------------------------------------- discover and lists
    async def discover(self, ctx: Context, params: t.RequestParams) -> t.DiscoverResult:
        server = self.server
        return t.DiscoverResult(
            supportedVersions=list(server.supported_versions),
            capabilities=server.capabilities,
            instructions=server.instructions if server.instructions is not None else UNSET,
            ttlMs=server.ttl_ms,
            cacheScope=server.cache_scope,
        )

    def _page(self, defs: Sequence[ToolDef | ResourceDef | TemplateDef | PromptDef], params: t.PaginatedParams
              ) -> tuple[Sequence[Any], Any, int, CacheScope]:
        cursor = params.cursor if params.cursor is not UNSET else None
        items, nxt = page(defs, cursor, self.server.page_size)
        # A list is as fresh as its stalest entry, and private if any entry is.
        ttl, scope = self.server.ttl_ms, self.server.cache_scope
        for d in defs:
            cache = d.cache  # every registration has its cache hints
            if cache.ttl_ms is not None:
                ttl = min(ttl, cache.ttl_ms)
            if cache.cache_scope == "private":
                scope = "private"
        return items, (nxt if nxt is not None else UNSET), ttl, scope

    @staticmethod
    def _visible(ctx: Context, defs: Sequence[Any]) -> tuple[list[Any], bool]:
        """What the caller's token may use (``list_mode="filter"``), and whether that list
        depends on the caller (then it must be cached privately)."""
        auth = ctx.auth
        if auth is None or not any(d.scopes for d in defs):
            return list(defs), False
        if auth.list_all:
            return list(defs), False
        return [d for d in defs if not d.scopes or auth.allows(d.scopes)], True

    def _listed(self, ctx: Context, defs: Sequence[Any], params: t.PaginatedParams
                ) -> tuple[Sequence[Any], Any, int, CacheScope]:
        visible, per_caller = self._visible(ctx, defs)
        items, nxt, ttl, scope = self._page(visible, params)
        return items, nxt, ttl, ("private" if per_caller else scope)

    async def list_tools(self, ctx: Context, params: t.PaginatedParams) -> t.ListToolsResult:
        items, nxt, ttl, scope = self._listed(ctx, list(self.tools.values()), params)
        return t.ListToolsResult(tools=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def list_resources(self, ctx: Context, params: t.PaginatedParams) -> t.ListResourcesResult:
        items, nxt, ttl, scope = self._listed(ctx, list(self.resources.values()), params)
        return t.ListResourcesResult(resources=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def list_templates(self, ctx: Context, params: t.PaginatedParams) -> t.ListResourceTemplatesResult:
        items, nxt, ttl, scope = self._listed(ctx, list(self.templates.values()), params)
        return t.ListResourceTemplatesResult(resourceTemplates=[d.wire for d in items], nextCursor=nxt,
                                             ttlMs=ttl, cacheScope=scope)

    async def list_prompts(self, ctx: Context, params: t.PaginatedParams) -> t.ListPromptsResult:
        items, nxt, ttl, scope = self._listed(ctx, list(self.prompts.values()), params)
        return t.ListPromptsResult(prompts=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    # ---------------------------------------------------------------- call, read, get
    async def call_tool(self, ctx: Context, params: t.CallToolParams) -> Any:
        tool = self.tools.get(params.name)
        if tool is None:
            raise errors.invalid_params(f"Unknown tool: {params.name}", {"name": params.name})
        args = params.arguments if params.arguments is not UNSET else None
        try:
            kwargs = tool.sig.bind(args)
        except msgspec.ValidationError as exc:
            return t.CallToolResult(content=[t.TextContent(text=f"Invalid arguments for tool {tool.name}: {exc}")],
                                    isError=True)
        if tool.sig.ctx_name:
            kwargs[tool.sig.ctx_name] = ctx
        try:
            value = await invoke(tool.sig, tool.blocking, kwargs)
        except (errors.MCPError, InputRequired):
            raise
        except ToolError as exc:
            return t.CallToolResult(content=[t.TextContent(text=str(exc) or type(exc).__name__)], isError=True)
        except Exception as exc:
            # Logged with its traceback (never on stdout: that is the stdio channel); the client
            # gets the exception's text only with Server(expose_errors=True). ToolError is the
            # way to tell it something on purpose.
            log.exception("tool %s raised", tool.name)
            return t.CallToolResult(content=[t.TextContent(text=tool_error_text(tool.name, exc, self.server))],
                                    isError=True)
        return tool.to_result(value)

    async def read_resource(self, ctx: Context, params: t.ReadResourceParams) -> Any:
        uri = params.uri
        # Resolved once: the registration whose scopes the gate checked is the one served.
        found = resolve_resource(self.resources, self.templates, uri)
        if found is None or not allowed(ctx.auth, found[0].scopes):
            raise not_found(uri)
        fn_def, kwargs = found
        mime = fn_def.mime_type
        if fn_def.sig.ctx_name:
            kwargs[fn_def.sig.ctx_name] = ctx
        try:
            value = await invoke(fn_def.sig, fn_def.blocking, kwargs)
        except LookupError as exc:  # KeyError/IndexError from a template handler: no such resource
            log.debug("resource %s not found: %r", uri, exc)
            raise not_found(uri) from None
        if isinstance(value, t.ReadResourceResult):
            return value
        values = value if isinstance(value, list) and value and all(isinstance(v, t.ResourceContents) for v in value) \
            else [value]
        contents = [resource_contents(uri, v, mime) for v in values]
        ttl = fn_def.cache.ttl_ms if fn_def.cache.ttl_ms is not None else self.server.ttl_ms
        scope = fn_def.cache.cache_scope or self.server.cache_scope
        if fn_def.scopes and ctx.auth is not None:
            scope = "private"  # only callers with its scopes may read it: no shared cache may keep it
        return t.ReadResourceResult(contents=contents, ttlMs=ttl, cacheScope=scope)

    async def get_prompt(self, ctx: Context, params: t.GetPromptParams) -> Any:
        prompt = self.prompts.get(params.name)
        if prompt is None:
            raise errors.invalid_params(f"Unknown prompt: {params.name}", {"name": params.name})
        args = params.arguments if params.arguments not in (UNSET, None) else {}
        missing = sorted(prompt.required - set(args))
        if missing:
            raise errors.invalid_params(f"Missing required arguments for prompt {prompt.name}: {', '.join(missing)}")
        try:
            kwargs = prompt.sig.bind({k: v for k, v in args.items() if k in prompt.sig.param_names})
        except msgspec.ValidationError as exc:
            raise errors.invalid_params(f"Invalid arguments for prompt {prompt.name}: {exc}") from None
        if prompt.sig.ctx_name:
            kwargs[prompt.sig.ctx_name] = ctx
        value = await invoke(prompt.sig, prompt.blocking, kwargs)
        return prompt.to_result(value)

    async def complete(self, ctx: Context, params: t.CompleteParams) -> t.CompleteResult:
        ref = params.ref
        target = completion_target(self.server, ref)
        # A reference the caller may not use is answered exactly like an unknown one.
        hidden = target is None or not allowed(ctx.auth, target.scopes)
        if isinstance(ref, t.PromptReference):
            kind, key = "ref/prompt", ref.name
            if hidden:
                raise errors.invalid_params(f"Unknown prompt: {key}", {"name": key})
        else:
            kind, key = "ref/resource", ref.uri
            if hidden:
                raise errors.invalid_params(f"Unknown resource template: {key}", {"uri": key})
        arg = params.argument
        fn = self.completions.get((kind, f"{key}\x00{arg.name}")) or self.completions.get((kind, key))
        values: list[str] = []
        if fn is not None:
            context = {}
            if params.context is not UNSET and params.context.arguments is not UNSET:
                context = params.context.arguments
            got = fn(arg.name, arg.value, context)
            if isawaitable(got):
                got = await got
            values = [str(v) for v in (got or [])]
        total = len(values)
        return t.CompleteResult(completion=t.Completion(values=values[:100], total=total, hasMore=total > 100))

    # ---------------------------------------------------------------- subscriptions/listen
    async def listen(self, ctx: Context, params: t.ListenParams) -> t.SubscriptionsListenResult:
        import asyncio

        from ..protocol import subscriptions  # (with the first listen, not at a cold start)

        tag = {M.SUBSCRIPTION_ID: ctx.request_id}
        ack = subscriptions.acknowledge(params.notifications, self.server.capability_names)
        sub = self.server.bus.subscribe()  # before the acknowledgement, so no change slips between
        closing = asyncio.get_running_loop().create_future()
        self.listeners.add(closing)
        uris = list(ack.resourceSubscriptions) if ack.resourceSubscriptions is not UNSET else []
        who = ctx.principal, ctx.client_capabilities
        for uri in uris:
            self.server.subscription_changed(uri, True, *who)
        try:
            await ctx.emitter("notifications/subscriptions/acknowledged",
                              {"notifications": msgspec.to_builtins(ack), "_meta": tag})
            pump = asyncio.ensure_future(self._pump(ctx, sub, ack, tag))
            try:
                await asyncio.wait({pump, closing}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                pump.cancel()
        finally:
            sub.close()
            self.listeners.discard(closing)
            for uri in uris:
                self.server.subscription_changed(uri, False, *who)
        # Ended by the server (shutdown, or the bus dropped us): close gracefully.
        return t.SubscriptionsListenResult(meta=tag)

    async def _pump(self, ctx: Context, sub: Subscription, ack: t.SubscriptionFilter, tag: dict[str, Any]) -> None:
        from ..protocol import subscriptions

        emit = ctx.emitter
        lists = subscriptions.followed_lists(ack)
        uris = ack.resourceSubscriptions if ack.resourceSubscriptions is not UNSET else ()
        auth = ctx.auth
        async for change in sub:
            note = subscriptions.notification_for(change.kind, change.uri, lists=lists, uris=uris, meta=tag)
            if note is not None:
                if auth is not None and change.uri is not None and not allowed(
                        auth, resource_scopes(self.resources, self.templates, change.uri)):
                    continue  # an update of a resource under a subscribed URI that this caller may not read
                await emit(note[0], note[1] or {})

    def close_listeners(self) -> None:
        for fut in list(self.listeners):
            if not fut.done():
                fut.set_result(None)
