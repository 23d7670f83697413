"""Composition: ``server.mount(prefix, other)`` serves another server beside a server's own
tools, resources and prompts, under a prefix.

``other`` is anything :func:`~mcpkit.proxy.proxy` fronts: a ``Server`` in this process, a
command line (a stdio server) or an ``http(s)://`` URL, of either era. Questions it asks,
progress, log messages and era translation work as through the proxy.

Names, as the host's clients see them:

- tools and prompts: ``prefix_name`` (``docs`` + ``search`` -> ``docs_search``);
- resources and resource templates: a ``prefix+`` scheme (``notes://a`` -> ``docs+notes://a``,
  ``notes://{name}`` -> ``docs+notes://{name}``), and so are the URIs in results (the contents
  of ``resources/read``, resource links and embedded resources in tool and prompt results);
- a name or URI that matches several prefixes goes to the longest; one that matches none is
  the host's own. A prefix is a letter, then letters, digits and ``-`` (it must fit a URI scheme).

Lists (``tools/list`` and the others) come in one page: the host's own items, then each mount's
in the order mounted; ``ttlMs`` is the smallest of the parts and ``cacheScope`` ``private`` if
any part is. A mount's list changes and resource updates reach the host's listeners (its
resource URIs rewritten).

Failure stays local: a mount that cannot be reached is left out of the lists (logged), and its
calls fail with one ``-32603`` error naming it; the rest keep serving. A mount that could not
connect is tried again on use, at most every ``retry_after`` seconds, and the host's
capabilities and list-change notifications follow when it comes up.

The host advertises the union of its own capabilities and its mounts': register the host's own
tools, resources and prompts before mounting.

Every mount's backend client runs on one loop of the host's (:attr:`Mounts.bridge`, on a daemon
thread); ``mcpkit proxy --config`` serves the host on that loop too (:meth:`Mounts.runner`), so
a forwarded call makes no thread hop. A mount that is down is connected again from a worker
thread, never blocking that loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ..errors import MCPError
from ..protocol import errors
from ..protocol import types as t
from ._backend import Backend
from ._bridge import LoopThread
from ._front import _ASKING, _LISTS, Forwarder

if TYPE_CHECKING:
    from ..server import Context, Server

log = logging.getLogger("mcpkit.proxy")

_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
#: Each list method: the key of its items, the field naming an item, the capability it needs.
_ITEMS = {"tools/list": ("tools", "name", "tools"), "prompts/list": ("prompts", "name", "prompts"),
          "resources/list": ("resources", "uri", "resources"),
          "resources/templates/list": ("resourceTemplates", "uriTemplate", "resources")}
_MAX_PAGES = 100
_CHANGES = {"notifications/tools/list_changed": "notify_tools_changed",
            "notifications/prompts/list_changed": "notify_prompts_changed",
            "notifications/resources/list_changed": "notify_resources_changed"}


class Mount:
    """One server mounted under :attr:`prefix` (made by :meth:`Server.mount <mcpkit.Server.mount>`)."""

    def __init__(self, mounts: Mounts, prefix: str, backend: Backend, *, ttl_ms: int | None,
                 cache_scope: str | None, retry_after: float) -> None:
        self.mounts = mounts
        self.prefix = prefix
        self.backend = backend
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.retry_after = retry_after
        self.forwarder: Forwarder | None = None
        #: Why the mount is down (None: it is connected).
        self.error: str | None = None
        self._next_try = 0.0
        self._connecting: asyncio.Lock | None = None

    # ---------------------------------------------------------------- connection
    def connect(self) -> bool:
        """Connect (blocking); on failure the mount is down, with :attr:`error` saying why."""
        try:
            self.backend.connect()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            self._next_try = time.monotonic() + self.retry_after
            log.warning("mounted server %r (%s) is unavailable: %s", self.prefix, self.backend.label, self.error)
            return False
        server = self.mounts.server
        fw = Forwarder(server, self.backend, ttl_ms=self.ttl_ms, cache_scope=self.cache_scope,
                       pending_limit=1000, pending_ttl=600.0)
        fw.rewrite = self._rewrite
        fw.load_tool_headers()
        self.backend.on_change = self._changed
        self.forwarder = fw
        self.error = None
        return True

    async def ready(self) -> Forwarder:
        """The forwarder of a connected mount (connecting a down one again when it is time), or
        the mount's one clear error."""
        if self.forwarder is None and time.monotonic() >= self._next_try:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self.forwarder is None and time.monotonic() >= self._next_try:
                    if await asyncio.to_thread(self.connect):
                        self.mounts.advertise()
                        self.mounts.notify_all()
        if self.forwarder is None:
            raise errors.internal_error(f"mounted server {self.prefix!r} is unavailable: {self.error}")
        return self.forwarder

    def close(self) -> None:
        """Disconnect this mount (a stdio server is stopped)."""
        fw = self.forwarder
        if fw is not None:
            for call in fw.pending.clear():
                fw._cancel(call)
        self.backend.close()
        self.forwarder = None
        self.error = "closed"
        self._next_try = float("inf")
        self.mounts.closed_one()

    # ---------------------------------------------------------------- names
    def outer_name(self, name: str) -> str:
        """A tool's or prompt's name as the host's clients see it (``prefix_name``)."""
        return f"{self.prefix}_{name}"

    def outer_uri(self, uri: str) -> str:
        """A resource URI or URI template as the host's clients see it (``prefix+uri``)."""
        return f"{self.prefix}+{uri}"

    def _rename(self, method: str, item: dict[str, Any]) -> dict[str, Any]:
        field = _ITEMS[method][1]
        value = item.get(field)
        if not isinstance(value, str):
            return item
        return {**item, field: self.outer_name(value) if field == "name" else self.outer_uri(value)}

    def _content(self, block: Any) -> Any:
        if not isinstance(block, dict):
            return block
        if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
            return {**block, "uri": self.outer_uri(block["uri"])}
        res = block.get("resource")
        if block.get("type") == "resource" and isinstance(res, dict) and isinstance(res.get("uri"), str):
            return {**block, "resource": {**res, "uri": self.outer_uri(res["uri"])}}
        return block

    def _rewrite(self, method: str, raw: dict[str, Any]) -> dict[str, Any]:
        """A result's URIs as the host's clients see them."""
        out = dict(raw)
        if method == "resources/read" and isinstance(out.get("contents"), list):
            out["contents"] = [{**c, "uri": self.outer_uri(c["uri"])} if isinstance(c, dict) and
                               isinstance(c.get("uri"), str) else c for c in out["contents"]]
        elif method == "tools/call" and isinstance(out.get("content"), list):
            out["content"] = [self._content(c) for c in out["content"]]
        elif method == "prompts/get" and isinstance(out.get("messages"), list):
            out["messages"] = [{**m, "content": self._content(m.get("content"))} if isinstance(m, dict) else m
                               for m in out["messages"]]
        return out

    # ---------------------------------------------------------------- lists and changes
    def offers(self, capability: str) -> bool:
        """Whether the mounted server advertises ``capability`` (``tools``, ``resources``...)."""
        return isinstance((self.backend.card.get("capabilities") or {}).get(capability), dict)

    async def list(self, method: str) -> tuple[list[dict[str, Any]], list[int], list[str]] | None:
        """Every item of one list, renamed, with each page's ttlMs and cacheScope (None: down)."""
        key, _field, capability = _ITEMS[method]
        try:
            fw = await self.ready()
        except MCPError:
            return None
        if not self.offers(capability):
            return [], [], []
        items: list[dict[str, Any]] = []
        ttls: list[int] = []
        scopes: list[str] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_PAGES):
                raw = await self.backend.request(method, {"cursor": cursor} if cursor else None)
                items.extend(self._rename(method, i) for i in raw.get(key) or [] if isinstance(i, dict))
                ttl = raw.get("ttlMs")
                ttls.append(ttl if isinstance(ttl, int) and ttl >= 0 else fw.ttl_ms)
                scope = raw.get("cacheScope")
                scopes.append(scope if isinstance(scope, str) and scope in ("public", "private") else fw.cache_scope)
                cursor = raw.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    break
        except Exception as exc:
            log.warning("mounted server %r: %s failed, its items are left out: %s", self.prefix, method, exc)
            return None
        return items, ttls, scopes

    def _changed(self, method: str, params: dict[str, Any]) -> None:
        """A change at this mount (on its backend loop), published by the host (on its loop)."""
        fw = self.forwarder
        if fw is not None:
            fw._changed_headers(method)
        loop = self.mounts.loop
        if loop is None or loop.is_closed():
            return
        server = self.mounts.server
        if method in _CHANGES:
            loop.call_soon_threadsafe(getattr(server, _CHANGES[method]))
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            loop.call_soon_threadsafe(server.notify_resource_updated, self.outer_uri(params["uri"]))


class Mounts:
    """The servers mounted on one host ``Server`` (its ``mount()`` makes one, once)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.parts: dict[str, Mount] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        #: The one loop every mount's backend runs on (made with the first mount, stopped when
        #: every mount is closed); :meth:`runner` serves the host on it too.
        self.bridge: LoopThread | None = None
        self._own = server.capabilities
        for method in _LISTS:
            server.wrap_method(method, self._list)
        for method in _ASKING:
            server.wrap_method(method, self._asking)
        server.wrap_method("completion/complete", self._complete)
        server.wrap_method("subscriptions/listen", self._listen)

    def add(self, prefix: str, other: Any, *, ttl_ms: int | None = None, cache_scope: str | None = None,
            retry_after: float = 30.0, connect_timeout: float = 10.0, request_timeout: float = 60.0,
            call_timeout: float = 600.0, label: str | None = None, **client_options: Any) -> Mount:
        """Mount ``other`` under ``prefix`` and connect to it (a failure leaves the mount down,
        tried again on use every ``retry_after`` seconds). ``ttl_ms``/``cache_scope`` fill in
        a legacy server's cache hints; the timeouts, ``label`` and the remaining options
        (``headers``, ``bearer_token``, ``client_auth``, ``env``, ``stderr``, ``mode``,
        ``restart``, ``declare``) are :func:`~mcpkit.proxy.proxy`'s."""
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValueError(f"mount prefix {prefix!r}: a letter, then letters, digits and '-' (it becomes a URI "
                             "scheme prefix)")
        if prefix in self.parts:
            raise ValueError(f"mount prefix {prefix!r} is already used")
        if other is self.server:
            raise ValueError("a server cannot be mounted on itself")
        if cache_scope not in (None, "public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        client_options.setdefault("restart", True)
        if self.bridge is None:
            self.bridge = LoopThread("mcpkit-mounts")
        backend = Backend(other, connect_timeout=connect_timeout, request_timeout=request_timeout,
                          call_timeout=call_timeout, label=label, bridge=self.bridge, **client_options)
        part = Mount(self, prefix, backend, ttl_ms=ttl_ms, cache_scope=cache_scope, retry_after=retry_after)
        self.parts[prefix] = part
        part.connect()
        self.advertise()
        return part

    def close(self) -> None:
        """Disconnect every mount (and stop their loop)."""
        for part in self.parts.values():
            if part.error != "closed":
                part.close()
        self.closed_one()

    def closed_one(self) -> None:
        """A mount was closed: once every one is, their loop stops."""
        bridge = self.bridge
        if bridge is not None and all(part.error == "closed" for part in self.parts.values()):
            self.bridge = None
            bridge.stop()

    def runner(self) -> Any:
        """What runs the host's serving coroutine on the mounts' loop, in the calling thread
        (``runner=`` of the transports' ``run_*_server``): the host and every mount then share
        one loop, with no thread hop per forwarded call. None when nothing is mounted."""
        bridge = self.bridge
        return bridge.run_here if bridge is not None else None

    # ---------------------------------------------------------------- capabilities
    def advertise(self) -> None:
        """The host advertises its own capabilities and those of every connected mount."""
        caps: dict[str, Any] = msgspec.to_builtins(self._own)
        for part in self.parts.values():
            theirs = part.backend.card.get("capabilities") or {} if part.forwarder is not None else {}
            for name in ("tools", "prompts", "resources"):
                if isinstance(theirs.get(name), dict):
                    caps[name] = {**caps.get(name, {}), "listChanged": True}
            for name in ("completions", "logging"):
                if isinstance(theirs.get(name), dict):
                    caps.setdefault(name, {})
        self.server.advertise(msgspec.convert(caps, t.ServerCapabilities))

    def notify_all(self) -> None:
        """Tell the host's listeners that every list may have changed (a mount came up)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            for method in _CHANGES.values():
                loop.call_soon_threadsafe(getattr(self.server, method))

    # ---------------------------------------------------------------- routing
    def route_name(self, name: str) -> tuple[Mount, str] | None:
        """The mount a tool or prompt name goes to (the longest prefix) and its own name there."""
        return self._route(name, "_")

    def route_uri(self, uri: str) -> tuple[Mount, str] | None:
        """The mount a resource URI goes to (the longest ``prefix+``) and its own URI there."""
        return self._route(uri, "+")

    def _route(self, name: str, sep: str) -> tuple[Mount, str] | None:
        best = None
        for prefix, part in self.parts.items():
            if name.startswith(prefix + sep) and (best is None or len(prefix) > len(best[0].prefix)):
                best = (part, name[len(prefix) + 1:])
        return best

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """A mounted tool's ``x-mcp-header`` annotations (the host checks ``Mcp-Param-*`` headers)."""
        found = self.route_name(name)
        if found is None or found[0].forwarder is None:
            return None
        return found[0].forwarder.tool_header_map(found[1])

    # ---------------------------------------------------------------- the wrapped methods
    def _seen(self) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()

    async def _listen(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        return await call_next(ctx, params)

    async def _list(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        method = ctx.method
        if params.cursor is not UNSET:
            raise errors.invalid_params(f"{method}: this server's lists come in one page (there is no next page)")
        key = _ITEMS[method][0]
        items: list[Any] = []
        ttls: list[int] = []
        scopes: list[str] = []
        page = params
        for _ in range(_MAX_PAGES):  # the host's own items, every page
            raw = msgspec.to_builtins(await call_next(ctx, page))
            items.extend(raw.get(key) or [])
            ttls.append(int(raw.get("ttlMs") or 0))
            scopes.append(str(raw.get("cacheScope") or "private"))
            cursor = raw.get("nextCursor")
            if not cursor:
                break
            page = msgspec.structs.replace(params, cursor=cursor)
        for found in await asyncio.gather(*(part.list(method) for part in self.parts.values())):
            if found is not None:
                items.extend(found[0])
                ttls.extend(found[1])
                scopes.extend(found[2])
        out = {key: items, "ttlMs": min(ttls) if ttls else 0,
               "cacheScope": "private" if "private" in scopes else "public"}
        try:
            return msgspec.convert(out, _LISTS[method])
        except msgspec.ValidationError as exc:
            raise errors.internal_error(f"{method}: a mounted server's items are malformed: {exc}") from None

    async def _asking(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        if ctx.method == "resources/read":
            found = self.route_uri(params.uri)
            if found is None:
                return await call_next(ctx, params)
            inner = msgspec.structs.replace(params, uri=found[1])
        else:
            found = self.route_name(params.name)
            if found is None:
                return await call_next(ctx, params)
            inner = msgspec.structs.replace(params, name=found[1])
        fw = await found[0].ready()
        return await fw.forward_asking(ctx, inner, call_next)

    async def _complete(self, ctx: Context, params: Any, call_next: Any) -> Any:
        self._seen()
        ref = params.ref
        if isinstance(ref, t.PromptReference):
            found = self.route_name(ref.name)
            inner_ref: Any = msgspec.structs.replace(ref, name=found[1]) if found else ref
        else:
            found = self.route_uri(ref.uri)
            inner_ref = msgspec.structs.replace(ref, uri=found[1]) if found else ref
        if found is None:
            return await call_next(ctx, params)
        fw = await found[0].ready()
        return await fw.forward_complete(ctx, msgspec.structs.replace(params, ref=inner_ref), call_next)
