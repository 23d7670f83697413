"""Registration on the Server: the ``tool``/``resource``/``prompt``/``completion`` decorators
and their ``add_``/``remove_`` counterparts (a base class of :class:`~mcpkit.server.Server`).
They fill the tables the dispatch reads; nothing here runs per request."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ..protocol import types as t
from ._primitives import CacheHints, CacheScope, PromptDef, ResourceDef, TemplateDef, ToolDef

if TYPE_CHECKING:
    from ..extensions import Extension
    from ..extensions.cards import ServerCard
    from ..transports.routes import HttpRoute, RouteHandler
    from ._bus import ChangeKind

__all__ = ["CompletionHandler", "Registrations"]

CompletionHandler = Callable[..., Any]

# The deprecated tool(task=, task_start=) spelling of the tasks extension's per-tool options.
TaskSupport = Literal["never", "optional", "required"]
TaskStart = Literal["immediate", "explicit"]
TASK_SUPPORT: tuple[str, ...] = ("never", "optional", "required")
TASK_START: tuple[str, ...] = ("immediate", "explicit")
TASKS_ID = "io.modelcontextprotocol/tasks"  # protocol.tasks.EXTENSION_ID, without loading that module


def _legacy_task_options(name: str, task: str, task_start: str, extensions: dict[str, Any]) -> None:
    """Fold ``task=``/``task_start=`` (deprecated) into ``extensions``."""
    if task not in TASK_SUPPORT or task_start not in TASK_START:
        raise ValueError(f"tool {name!r}: task must be one of {TASK_SUPPORT} and task_start one of {TASK_START}")
    if task != "never":
        if TASKS_ID in extensions:
            raise ValueError(f"tool {name!r}: give the tasks options once (extensions=, not also task=)")
        extensions[TASKS_ID] = {"support": task, "start": task_start}


def _scopes(scopes: Iterable[str]) -> frozenset[str]:
    if isinstance(scopes, str):
        scopes = scopes.split()
    return frozenset(scopes)


class Registrations:
    """The registration half of :class:`~mcpkit.server.Server` (which sets these tables up)."""

    _tools: dict[str, ToolDef]
    _resources: dict[str, ResourceDef]
    _templates: dict[str, TemplateDef]
    _prompts: dict[str, PromptDef]
    _completions: dict[tuple[str, str], CompletionHandler]
    _installed: dict[str, Extension[Any]]

    if TYPE_CHECKING:
        def _changed(self, kind: ChangeKind) -> None: ...

        def _refresh_capabilities(self) -> None: ...

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: t.ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool = False,
        structured_output: bool | None = None,
        input_schema: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] = (),
        extensions: Mapping[str, Any] | None = None,
        task: TaskSupport = "never",
        task_start: TaskStart = "immediate",
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as a tool. Its type hints become the ``inputSchema``.

        ``blocking=True`` runs a sync function in a worker thread instead of on the event loop.
        ``input_schema`` publishes a hand-written schema instead (arguments are still bound
        to the signature). ``ttl_ms``/``cache_scope`` bound the ``tools/list`` cache hints.
        ``scopes``: the OAuth scopes a caller needs to see and call it (protected servers).
        ``extensions``: per-extension options, by extension id, each checked by its extension
        (installed first with :meth:`use`), e.g. ``{Tasks.id: {"support": "optional"}}``
        (see :mod:`mcpkit.extensions.tasks`).
        ``task``/``task_start``: deprecated spelling of the tasks options
        (``extensions={Tasks.id: {"support": task, "start": task_start}}``).
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
            opts = dict(extensions or {})
            if task != "never" or task_start != "immediate":
                _legacy_task_options(tool.name, task, task_start, opts)
            tool.extensions = opts
            tool.scopes = _scopes(scopes)
            self.add_tool(tool)
            return fn

        return deco

    def add_tool(self, tool: ToolDef) -> None:
        """Register a prepared tool definition (what :meth:`tool` builds from a function).

        A tool of the same name is replaced, and ``subscriptions/listen`` streams that opted in
        are told the tool list changed. Raises ValueError for an invalid ``x-mcp-header``
        annotation or extension options their extension refuses
        (or that name an extension not installed); its ``extensions`` options go to their extensions.
        """
        from ..protocol import headers

        try:
            tool.header_map = headers.header_annotations(tool.wire.inputSchema) or None
        except headers.InvalidHeaderAnnotation as exc:
            raise ValueError(f"tool {tool.name!r}: invalid x-mcp-header annotation: {exc}") from None
        kept: dict[str, Any] = {}
        for ext_id, options in tool.extensions.items():
            ext = self._installed.get(ext_id)
            if ext is None:
                raise ValueError(f"tool {tool.name!r}: options for the extension {ext_id!r} need it installed; "
                                 "enable it first: server.use(...) before registering the tool")
            kept[ext_id] = ext.tool_options(tool, options)
        tool.extensions = kept
        self._tools[tool.name] = tool
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        """Remove the tool ``name`` (nothing happens when there is none); listeners are told the list changed."""
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
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        blocking: bool = False,
        scopes: Iterable[str] = (),
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a resource at ``uri``, or a resource template when ``uri`` has ``{vars}``.

        ``scopes``: the OAuth scopes a caller needs to see and read it (protected servers)."""
        needed = _scopes(scopes)
        cache = CacheHints(ttl_ms, cache_scope)

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            from ._uritemplate import UriTemplate  # (a server of tools alone never loads it)

            if UriTemplate.is_template(uri):
                tdef = TemplateDef(fn, uri, name=name, title=title, description=description, mime_type=mime_type,
                                   annotations=annotations, icons=icons, meta=meta, cache=cache, blocking=blocking)
                tdef.scopes = needed
                self._templates[uri] = tdef
            else:
                rdef = ResourceDef(fn, uri, name=name, title=title, description=description, mime_type=mime_type,
                                   size=size, annotations=annotations, icons=icons, meta=meta, cache=cache,
                                   blocking=blocking)
                rdef.scopes = needed
                self._resources[uri] = rdef
            self._changed("resources")
            return fn

        return deco

    def remove_resource(self, uri: str) -> None:
        """Remove the resource at ``uri``, or the resource template ``uri`` (nothing happens when there
        is none); listeners are told the resource list changed.
        """
        if self._resources.pop(uri, None) is not None or self._templates.pop(uri, None) is not None:
            self._changed("resources")

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        blocking: bool = False,
        ttl_ms: int | None = None,
        cache_scope: CacheScope | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a prompt; its (string) parameters become the prompt's arguments.

        ``scopes``: the OAuth scopes a caller needs to see and get it (protected servers)."""
        if callable(name):
            return self.prompt()(name)

        def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
            p = PromptDef(fn, name=name, title=title, description=description, icons=icons, meta=meta, blocking=blocking)
            p.cache = CacheHints(ttl_ms, cache_scope)
            p.scopes = _scopes(scopes)
            self._prompts[p.name] = p
            self._changed("prompts")
            return fn

        return deco

    def remove_prompt(self, name: str) -> None:
        """Remove the prompt ``name`` (nothing happens when there is none); listeners are told the list changed."""
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
        kind, target = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource or "")
        key = (kind, target if argument is None else f"{target}\x00{argument}")

        def deco(fn: CompletionHandler) -> CompletionHandler:
            self._completions[key] = fn
            self._refresh_capabilities()
            return fn

        return deco

    # ---------------------------------------------------------------- HTTP routes
    _routes: dict[str, HttpRoute] | None = None

    def add_http_route(self, path: str, handler: RouteHandler, *, methods: Iterable[str] = ("GET",)) -> None:
        """Serve ``handler`` at ``path`` over HTTP beside the MCP endpoint (a server card, a
        catalog...): relative to the MCP endpoint (``"server-card"``) unless it starts with ``/``.

        Read-only (``GET``, which answers ``HEAD`` too, and ``OPTIONS``), no OAuth, the Host
        allow-list applied: see :mod:`mcpkit.transports.routes`. Add routes before serving.
        """
        from ..transports.routes import HttpRoute

        route = HttpRoute(path, handler, tuple(methods))
        if self._routes is None:
            self._routes = {}
        if route.path in self._routes:
            raise ValueError(f"a route is already served at {route.path!r}")
        self._routes[route.path] = route

    @property
    def http_routes(self) -> Mapping[str, HttpRoute]:
        """The routes added with :meth:`add_http_route`, by path as given (read-only)."""
        return MappingProxyType(self._routes or {})

    def card(self, **options: Any) -> ServerCard:
        """Serve this server's card (SEP-2127, a Draft: experimental) and return it.

        A shorthand for ``server.use(ServerCard(**options))`` (the options are
        :class:`~mcpkit.extensions.cards.ServerCard`'s): ``GET <mcp-url>/server-card`` and
        ``/.well-known/ai-catalog.json`` over HTTP, consistent with ``server/discover``.
        """
        from ..extensions.cards import install_card

        server: Any = self  # a Server (this is one of its base classes)
        return install_card(server, options)
