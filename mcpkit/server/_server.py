"""The Server: registrations in, wire results out. Transports feed it decoded requests."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, NamedTuple

import msgspec
from msgspec import UNSET

from ..protocol import codec, errors, inbound, versions
from ..protocol.codec import Reply
from ..protocol import meta as M
from ..protocol import types as t
from ._bus import Bus, Change, InMemoryBus
from ._context import Context, Emit
from ._input import AskFn, InputRequired, MrtrAnswers
from ._state import INVALID_STATE_MESSAGE, KeyRing, StateError, StateSealer, digest_arguments
from ._pagination import page
from ._primitives import TASK_START, TASK_SUPPORT, TaskStart, TaskSupport
from ._primitives import (
    CacheHints, PromptDef, ResourceDef, TemplateDef, ToolDef, ToolError, not_found, resource_contents,
)
from ._uritemplate import UriTemplate

if TYPE_CHECKING:
    from ._tasks import Tasks, TaskStore  # loaded only when tasks are enabled

log = logging.getLogger("mcpkit.server")

def _binding(method: str, params: Any, principal: str | None) -> tuple[str, str, str, str | None]:
    """What a requestState is bound to: method, name, a digest of the arguments, principal."""
    if method == "resources/read":
        name, args = params.uri, None
    else:
        name, args = params.name, (params.arguments if params.arguments not in (UNSET, None) else None)
    return method, name, digest_arguments(args), principal


def legacy_result(result: Any) -> dict[str, Any]:
    """A result shaped for 2025-11-25: no resultType or cache hints (they are 2026-07-28 fields)."""
    out = msgspec.to_builtins(result)
    out.pop("resultType", None)
    out.pop("ttlMs", None)
    out.pop("cacheScope", None)
    return out


def _has_modern_meta(raw_params: Any) -> bool:
    params = codec.params_dict(raw_params)
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and M.PROTOCOL_VERSION in meta


#: The only methods whose handlers may answer ``input_required``.
_MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

CacheScope = Literal["public", "private"]
CompletionHandler = Callable[..., Any]


class Server:
    """An MCP server: declare tools, resources and prompts, then run it on a transport.

    One ``Server`` serves every request on its own: each carries its version and client
    capabilities in ``params._meta`` (2026-07-28), so nothing is kept between requests.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[t.Icon] | None = None,
        instructions: str | None = None,
        ttl_ms: int = 0,
        cache_scope: CacheScope = "private",
        page_size: int | None = 100,
        logging: bool = True,
        include_server_info: bool = True,
        supported_versions: tuple[str, ...] = versions.MODERN_VERSIONS,
        state_keys: list[str | bytes] | KeyRing | None = None,
        state_ttl: float = 600.0,
        bus: Bus | None = None,
        legacy: bool = True,
        tasks: "bool | TaskStore" = False,
    ) -> None:
        if ttl_ms < 0:
            raise ValueError("ttl_ms must be >= 0")
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be None (no pagination) or at least 1")
        if cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        unknown = [v for v in supported_versions if not versions.is_modern(v)]
        if unknown or not supported_versions:
            raise ValueError(f"supported_versions must be modern protocol versions; got {list(supported_versions)}")
        self.name = name
        self.version = version
        self.info = t.Implementation(
            name=name, version=version, title=title or UNSET, description=description or UNSET,
            websiteUrl=website_url or UNSET, icons=icons or UNSET,
        )
        self.instructions = instructions
        self.ttl_ms = ttl_ms
        self.cache_scope: CacheScope = cache_scope
        self.page_size = page_size
        self.logging = logging
        self.supported_versions = tuple(supported_versions)
        self._result_meta: dict[str, Any] | Any = {M.SERVER_INFO: msgspec.to_builtins(self.info)} if include_server_info else UNSET
        self._tools: dict[str, ToolDef] = {}
        self._resources: dict[str, ResourceDef] = {}
        self._templates: dict[str, TemplateDef] = {}
        self._prompts: dict[str, PromptDef] = {}
        self._completions: dict[tuple[str, str], CompletionHandler] = {}
        self._capability_names: frozenset[str] = frozenset()
        self._state_keys = state_keys
        self._state_ttl = state_ttl
        self._sealer: StateSealer | None = None
        #: Fan-out of change notifications to subscriptions/listen streams.
        self.bus: Bus = bus if bus is not None else InMemoryBus()
        self._listeners: set[Any] = set()  # futures that end listen streams
        self._extra_methods: dict[str, tuple[type, str | None]] = {}
        self._extensions: dict[str, dict[str, Any]] = {}
        #: Also serve 2025-11-25 and earlier clients (the initialize handshake).
        self.legacy = legacy
        self._caps: t.ServerCapabilities = t.ServerCapabilities()
        self._refresh_capabilities()
        self._handlers: dict[str, Callable[[Context, Any], Awaitable[Any]]] = {
            "server/discover": self._discover,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "subscriptions/listen": self._listen,
        }
        #: The tasks extension (io.modelcontextprotocol/tasks), once enabled.
        self.tasks: "Tasks | None" = None
        if tasks is not False and tasks is not None:
            self.enable_tasks(None if tasks is True else tasks)

    # ================================================================ registration
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: t.ToolAnnotations | dict | None = None,
        icons: list | None = None,
        meta: dict | None = None,
        blocking: bool = False,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        task: TaskSupport = "never",
        task_start: TaskStart = "immediate",
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as a tool. Its type hints become the ``inputSchema``.

        ``blocking=True`` runs a sync function in a worker thread instead of on the event loop.
        ``input_schema`` publishes a hand-written schema instead (arguments are still bound
        to the signature). ``ttl_ms``/``cache_scope`` bound the ``tools/list`` cache hints.
        ``task`` (needs tasks enabled: ``Server(..., tasks=True)``): ``"optional"`` runs the
        call as a task for clients that declare the tasks extension, ``"required"`` refuses
        other clients (-32021); ``task_start="explicit"`` makes it a task only once the
        handler calls ``await ctx.start_task()``. See :mod:`mcpkit.server._tasks`.
        """
        if callable(name):  # used bare: @server.tool
            return self.tool()(name)

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            tool = ToolDef(fn, name=name, title=title, description=description, annotations=annotations,
                           icons=icons, meta=meta, blocking=blocking, structured_output=structured_output)
            if input_schema is not None:
                if input_schema.get("type") != "object":
                    raise ValueError(f"tool {tool.name!r}: input_schema must have type 'object' at its root")
                tool.wire.inputSchema = input_schema
            tool.cache = CacheHints(ttl_ms, cache_scope)
            tool.task, tool.task_start = task, task_start
            self.add_tool(tool)
            return fn

        return deco

    def add_tool(self, tool: ToolDef) -> None:
        from ..protocol import headers

        try:
            tool.header_map = headers.header_annotations(tool.wire.inputSchema) or None
        except headers.InvalidHeaderAnnotation as exc:
            raise ValueError(f"tool {tool.name!r}: invalid x-mcp-header annotation: {exc}") from None
        if tool.task not in TASK_SUPPORT or tool.task_start not in TASK_START:
            raise ValueError(f"tool {tool.name!r}: task must be one of {TASK_SUPPORT} and task_start one of {TASK_START}")
        if tool.task != "never" and self.tasks is None:
            raise ValueError(f"tool {tool.name!r}: task={tool.task!r} needs the tasks extension; "
                             "enable it first: Server(..., tasks=True) or server.enable_tasks()")
        self._tools[tool.name] = tool
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        if self._tools.pop(name, None) is not None:
            self._changed("tools")

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: Any = None,
        icons: list | None = None,
        meta: dict | None = None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        blocking: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a resource at ``uri``, or a resource template when ``uri`` has ``{vars}``."""
        cache = CacheHints(ttl_ms, cache_scope)

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            if UriTemplate.is_template(uri):
                self._templates[uri] = TemplateDef(fn, uri, name=name, title=title, description=description,
                                                   mime_type=mime_type, annotations=annotations, icons=icons,
                                                   meta=meta, cache=cache, blocking=blocking)
            else:
                self._resources[uri] = ResourceDef(fn, uri, name=name, title=title, description=description,
                                                   mime_type=mime_type, size=size, annotations=annotations,
                                                   icons=icons, meta=meta, cache=cache, blocking=blocking)
            self._changed("resources")
            return fn

        return deco

    def remove_resource(self, uri: str) -> None:
        if self._resources.pop(uri, None) is not None or self._templates.pop(uri, None) is not None:
            self._changed("resources")

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list | None = None,
        meta: dict | None = None,
        blocking: bool = False,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a prompt; its (string) parameters become the prompt's arguments."""
        if callable(name):
            return self.prompt()(name)

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            p = PromptDef(fn, name=name, title=title, description=description, icons=icons, meta=meta, blocking=blocking)
            p.cache = CacheHints(ttl_ms, cache_scope)
            self._prompts[p.name] = p
            self._changed("prompts")
            return fn

        return deco

    def remove_prompt(self, name: str) -> None:
        if self._prompts.pop(name, None) is not None:
            self._changed("prompts")

    def completion(self, *, prompt: str | None = None, resource: str | None = None,
                   argument: str | None = None) -> Callable[[CompletionHandler], CompletionHandler]:
        """Register argument completion for a prompt or a resource template.

        The handler is called as ``fn(argument, value, context)`` (sync or async) where
        ``context`` holds already-resolved arguments, and returns a list of strings.
        Leave ``argument`` out to complete every argument of that reference.
        """
        if (prompt is None) == (resource is None):
            raise TypeError("completion() takes exactly one of prompt= or resource=")
        ref = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource)

        def deco(fn: CompletionHandler) -> CompletionHandler:
            key = (ref[0], ref[1] if argument is None else f"{ref[1]}\x00{argument}")
            self._completions[key] = fn
            self._refresh_capabilities()
            return fn

        return deco

    # ---------------------------------------------------------------- extensions
    def add_method(self, method: str, handler: Callable[[Context, Any], Awaitable[Any]], params_type: type,
                   capability: str | None = None) -> None:
        """Serve an extension's method: ``handler(ctx, params)`` returns a wire Result.

        ``params_type`` is a :class:`mcpkit.types.RequestParams` subclass (validated by the
        ladder like any core method); ``capability`` names the server capability that must
        be advertised for the method to exist (else -32601).
        """
        self._extra_methods[method] = (params_type, capability)
        self._handlers[method] = handler

    def add_extension(self, ext_id: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise ``capabilities.extensions[ext_id]`` (the id needs a reverse-DNS prefix)."""
        if not M.is_valid_extension_id(ext_id):
            raise ValueError(f"{ext_id!r} is not a valid extension identifier (prefix/name)")
        self._extensions[ext_id] = dict(settings or {})
        self._refresh_capabilities()

    def enable_tasks(self, store: TaskStore | None = None, *, ttl_ms: int | None = 3_600_000,
                     poll_interval_ms: int | None = 1_000) -> Tasks:
        """Serve the tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663).

        Advertises it, serves ``tasks/get``, ``tasks/update`` and ``tasks/cancel``, and lets
        tools registered with ``task="optional"|"required"`` answer ``tools/call`` with a task.
        ``store`` keeps task records (default: in memory); tasks expire ``ttl_ms`` after
        creation (None: never); ``poll_interval_ms`` is the polling pace suggested to clients.
        Returns the :class:`~mcpkit.server._tasks.Tasks` object (also ``server.tasks``).
        """
        from ._tasks import Tasks, TaskStore

        if self.tasks is not None:
            raise RuntimeError("tasks are already enabled on this server")
        if store is not None and not isinstance(store, TaskStore):
            raise TypeError("tasks must be True, False or a TaskStore")
        tasks = Tasks(self, store, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms)
        tasks.install()
        self.tasks = tasks
        self._handlers["tools/call"] = tasks.call_tool
        return tasks

    def _changed(self, kind: str) -> None:
        self._refresh_capabilities()
        self._publish(Change(kind))  # type: ignore[arg-type]

    # ---------------------------------------------------------------- change notifications
    def notify_tools_changed(self) -> None:
        """Tell ``subscriptions/listen`` streams that opted in that the tool list changed."""
        self._publish(Change("tools"))

    def notify_prompts_changed(self) -> None:
        self._publish(Change("prompts"))

    def notify_resources_changed(self) -> None:
        self._publish(Change("resources"))

    def notify_resource_updated(self, uri: str) -> None:
        """Tell streams subscribed to ``uri`` (or to a parent of it) that it changed."""
        self._publish(Change("resource_updated", uri))

    def _publish(self, change: Change) -> None:
        bus = getattr(self, "bus", None)
        if bus is not None:
            bus.publish(change)

    def close_listeners(self) -> None:
        """End every open listen stream gracefully (e.g. before shutdown)."""
        for fut in list(self._listeners):
            if not fut.done():
                fut.set_result(None)

    def _refresh_capabilities(self) -> None:
        caps = t.ServerCapabilities()
        names = set()
        if self._tools:
            caps.tools = t.ListChangedCapability(listChanged=True)
            names.add("tools")
        if self._resources or self._templates:
            caps.resources = t.ResourcesCapability(subscribe=True, listChanged=True)
            names.add("resources")
        if self._prompts:
            caps.prompts = t.ListChangedCapability(listChanged=True)
            names.add("prompts")
        if self._completions:
            caps.completions = {}
            names.add("completions")
        if self.logging:
            caps.logging = {}
        extensions = getattr(self, "_extensions", None)
        if extensions:
            caps.extensions = dict(extensions)
            names.update(f"extensions/{k}" for k in extensions)
        self._caps = caps
        self._capability_names = frozenset(names)

    @property
    def sealer(self) -> StateSealer:
        """Seals MRTR requestState; share the keys between workers (or set MCPKIT_STATE_KEYS)."""
        if self._sealer is None:
            keys = self._state_keys
            self._sealer = StateSealer(keys if isinstance(keys, KeyRing) else KeyRing(keys), self._state_ttl)
        return self._sealer

    @property
    def capabilities(self) -> t.ServerCapabilities:
        return self._caps

    # ================================================================ running
    def run(self, transport: Literal["stdio", "http"] = "stdio", **kwargs: Any) -> None:
        """Serve forever (until stdin closes, for stdio)."""
        if transport == "stdio":
            from ..transports._stdio_main import run_stdio_server

            run_stdio_server(self, **kwargs)
        elif transport == "http":
            from ..transports.http import run_http_server

            run_http_server(self, **kwargs)
        else:
            raise ValueError(f"unknown transport {transport!r}")

    def open_legacy_session(self, *, send: Any = None) -> Any:
        """A new 2025-11-25 session on this server (transports call this for ``initialize``)."""
        from ._legacy import LegacySession

        return LegacySession(self, send=send)

    def http_app(self, path: str = "/mcp", **kwargs: Any) -> Any:
        """This server as an ASGI application serving Streamable HTTP at ``path``."""
        from ..transports.http import HttpApp

        return HttpApp(self, path=path, **kwargs)

    # ================================================================ dispatch
    async def handle(self, req: codec.Request, emit: Emit | None = None) -> Reply:
        """Check and answer one decoded request. Never raises except for cancellation."""
        try:
            checked = self.check(req)
        except errors.MCPError as exc:
            return Reply(codec.encode_error(req.id, exc), exc.code)
        return await self.run_checked(req, checked, emit)

    def check(self, req: codec.Request) -> inbound.Checked:
        """Run the inbound ladder for ``req`` (raises MCPError)."""
        if req.method == "initialize" and not _has_modern_meta(req.params):
            # A legacy handshake: refuse it in a way that names what we do speak.
            raise self._initialize_refusal(req)
        return inbound.check_request(req.method, req.params, self.supported_versions, self._capability_names,
                                     self._extra_methods or None)

    async def run_checked(self, req: codec.Request, checked: inbound.Checked, emit: Emit | None = None,
                          *, principal: str | None = None, ask: "AskFn | None" = None) -> Reply:
        """Answer a request that passed :meth:`check`.

        ``principal`` names the authenticated caller, when the transport knows it; MRTR
        state is bound to it. ``ask`` (legacy sessions) sends input requests to the client as
        real requests instead of answering ``input_required``; results are then shaped for
        the 2025-11-25 wire.
        """
        method = req.method
        params = checked.params
        ctx = Context(self, req.id, method, params.meta, checked.meta, emit)
        ctx.principal = principal
        try:
            binding = None
            if method in _MRTR_METHODS:
                if ask is None:
                    binding = self._open_input(ctx, method, params, principal)
                else:
                    ctx._ask = ask
            try:
                result = await self._handlers[method](ctx, params)
            except InputRequired as need:
                if binding is None:  # pragma: no cover - legacy asks never unwind
                    raise errors.internal_error("input was requested outside MRTR") from None
                result = self._input_required(ctx, binding, need)
        except errors.MCPError as exc:
            if ask is not None and isinstance(exc, errors.ResourceNotFound):
                exc = errors.MCPError(errors.LEGACY_RESOURCE_NOT_FOUND, exc.message, exc.data)
            return Reply(codec.encode_error(req.id, exc), exc.code)
        except Exception:  # (asyncio.CancelledError is a BaseException: it passes through)
            log.exception("internal error while handling %s", method)
            exc = errors.internal_error(f"Internal error while handling {method}")
            return Reply(codec.encode_error(req.id, exc), exc.code)
        if ask is not None:
            return Reply(codec.encode_result(req.id, legacy_result(result)), None)
        if result.meta is UNSET:
            result.meta = self._result_meta
        elif self._result_meta is not UNSET:
            result.meta = {**self._result_meta, **result.meta}
        return Reply(codec.encode_result(req.id, result), None)

    # ---------------------------------------------------------------- MRTR
    def _open_input(self, ctx: Context, method: str, params: Any, principal: str | None) -> tuple:
        """Verify a retry's requestState and collect the answers the handler may use."""
        binding = (method, params, principal)  # the argument digest is computed only when needed
        answers: dict[str, Any] = {}
        asked: list[str] | None = None
        if params.inputResponses is UNSET and params.requestState is UNSET:
            ctx._ask = MrtrAnswers(answers)
            return binding
        method, name, digest, principal = _binding(method, params, principal)
        if params.requestState is not UNSET:
            try:
                payload = self.sealer.open(params.requestState, method=method, name=name, digest=digest, principal=principal)
            except StateError as exc:
                log.warning("rejected requestState on %s %r: %s", method, name, exc)
                raise errors.invalid_params(INVALID_STATE_MESSAGE) from None
            answers.update(payload.answers)
            ctx.state = dict(payload.state)
            asked = payload.asked
        if params.inputResponses is not UNSET:
            for key, value in params.inputResponses.items():
                # Unknown or unasked keys are ignored, as the spec asks.
                if asked is None or key in asked:
                    answers[key] = value
        ctx._ask = MrtrAnswers(answers)
        return binding

    def _input_required(self, ctx: Context, binding: tuple, ask: InputRequired) -> t.InputRequiredResult:
        method, name, digest, principal = _binding(*binding)
        answers = ctx._ask.answers if isinstance(ctx._ask, MrtrAnswers) else {}
        token = self.sealer.seal(method=method, name=name, digest=digest, principal=principal,
                                 asked=list(ask.requests), answers=answers, state=ctx.state)
        requests = {k: msgspec.convert(v, t.InputRequest) for k, v in ask.requests.items()}
        return t.InputRequiredResult(inputRequests=requests, requestState=token)

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The ``x-mcp-header`` annotations of tool ``name`` (None if none or unknown)."""
        tool = self._tools.get(name)
        return tool.header_map if tool is not None else None

    def _initialize_refusal(self, req: codec.Request) -> errors.MCPError:
        params = codec.params_dict(req.params) or {}
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        exc = errors.unsupported_version(str(requested or "unknown"), self.supported_versions)
        exc.message = (
            f"This server speaks only stateless MCP ({', '.join(self.supported_versions)}): "
            "there is no initialize handshake; send server/discover with params._meta"
        )
        return exc

    async def _invoke(self, sig: Any, blocking: bool, kwargs: dict[str, Any]) -> Any:
        fn = sig.fn
        if sig.is_async:
            return await fn(**kwargs)
        if blocking:
            import asyncio

            return await asyncio.to_thread(fn, **kwargs)
        value = fn(**kwargs)
        if inspect.isawaitable(value):
            value = await value
        return value

    # ---------------------------------------------------------------- handlers
    async def _discover(self, ctx: Context, params: t.RequestParams) -> t.DiscoverResult:
        return t.DiscoverResult(
            supportedVersions=list(self.supported_versions),
            capabilities=self._caps,
            instructions=self.instructions if self.instructions is not None else UNSET,
            ttlMs=self.ttl_ms,
            cacheScope=self.cache_scope,
        )

    def _list_hints(self, defs: list[Any]) -> tuple[int, CacheScope]:
        """A list is as fresh as its stalest entry, and private if any entry is."""
        ttl, scope = self.ttl_ms, self.cache_scope
        for d in defs:
            cache = getattr(d, "cache", None)
            if cache is not None:
                if cache.ttl_ms is not None:
                    ttl = min(ttl, cache.ttl_ms)
                if cache.cache_scope == "private":
                    scope = "private"
        return ttl, scope

    def _page(self, defs: list[Any], params: t.PaginatedParams) -> tuple[list[Any], Any, int, CacheScope]:
        cursor = params.cursor if params.cursor is not UNSET else None
        items, nxt = page(defs, cursor, self.page_size)
        ttl, scope = self._list_hints(defs)
        return items, (nxt if nxt is not None else UNSET), ttl, scope

    async def _list_tools(self, ctx: Context, params: t.PaginatedParams) -> t.ListToolsResult:
        items, nxt, ttl, scope = self._page(list(self._tools.values()), params)
        return t.ListToolsResult(tools=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def _list_resources(self, ctx: Context, params: t.PaginatedParams) -> t.ListResourcesResult:
        items, nxt, ttl, scope = self._page(list(self._resources.values()), params)
        return t.ListResourcesResult(resources=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def _list_templates(self, ctx: Context, params: t.PaginatedParams) -> t.ListResourceTemplatesResult:
        items, nxt, ttl, scope = self._page(list(self._templates.values()), params)
        return t.ListResourceTemplatesResult(resourceTemplates=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def _list_prompts(self, ctx: Context, params: t.PaginatedParams) -> t.ListPromptsResult:
        items, nxt, ttl, scope = self._page(list(self._prompts.values()), params)
        return t.ListPromptsResult(prompts=[d.wire for d in items], nextCursor=nxt, ttlMs=ttl, cacheScope=scope)

    async def _call_tool(self, ctx: Context, params: t.CallToolParams) -> Any:
        tool = self._tools.get(params.name)
        if tool is None:
            raise errors.invalid_params(f"Unknown tool: {params.name}", {"name": params.name})
        args = params.arguments if params.arguments is not UNSET else None
        try:
            kwargs = tool.sig.bind(args)
        except msgspec.ValidationError as exc:
            return t.CallToolResult(content=[t.TextContent(text=f"Invalid arguments for tool {tool.name}: {exc}")], isError=True)
        if tool.sig.ctx_name:
            kwargs[tool.sig.ctx_name] = ctx
        try:
            value = await self._invoke(tool.sig, tool.blocking, kwargs)
        except (errors.MCPError, InputRequired):
            raise
        except ToolError as exc:
            return t.CallToolResult(content=[t.TextContent(text=str(exc) or type(exc).__name__)], isError=True)
        except Exception as exc:
            log.exception("tool %s raised", tool.name)
            return t.CallToolResult(content=[t.TextContent(text=f"Error executing tool {tool.name}: {exc}")], isError=True)
        return tool.to_result(value)

    async def _read_resource(self, ctx: Context, params: t.ReadResourceParams) -> Any:
        uri = params.uri
        res = self._resources.get(uri)
        kwargs: dict[str, Any]
        if res is not None:
            fn_def: Any = res
            kwargs = {}
            mime = res.mime_type
        else:
            for tmpl in self._templates.values():
                vars_ = tmpl.template.match(uri)
                if vars_ is not None:
                    fn_def = tmpl
                    try:
                        args = msgspec.convert({k: v for k, v in vars_.items() if k in tmpl.sig.param_names},
                                               tmpl.sig.args_type, strict=False)
                    except msgspec.ValidationError:
                        continue  # variables of the wrong type: this template does not name it
                    kwargs = {n: getattr(args, n) for n in tmpl.sig.param_names}
                    mime = tmpl.mime_type
                    break
            else:
                raise not_found(uri)
        if fn_def.sig.ctx_name:
            kwargs[fn_def.sig.ctx_name] = ctx
        try:
            value = await self._invoke(fn_def.sig, fn_def.blocking, kwargs)
        except LookupError as exc:  # KeyError/IndexError from a template handler: no such resource
            log.debug("resource %s not found: %r", uri, exc)
            raise not_found(uri) from None
        if isinstance(value, t.ReadResourceResult):
            return value
        values = value if isinstance(value, list) and value and all(isinstance(v, t.ResourceContents) for v in value) else [value]
        contents = [resource_contents(uri, v, mime) for v in values]
        ttl = fn_def.cache.ttl_ms if fn_def.cache.ttl_ms is not None else self.ttl_ms
        scope = fn_def.cache.cache_scope or self.cache_scope
        return t.ReadResourceResult(contents=contents, ttlMs=ttl, cacheScope=scope)

    async def _get_prompt(self, ctx: Context, params: t.GetPromptParams) -> Any:
        prompt = self._prompts.get(params.name)
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
        value = await self._invoke(prompt.sig, prompt.blocking, kwargs)
        return prompt.to_result(value)

    async def _complete(self, ctx: Context, params: t.CompleteParams) -> t.CompleteResult:
        ref = params.ref
        if isinstance(ref, t.PromptReference):
            kind, key = "ref/prompt", ref.name
            if key not in self._prompts:
                raise errors.invalid_params(f"Unknown prompt: {key}", {"name": key})
        else:
            kind, key = "ref/resource", ref.uri
            if key not in self._templates and key not in self._resources:
                raise errors.invalid_params(f"Unknown resource template: {key}", {"uri": key})
        arg = params.argument
        fn = self._completions.get((kind, f"{key}\x00{arg.name}")) or self._completions.get((kind, key))
        values: list[str] = []
        if fn is not None:
            context = {}
            if params.context is not UNSET and params.context.arguments is not UNSET:
                context = params.context.arguments
            got = fn(arg.name, arg.value, context)
            if inspect.isawaitable(got):
                got = await got
            values = [str(v) for v in (got or [])]
        total = len(values)
        return t.CompleteResult(completion=t.Completion(values=values[:100], total=total, hasMore=total > 100))

    # ---------------------------------------------------------------- subscriptions/listen
    def acknowledged_filter(self, wanted: t.SubscriptionFilter) -> t.SubscriptionFilter:
        """The part of ``wanted`` this server honours (what it has, and can notify about)."""
        ack = t.SubscriptionFilter()
        if wanted.toolsListChanged is True and "tools" in self._capability_names:
            ack.toolsListChanged = True
        if wanted.promptsListChanged is True and "prompts" in self._capability_names:
            ack.promptsListChanged = True
        if wanted.resourcesListChanged is True and "resources" in self._capability_names:
            ack.resourcesListChanged = True
        if wanted.resourceSubscriptions is not UNSET and "resources" in self._capability_names:
            ack.resourceSubscriptions = list(dict.fromkeys(wanted.resourceSubscriptions))
        return ack

    async def _listen(self, ctx: Context, params: t.ListenParams) -> t.SubscriptionsListenResult:
        import asyncio

        sid = ctx.request_id
        tag = {M.SUBSCRIPTION_ID: sid}
        ack = self.acknowledged_filter(params.notifications)
        wanted_uris = ack.resourceSubscriptions if ack.resourceSubscriptions is not UNSET else ()
        sub = self.bus.subscribe()  # before the acknowledgement, so no change slips between
        closing = asyncio.get_running_loop().create_future()
        self._listeners.add(closing)
        try:
            await ctx._emit("notifications/subscriptions/acknowledged",
                            {"notifications": msgspec.to_builtins(ack), "_meta": tag})
            pump = asyncio.ensure_future(self._pump(ctx, sub, ack, wanted_uris, tag))
            try:
                await asyncio.wait({pump, closing}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                pump.cancel()
        finally:
            sub.close()
            self._listeners.discard(closing)
        # Ended by the server (shutdown, or the bus dropped us): close gracefully.
        return t.SubscriptionsListenResult(meta=tag)

    async def _pump(self, ctx: Context, sub: Any, ack: t.SubscriptionFilter, uris: Any, tag: dict) -> None:
        emit = ctx._emit
        async for change in sub:
            kind = change.kind
            if kind == "resource_updated":
                uri = change.uri or ""
                if any(uri == u or uri.startswith(u.rstrip("/") + "/") for u in uris):
                    await emit("notifications/resources/updated", {"uri": uri, "_meta": tag})
            elif kind == "tools" and ack.toolsListChanged is True:
                await emit("notifications/tools/list_changed", {"_meta": tag})
            elif kind == "prompts" and ack.promptsListChanged is True:
                await emit("notifications/prompts/list_changed", {"_meta": tag})
            elif kind == "resources" and ack.resourcesListChanged is True:
                await emit("notifications/resources/list_changed", {"_meta": tag})
