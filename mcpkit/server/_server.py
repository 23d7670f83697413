"""The Server: the public front. Registrations and extension hooks in; transports feed it
decoded requests. Registration (``tool``, ``resource``, ``prompt``, ``completion``) lives in
:mod:`._register`, dispatch in :mod:`._dispatch`, the built-in methods in :mod:`._handlers`,
the era-specific edges in :mod:`._encode`."""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from msgspec import UNSET

from ..protocol import codec, errors, inbound, versions
from ..protocol import meta as M
from ..protocol import types as t
from ..protocol.codec import Reply
from ..transports import Envelope, hand_over
from ._bus import Bus, Change, ChangeKind, InMemoryBus
from ._changes import Changes, SubscriptionWatcher
from ._context import Emit
from ._dispatch import Handler, MethodTable, Wrapper
from ._dispatch import dispatch as dispatch_request
from ._dispatch import serve as serve_request
from ._encode import Era, ModernEra
from ._handlers import CoreMethods
from ._operate import Lifespan, Operations
from ._primitives import CacheScope, PromptDef, ResourceDef, TemplateDef, ToolDef
from ._register import CompletionHandler, Registrations, _scopes
from ._resolve import required_scopes
from ._state import KeyRing, StateSealer

if TYPE_CHECKING:
    import httpx

    from ..extensions import Extension
    from ..extensions.cards import ServerCard
    from ..extensions.tasks import Tasks, TaskStore  # loaded only when tasks are used
    from ..proxy import Mount, Mounts
    from ..transports import Dispatcher, SendRaw, Serving, SessionStore
    from ._legacy import LegacySession, SessionObservers
    from ._once import UsedStates

__all__ = ["CacheScope", "CompletionHandler", "Reply", "Server"]

E = TypeVar("E", bound="Extension[Any]")


def _has_modern_meta(raw_params: Any) -> bool:
    params = codec.params_dict(raw_params)
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and M.PROTOCOL_VERSION in meta


class Server(Registrations, Operations, Changes):
    """An MCP server: declare tools, resources and prompts, then run it on a transport.

    One ``Server`` serves every request on its own: each carries its version and client
    capabilities in ``params._meta`` (2026-07-28), so nothing is kept between requests.
    ``card=True`` (or a dict of options, or a ServerCard) serves a server card: :meth:`card`.
    """

    #: Capabilities set by :meth:`advertise` (a proxy's backend's), else None: the registrations'.
    _advertised: t.ServerCapabilities | None = None

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
        state_single_use: bool = False,
        bus: Bus | None = None,
        legacy: bool = True,
        tasks: bool | TaskStore = False,
        auth: Any = None,
        task_store: TaskStore | None = None,
        session_store: SessionStore | None = None,
        expose_errors: bool = False,
        lifespan: Lifespan | None = None,
        card: bool | Mapping[str, Any] | ServerCard | None = None,
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
        #: This server's ``Implementation`` (serverInfo).
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
        #: A tool's unexpected exception reaches the client as ``Error executing tool NAME``
        #: (the exception is logged); True adds the exception's text (it may hold secrets).
        self.expose_errors = expose_errors
        #: ``lifespan(server)``: an async context manager run once per process around serving;
        #: what it yields is ``ctx.lifespan`` (see :mod:`._operate`).
        self.lifespan = lifespan
        self._tools: dict[str, ToolDef] = {}
        self._resources: dict[str, ResourceDef] = {}
        self._templates: dict[str, TemplateDef] = {}
        self._prompts: dict[str, PromptDef] = {}
        self._completions: dict[tuple[str, str], CompletionHandler] = {}
        # Live read-only views for extensions (made once: tasks read one per tools/call).
        self._tools_view = MappingProxyType(self._tools)
        self._resources_view = MappingProxyType(self._resources)
        self._templates_view = MappingProxyType(self._templates)
        self._prompts_view = MappingProxyType(self._prompts)
        self._capability_names: frozenset[str] = frozenset()
        # Built now, so that a weak key (MCPKIT_STATE_KEYS or state_keys=) is refused at startup.
        self._key_ring = state_keys if isinstance(state_keys, KeyRing) else KeyRing(state_keys)
        self._state_ttl = state_ttl
        self._sealer: StateSealer | None = None
        #: Accept each ``requestState`` once (replays refused); spent states are recorded in
        #: :attr:`used_states` (this process; Redis once ``RedisBackend.install`` ran).
        self.state_single_use = state_single_use
        self._used_states: UsedStates | None = None  # made when first used (see used_states)
        #: Fan-out of change notifications to subscriptions/listen streams and legacy sessions.
        self.bus: Bus = InMemoryBus()
        self._subscription_watchers: list[SubscriptionWatcher] = []
        #: Where legacy HTTP sessions live when several workers share them (None: this process).
        self.session_store = session_store
        self._extra_methods: dict[str, tuple[type, str | None]] = {}
        self._extra_methods_view = MappingProxyType(self._extra_methods)
        #: Capabilities only the 2025-11-25 ``initialize`` advertises (e.g. ``tasks``).
        self.legacy_capabilities: dict[str, Any] = {}
        self._extensions: dict[str, dict[str, Any]] = {}
        #: Extension objects installed with use(), by id (read: ``extensions``, ``get_extension``).
        self._installed: dict[str, Extension[Any]] = {}
        self._installed_view = MappingProxyType(self._installed)
        #: Also serve 2025-11-25 and earlier clients (the initialize handshake).
        self.legacy = legacy
        #: Observes each legacy session (telemetry): ``session_observer.session(s, resumed)`` is called
        #: as one is made and returns a :class:`~._legacy.SessionObserver`; None (the default): none.
        self.session_observer: SessionObservers | None = None
        self._caps: t.ServerCapabilities = t.ServerCapabilities()
        self._refresh_capabilities()
        self._core = CoreMethods(self, tools=self._tools, resources=self._resources, templates=self._templates,
                                 prompts=self._prompts, completions=self._completions)
        self._methods = MethodTable()
        for method, handler in self._core.table().items():
            self._methods.set(method, handler)
        self._chains = self._methods.chains  # the dict dispatch reads (kept up to date in place)
        self._modern = ModernEra(self, include_server_info)
        #: OAuth protection for HTTP (``mcpkit.auth.server.ResourceServerAuth``), applied however
        #: the server is served over HTTP (``run("http")``, :meth:`http_app`, ``mcpkit serve --http``,
        #: workers, ``--reload``). stdio is never authenticated.
        self.auth = auth
        self._method_scopes: dict[str, frozenset[str]] = {}
        if task_store is not None:  # deprecated: server.use(Tasks(store=...))
            tasks = task_store
        if tasks is not False and tasks is not None:  # deprecated: server.use(Tasks(...))
            self.enable_tasks(None if tasks is True else tasks)
        self._bus_ready_wrapped = False
        self._mounts: Mounts | None = None  # servers mounted here (mount())
        if bus is not None:
            self.use_bus(bus)
        if card is not None and card is not False:  # experimental (SEP-2127): see server.card()
            from ..extensions.cards import install_card

            install_card(self, card)

    def use_bus(self, bus: Bus) -> None:
        """Fan change notifications out through ``bus`` (before serving; e.g. a Redis bus).

        Its ``ready()`` (a shared bus: it raises while the bus cannot receive changes) is
        awaited before each ``subscriptions/listen`` is acknowledged, so a listen is refused
        with a JSON-RPC error, not left deaf.
        """
        self.bus = bus
        if not self._bus_ready_wrapped:
            self._bus_ready_wrapped = True

            async def listen_when_ready(ctx: Any, params: Any, call_next: Handler) -> Any:
                await self.bus.ready()
                return await call_next(ctx, params)

            self.wrap_method("subscriptions/listen", listen_when_ready)

    # ---------------------------------------------------------------- extensions
    def add_method(self, method: str, handler: Handler, params_type: type, capability: str | None = None) -> None:
        """Serve an extension's method: ``handler(ctx, params)`` returns a wire Result.

        ``params_type`` is a :class:`mcpkit.types.RequestParams` subclass (validated by the
        ladder like any core method); ``capability`` names the server capability that must
        be advertised for the method to exist (else -32601).
        """
        self._extra_methods[method] = (params_type, capability)
        self._methods.set(method, handler)

    @property
    def used_states(self) -> UsedStates:
        """Where spent ``requestState`` ids are recorded (``state_single_use``): this process's
        :class:`~._once.MemoryUsedStates` unless another store is set (``RedisBackend.install``)."""
        if self._used_states is None:
            from ._once import MemoryUsedStates  # (a server that never spends a state never loads it)

            self._used_states = MemoryUsedStates()
        return self._used_states

    @used_states.setter
    def used_states(self, store: UsedStates) -> None:
        self._used_states = store

    @property
    def extension_methods(self) -> Mapping[str, tuple[type, str | None]]:
        """The methods added with :meth:`add_method`: method -> (params type, gating capability)."""
        return self._extra_methods_view

    def wrap_method(self, method: str, wrapper: Wrapper) -> None:
        """Wrap one method: ``await wrapper(ctx, params, call_next)`` answers it instead, and
        ``await call_next(ctx, params)`` runs what was there (the handler, or earlier wrappers).

        The wrapper added last runs first. Raises ValueError for a method not served.
        """
        self._methods.wrap(method, wrapper)

    def add_middleware(self, middleware: Wrapper) -> None:
        """Wrap every method, present and future: ``middleware(ctx, params, call_next)``.

        Middleware runs outside the methods' own wrappers; the one added last runs first.
        ``ctx.method`` names the method. Costs nothing per request until one is added.
        """
        self._methods.add_middleware(middleware)

    def add_session_observer(self, observer: SessionObservers) -> None:
        """Watch every legacy session and the notifications transports handle themselves
        (telemetry, the request log): see :class:`~._legacy.SessionObservers`. The one added
        last wraps the others, as with middleware."""
        from ._legacy import ObserverChain

        current = self.session_observer
        self.session_observer = observer if current is None else ObserverChain(observer, current)

    def require_scopes(self, method: str, scopes: Iterable[str]) -> None:
        """Need OAuth ``scopes`` for every ``method`` request (e.g. ``"tasks/get"``, or an
        extension's method), on top of what a tool, resource or prompt needs."""
        needed = _scopes(scopes)
        if needed:
            self._method_scopes[method] = needed
        else:
            self._method_scopes.pop(method, None)

    def required_scopes(self, method: str, params: Any) -> frozenset[str]:
        """The OAuth scopes one request needs: its method's, plus its tool, resource(s) or prompt's
        (see :func:`._resolve.required_scopes`).

        ``params`` is the typed params or a plain dict (a legacy session's request).
        """
        return required_scopes(self, method, params, self._method_scopes)

    @property
    def operation_scopes(self) -> frozenset[str]:
        """Every scope a registration or method asks for (to publish more than the minimal
        ``scopes_supported``: ``ResourceServerAuth(scopes_supported=...)``)."""
        out: set[str] = set()
        for defs in (self._tools, self._resources, self._templates, self._prompts):
            for d in defs.values():
                out.update(d.scopes)
        for s in self._method_scopes.values():
            out.update(s)
        return frozenset(out)

    def add_extension(self, ext_id: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise ``capabilities.extensions[ext_id]`` (the id needs a reverse-DNS prefix)."""
        if not M.is_valid_extension_id(ext_id):
            raise ValueError(f"{ext_id!r} is not a valid extension identifier (prefix/name)")
        self._extensions[ext_id] = dict(settings or {})
        self._refresh_capabilities()

    @classmethod
    def from_openapi(cls, spec: dict[str, Any] | str, client: httpx.AsyncClient, *, name: str | None = None,
                     include: set[str] | None = None) -> Server:
        """A server whose tools are the operations of the OpenAPI document ``spec``, each sent
        through ``client`` (its base URL, headers and auth apply): see :mod:`mcpkit.openapi`."""
        from ..openapi import from_openapi

        return from_openapi(spec, client, name=name, include=include)

    def use(self, extension: E) -> E:
        """Install ``extension`` (an :class:`mcpkit.extensions.Extension`) and return it.

        Advertises ``capabilities.extensions[extension.id] = extension.settings()`` (unless
        the class says ``advertised = False``), then
        calls ``extension.install(self)`` (which registers its methods and wrappers through
        the public hooks). From then on tools may carry its options
        (``tool(extensions={extension.id: ...})``) and handlers reach its helper with
        ``ctx.extension(type(extension))``. One extension per id (RuntimeError otherwise).
        """
        from ..extensions import Extension

        if not isinstance(extension, Extension):
            raise TypeError(f"use() takes an mcpkit.extensions.Extension, not {type(extension).__name__}")
        ext_id = extension.id
        if not M.is_valid_extension_id(ext_id):
            raise ValueError(f"{type(extension).__name__}.id = {ext_id!r} is not a valid extension identifier "
                             "(prefix/name)")
        if ext_id in self._installed:
            raise RuntimeError(f"the extension {ext_id} is already installed on this server")
        previous = self._extensions.get(ext_id)
        self._installed[ext_id] = extension
        try:
            if extension.advertised:
                self.add_extension(ext_id, extension.settings())
            extension.install(self)
        except BaseException:
            del self._installed[ext_id]
            if previous is None:
                self._extensions.pop(ext_id, None)
            else:
                self._extensions[ext_id] = previous
            self._refresh_capabilities()
            raise
        return extension

    @property
    def extensions(self) -> Mapping[str, Extension[Any]]:
        """The extensions installed with :meth:`use`, by id (read-only)."""
        return self._installed_view

    def get_extension(self, kind: type[E]) -> E | None:
        """The installed extension of class ``kind`` (or a subclass), or None."""
        ext = self._installed.get(kind.id)
        return ext if isinstance(ext, kind) else None

    # ---------------------------------------------------------------- deprecated tasks spellings
    @property
    def tasks(self) -> Tasks | None:
        """Deprecated: ``server.get_extension(Tasks)``. The installed tasks extension, or None."""
        from ..protocol.tasks import EXTENSION_ID

        ext: Tasks | None = self._installed.get(EXTENSION_ID)  # type: ignore[assignment]
        return ext

    def enable_tasks(self, store: TaskStore | None = None, *, ttl_ms: int | None = 3_600_000,
                     poll_interval_ms: int | None = 1_000) -> Tasks:
        """Deprecated: ``server.use(Tasks(store, ttl_ms=..., poll_interval_ms=...))``
        (:mod:`mcpkit.extensions.tasks`). Returns the installed extension."""
        from ..extensions.tasks import Tasks, TaskStore

        if self.tasks is not None:
            raise RuntimeError("tasks are already enabled on this server")
        if store is not None and not isinstance(store, TaskStore):
            raise TypeError("tasks must be True, False or a TaskStore")
        return self.use(Tasks(store, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms))

    def _changed(self, kind: ChangeKind) -> None:
        self._refresh_capabilities()
        self._publish(Change(kind))

    def close_listeners(self) -> None:
        """End every open listen stream gracefully (e.g. before shutdown)."""
        self._core.close_listeners()

    def acknowledged_filter(self, wanted: t.SubscriptionFilter) -> t.SubscriptionFilter:
        """The part of ``wanted`` this server honours (what it has, and can notify about)."""
        from ..protocol import subscriptions  # (loaded with the first listen, not by a cold start)

        return subscriptions.acknowledge(wanted, self._capability_names)

    # ---------------------------------------------------------------- what the server offers
    def advertise(self, capabilities: t.ServerCapabilities | None) -> None:
        """Advertise ``capabilities`` instead of what the registrations imply (a proxy
        advertises its backend's); methods are gated on them as usual. None: follow the
        registrations again."""
        self._advertised = capabilities
        self._refresh_capabilities()

    def advertise_legacy(self, capabilities: Mapping[str, Any]) -> None:
        """Also advertise ``capabilities`` (wire dicts by name) in the 2025-11-25 ``initialize``
        only: capabilities that revision has and 2026-07-28 does not (a proxy carries a
        2025-11-25 backend's ``tasks``). Their methods must be served with :meth:`add_method`."""
        self.legacy_capabilities = dict(capabilities)

    def _advertised_capabilities(self, caps: t.ServerCapabilities) -> None:
        offered = {"tools": caps.tools, "resources": caps.resources, "prompts": caps.prompts,
                   "completions": caps.completions}
        names = {name for name, value in offered.items() if value is not UNSET}
        if caps.extensions is not UNSET:
            names.update(f"extensions/{k}" for k in caps.extensions)
        self._caps = caps
        self._capability_names = frozenset(names)

    def _refresh_capabilities(self) -> None:
        advertised = self._advertised
        if advertised is not None:
            self._advertised_capabilities(advertised)
            return
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
        extensions = self._extensions
        if extensions:
            caps.extensions = dict(extensions)
            names.update(f"extensions/{k}" for k in extensions)
        self._caps = caps
        self._capability_names = frozenset(names)

    @property
    def capabilities(self) -> t.ServerCapabilities:
        """What ``server/discover`` and ``initialize`` advertise (follows the registrations)."""
        return self._caps

    @property
    def capability_names(self) -> frozenset[str]:
        """The advertised capabilities by name (``tools``, ``extensions/<id>``...): they gate methods."""
        return self._capability_names

    @property
    def tools(self) -> Mapping[str, ToolDef]:
        """The registered tools by name (read-only; register with :meth:`tool` or :meth:`add_tool`)."""
        return self._tools_view

    @property
    def resources(self) -> Mapping[str, ResourceDef]:
        """The registered resources by URI (read-only)."""
        return self._resources_view

    @property
    def resource_templates(self) -> Mapping[str, TemplateDef]:
        """The registered resource templates by URI template (read-only)."""
        return self._templates_view

    @property
    def prompts(self) -> Mapping[str, PromptDef]:
        """The registered prompts by name (read-only)."""
        return self._prompts_view

    @property
    def sealer(self) -> StateSealer:
        """Seals MRTR requestState; share the keys between workers (or set MCPKIT_STATE_KEYS)."""
        if self._sealer is None:
            self._sealer = StateSealer(self._key_ring, self._state_ttl)
        return self._sealer

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The ``x-mcp-header`` annotations of tool ``name`` (None if none or unknown)."""
        tool = self._tools.get(name)
        if tool is None and self._mounts is not None:
            return self._mounts.tool_header_map(name)  # a mounted server's tool
        return tool.header_map if tool is not None else None

    def mount(self, prefix: str, other: Any, **options: Any) -> Mount:
        """Serve ``other`` (a ``Server``, a command line or an ``http(s)`` URL, of either era)
        beside this server's own tools, resources and prompts, under ``prefix``: tools and
        prompts as ``prefix_name``, resources as ``prefix+uri``. One that cannot be reached
        degrades alone. Naming, lists, caching hints, failures and ``options``:
        :mod:`mcpkit.proxy` (:class:`~mcpkit.proxy.Mounts`). Returns the
        :class:`~mcpkit.proxy.Mount` (``close()`` disconnects it)."""
        from ..proxy import Mounts

        if self._mounts is None:
            self._mounts = Mounts(self)
        return self._mounts.add(prefix, other, **options)

    # ================================================================ running
    def run(self, transport: Literal["stdio", "http", "streamable-http"] = "stdio", **kwargs: Any) -> None:
        """Serve forever (until stdin closes, for stdio); while ``mcpkit serve`` imports the file, hand over to it.

        ``transport`` is ``"stdio"`` or ``"http"`` (Streamable HTTP, both eras; ``"streamable-http"``,
        the official SDK's name for it, is the same)."""
        if transport == "streamable-http":
            transport = "http"
        if transport not in ("stdio", "http"):
            raise ValueError(f"unknown transport {transport!r}: choose 'stdio' or 'http' (Streamable HTTP; "
                             "'streamable-http' is accepted too)")
        hand_over(self)
        _auto_telemetry(self, transport)
        from ..errors import LifespanError

        try:
            if transport == "stdio":
                from ..transports import run_stdio_server

                run_stdio_server(self, **kwargs)
            else:
                from ..transports.http import run_http_server

                run_http_server(self, **kwargs)  # applies self.auth (unless another auth= is given)
        except LifespanError as exc:
            raise SystemExit(f"mcpkit: {exc}") from None  # one line, exit status 1

    @property
    def serving(self) -> Serving:
        """What transports read when they start serving this server (:class:`mcpkit.transports.Dispatcher`)."""
        from ..transports import Serving

        return Serving(legacy=self.legacy, auth=self.auth, session_store=self.session_store,
                       http_routes=self.http_routes, lifespan=self.lifespan is not None)

    def http_app(self, path: str = "/mcp", **kwargs: Any) -> Any:
        """This server as an ASGI application serving Streamable HTTP at ``path`` (protected by
        ``self.auth`` unless another ``auth=`` is given)."""
        from ..transports.http import HttpApp

        _auto_telemetry(self, "http")
        return HttpApp(self, path=path, **kwargs)

    def open_legacy_session(self, *, send: SendRaw | None = None, state: dict[str, Any] | None = None,
                            id_prefix: str | None = None) -> LegacySession:
        """A new 2025-11-25 session on this server (transports call this for ``initialize``);
        ``state`` resumes one opened on another worker (a shared session store)."""
        from ._legacy import LegacySession

        return LegacySession(self, send=send, state=state, id_prefix=id_prefix)

    # ================================================================ dispatch
    def serve(self, req: codec.Request, envelope: Envelope) -> Coroutine[Any, Any, Reply]:
        """Answer one 2026-07-28 request (a coroutine: await it): the one call a transport
        makes per request (see :func:`._dispatch.serve`)."""
        return serve_request(self, self._chains, self._modern, req, envelope)

    def handle(self, req: codec.Request, emit: Emit | None = None) -> Coroutine[Any, Any, Reply]:
        """Check and answer one decoded request (a coroutine: await it); no headers, no caller.
        Never raises except for cancellation."""
        return serve_request(self, self._chains, self._modern, req, Envelope(None, None, emit))

    def check(self, req: codec.Request, headers: Mapping[str, str] | None = None, *,
              scoped: bool = False) -> inbound.Checked:
        """Run the inbound check for ``req`` (raises MCPError): the ladder, the header rules
        when the HTTP ``headers`` are given, and with ``scoped`` the scopes it needs."""
        if req.method == "initialize" and not _has_modern_meta(req.params):
            # A legacy handshake: refuse it in a way that names what we do speak.
            raise errors.initialize_refused(codec.params_dict(req.params), self.supported_versions)
        return inbound.check_request(req.method, req.params, self.supported_versions, self._capability_names,
                                     self._extra_methods or None, headers=headers,
                                     header_map=None if headers is None else self.tool_header_map,
                                     scopes=self.required_scopes if scoped else None)

    def run_checked(self, req: codec.Request, checked: inbound.Checked, emit: Emit | None = None, *,
                    principal: str | None = None, auth: Any = None) -> Coroutine[Any, Any, Reply]:
        """Answer a 2026-07-28 request that passed :meth:`check` (a coroutine: await it).

        ``principal`` names the authenticated caller, when the transport knows it; MRTR
        state and tasks are bound to it; ``auth`` is the OAuth caller (``ctx.auth``).
        Never raises except for cancellation.
        """
        # Not itself async: the dispatch coroutine is handed out as is (one frame less per request).
        return dispatch_request(self, self._chains, req, checked, emit, principal, self._modern, auth)

    def dispatch(self, req: codec.Request, checked: inbound.Checked, emit: Emit | None = None, *,
                 principal: str | None = None, era: Era | None = None, auth: Any = None,
                 peer: str | None = None) -> Coroutine[Any, Any, Reply]:
        """Answer a checked request for ``era`` (default: 2026-07-28); legacy sessions pass theirs
        (and the address that opened them, ``peer``)."""
        return dispatch_request(self, self._chains, req, checked, emit, principal,
                                era if era is not None else self._modern, auth, peer)


def _auto_telemetry(server: Server, transport: str) -> None:
    """OpenTelemetry spans and metrics when the process has OpenTelemetry set up (see
    :mod:`mcpkit.observability`; it imports nothing from OpenTelemetry otherwise)."""
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return  # not loaded, so not configured (observability.configured): not even that module is needed
    from ..observability import auto_instrument

    auto_instrument(server, transport)


if TYPE_CHECKING:
    def _satisfies_dispatcher(server: Server) -> Dispatcher:
        return server  # mypy checks that Server meets the transports' seam
