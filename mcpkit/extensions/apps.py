"""The MCP Apps extension, server side: ``io.modelcontextprotocol/ui`` (SEP-1865).

A tool points at a ``ui://`` resource, an HTML document served as
``text/html;profile=mcp-app`` that a host renders in a sandboxed iframe; the app talks to the
host in JSON-RPC over ``postMessage`` and may call the server's tools through it::

    from mcpkit.extensions.apps import Apps

    apps = server.use(Apps())
    apps.app("ui://dice/board.html", html=Path("board.html"), name="Dice board",
             csp={"resourceDomains": ["https://cdn.example.com"]}, prefers_border=True)

    @server.tool(extensions={Apps.id: {"resource_uri": "ui://dice/board.html",
                                       "fallback": "Open this in an MCP Apps host to see the board."}})
    def roll(count: int = 2) -> dict[str, list[int]]: ...

    @server.tool(extensions={Apps.id: {"resource_uri": "ui://dice/board.html", "visibility": ["app"]}})
    def stats() -> str: ...                      # for the app only

What it does, per the specification:

- :meth:`Apps.app` registers the UI resource: HTML from a string, a file (read on each
  ``resources/read``) or a function (sync or async, called on each read); ``csp``
  (``connectDomains``, ``resourceDomains``, ``frameDomains``, ``baseUriDomains``,
  ``wasmUnsafeEval``), ``permissions`` (``camera``, ``microphone``, ``geolocation``,
  ``clipboardWrite``), ``domain`` and ``prefers_border`` go to ``_meta.ui`` of the listed
  resource and of its contents. CSP sources are checked (no spaces, quotes, ``;`` or ``,``:
  a host builds a policy from them).
- A tool's options (``tool(extensions={Apps.id: {...}})``): ``resource_uri`` (a ``ui://``
  resource registered with :meth:`app` first), ``visibility`` (``["model", "app"]`` by
  default) and ``fallback`` (a text, or a function of the tool's result returning one). The
  tool publishes ``_meta.ui`` (and the deprecated flat ``ui/resourceUri``).
- Negotiated per request, in both eras, from ``clientCapabilities.extensions`` (declared
  with ``mimeTypes`` holding ``text/html;profile=mcp-app``): a client that does not render
  apps does not see app-only tools (``tools/list``; calling one is ``-32602`` Unknown tool),
  and a tool's ``fallback`` text is added to its results. Handlers can ask
  ``ctx.extension(Apps).rendering``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..protocol import errors
from ..protocol import meta as M
from ..protocol import types as t
from . import Extension

if TYPE_CHECKING:
    from ..server import Context, Handler, Server, ToolDef

__all__ = ["APP_MIME_TYPE", "EXTENSION_ID", "AppContext", "AppOptions", "Apps", "client_renders_apps"]

EXTENSION_ID = M.PREFIX + "ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
Visibility = Literal["model", "app"]
VISIBILITY: tuple[str, ...] = ("model", "app")
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
# A CSP source: a scheme, host (with an optional leading *.) and port/path, or a keyword-free scheme source.
_SOURCE_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:(?://)?)?(?:\*\.)?[A-Za-z0-9.-]+(?::(?:\d{1,5}|\*))?(?:/[^\s;,'\"]*)?$"
                        r"|^[a-z][a-z0-9+.-]*:$")

HtmlSource = str | Path | Callable[[], Any]
FallbackText = str | Callable[[t.CallToolResult], str]


def client_renders_apps(ctx: Context) -> bool:
    """Whether this request's client declared MCP Apps with the HTML app MIME type (either era)."""
    settings = ctx.client_extension(EXTENSION_ID)
    if settings is None:
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


@dataclasses.dataclass(frozen=True)
class AppOptions:
    """A tool's Apps options, as ``tool.options(Apps.id)`` returns them (checked)."""

    resource_uri: str
    visibility: tuple[str, ...] = VISIBILITY
    fallback: FallbackText | None = None


class AppContext:
    """The Apps helper for one request: ``ctx.extension(Apps)``."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def rendering(self) -> bool:
        """Whether this request's client renders apps (else give it meaningful text)."""
        return client_renders_apps(self._ctx)


def _check_csp(csp: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(csp, Mapping):
        raise ValueError("csp must be a dict such as {'connectDomains': ['https://api.example.com']}")
    out: dict[str, Any] = {}
    for key, value in csp.items():
        if key == "wasmUnsafeEval":
            if not isinstance(value, bool):
                raise ValueError("csp['wasmUnsafeEval'] must be a boolean")
            out[key] = value
            continue
        if key not in CSP_KEYS:
            raise ValueError(f"unknown csp key {key!r}; known: {', '.join((*CSP_KEYS, 'wasmUnsafeEval'))}")
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(f"csp[{key!r}] must be a list of origins")
        for src in value:
            if not isinstance(src, str) or not _SOURCE_RE.match(src) or src in ("*", "'none'"):
                raise ValueError(f"csp[{key!r}]: {src!r} is not an origin such as 'https://cdn.example.com'")
        out[key] = list(value)
    return out


def _check_permissions(permissions: Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
    names = list(permissions) if not isinstance(permissions, str) else [permissions]
    for name in names:
        if name not in PERMISSIONS:
            raise ValueError(f"unknown permission {name!r}; known: {', '.join(PERMISSIONS)}")
    return {name: {} for name in names}


class Apps(Extension[AppContext]):
    """The MCP Apps extension: ``server.use(Apps())``, then :meth:`app` and tool options."""

    id: ClassVar[str] = EXTENSION_ID

    def __init__(self) -> None:
        self._server: Server | None = None
        self._apps: dict[str, dict[str, Any]] = {}
        self._hidden: set[str] = set()  # tools for apps only
        self._unlisted: set[str] = set()  # UI resources kept out of resources/list
        self._pending: list[tuple[Any, ...]] = []  # apps registered before use()

    @property
    def server(self) -> Server:
        if self._server is None:
            raise RuntimeError("Apps is not installed on a server yet: server.use(Apps())")
        return self._server

    @property
    def apps(self) -> Mapping[str, dict[str, Any]]:
        """The UI resources registered, by URI: their ``_meta.ui``."""
        return dict(self._apps)

    # ------------------------------------------------------------------ UI resources
    def app(self, uri: str, html: HtmlSource, *, name: str | None = None, title: str | None = None,
            description: str | None = None, csp: Mapping[str, Any] | None = None,
            permissions: Mapping[str, Any] | Sequence[str] | None = None, domain: str | None = None,
            prefers_border: bool | None = None, list_resource: bool = True) -> str:
        """Register the UI resource ``uri`` (``ui://...``) and return the URI.

        ``html``: the document (str), a file (``Path``, read on each read) or a function
        returning it (sync or async, called on each read). ``list_resource=False`` keeps it
        out of ``resources/list`` (hosts find it through the tools).
        """
        if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) <= len("ui://"):
            raise ValueError(f"an MCP Apps resource URI must use the ui:// scheme, got {uri!r}")
        if uri in self._apps:
            raise ValueError(f"the app {uri} is already registered")
        if not isinstance(html, (str, Path)) and not callable(html):
            raise TypeError("html is the document (str), a file (Path) or a function returning it")
        if prefers_border is not None and not isinstance(prefers_border, bool):
            raise ValueError("prefers_border must be a boolean")
        ui: dict[str, Any] = {}
        if csp is not None:
            ui["csp"] = _check_csp(csp)
        if permissions is not None:
            ui["permissions"] = _check_permissions(permissions)
        if domain is not None:
            if not isinstance(domain, str) or not domain or any(c in domain for c in " ;,'\"/"):
                raise ValueError(f"domain must be a host name, got {domain!r}")
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border
        meta = {"ui": ui} if ui else None

        async def read() -> t.ResourceContents:
            if isinstance(html, Path):
                text = html.read_text(encoding="utf-8")
            elif isinstance(html, str):
                text = html
            else:
                value = html()
                text = await value if inspect.isawaitable(value) else value
            if not isinstance(text, str):
                raise TypeError(f"the app {uri}: the html function must return a str")
            contents = t.ResourceContents(uri=uri, mimeType=APP_MIME_TYPE, text=text)
            if meta is not None:
                contents.meta = meta
            return contents

        if self._server is not None:
            self._register(uri, read, name, title, description, meta, list_resource)
        else:
            self._pending.append((uri, read, name, title, description, meta, list_resource))
        self._apps[uri] = ui
        return uri

    def _register(self, uri: str, read: Callable[[], Any], name: str | None, title: str | None,
                  description: str | None, meta: dict[str, Any] | None, list_resource: bool) -> None:
        server = self.server
        if uri in server.resources:
            raise ValueError(f"{uri} is already a resource of this server")
        server.resource(uri, name=name or uri, title=title, description=description, mime_type=APP_MIME_TYPE,
                        meta=meta)(read)
        if not list_resource:
            self._unlisted.add(uri)

    # ------------------------------------------------------------------ the Extension hooks
    def install(self, server: Server) -> None:
        self._server = server
        server.wrap_method("tools/list", self.list_tools)
        server.wrap_method("tools/call", self.call_tool)
        server.wrap_method("resources/list", self.list_resources)
        pending, self._pending = self._pending, []
        for args in pending:
            self._register(*args)

    def tool_options(self, tool: ToolDef, options: Any) -> AppOptions:
        """``{"resource_uri": "ui://...", "visibility": ["model", "app"], "fallback": text}``."""
        if isinstance(options, str):
            options = {"resource_uri": options}
        if not isinstance(options, Mapping):
            raise ValueError(f"tool {tool.name!r}: the {EXTENSION_ID} options must be a dict such as "
                             "{'resource_uri': 'ui://...'}")
        unknown = sorted(set(options) - {"resource_uri", "visibility", "fallback"})
        if unknown:
            raise ValueError(f"tool {tool.name!r}: unknown {EXTENSION_ID} options {unknown}; "
                             "known: resource_uri, visibility, fallback")
        uri = options.get("resource_uri")
        if not isinstance(uri, str) or not uri.startswith("ui://"):
            raise ValueError(f"tool {tool.name!r}: resource_uri must be a ui:// URI, got {uri!r}")
        if uri not in self._apps:
            raise ValueError(f"tool {tool.name!r}: no app is registered at {uri}; register it first with "
                             "apps.app(uri, html)")
        visibility = tuple(options.get("visibility", VISIBILITY))
        if not visibility or any(v not in VISIBILITY for v in visibility) or len(set(visibility)) != len(visibility):
            raise ValueError(f"tool {tool.name!r}: visibility must be a non-empty list of 'model' and/or 'app', "
                             f"got {options.get('visibility')!r}")
        fallback = options.get("fallback")
        if fallback is not None and not isinstance(fallback, str) and not callable(fallback):
            raise ValueError(f"tool {tool.name!r}: fallback must be a text or a function of the result")
        ui: dict[str, Any] = {"resourceUri": uri}
        if visibility != VISIBILITY:
            ui["visibility"] = list(visibility)
        tool.set_meta("ui", ui)
        tool.set_meta("ui/resourceUri", uri)  # the deprecated flat key, for older hosts
        if "model" not in visibility:
            self._hidden.add(tool.name)
        else:
            self._hidden.discard(tool.name)
        return AppOptions(uri, visibility, fallback)

    def context(self, ctx: Context) -> AppContext:
        return AppContext(ctx)

    def declared(self, ctx: Context) -> bool:
        return client_renders_apps(ctx)

    # ------------------------------------------------------------------ wrappers
    def _app_only(self, name: str) -> bool:
        tool = self.server.tools.get(name)
        opts = tool.options(EXTENSION_ID) if tool is not None else None
        return isinstance(opts, AppOptions) and "model" not in opts.visibility

    async def list_tools(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        result = await call_next(ctx, params)
        if self._hidden and isinstance(result, t.ListToolsResult):
            result.cacheScope = "private"  # the list depends on what the client renders
            if not client_renders_apps(ctx):
                result.tools = [tool for tool in result.tools if not self._app_only(tool.name)]
        return result

    async def list_resources(self, ctx: Context, params: Any, call_next: Handler) -> Any:
        result = await call_next(ctx, params)
        if self._unlisted and isinstance(result, t.ListResourcesResult):
            result.resources = [r for r in result.resources if r.uri not in self._unlisted]
        return result

    async def call_tool(self, ctx: Context, params: t.CallToolParams, call_next: Handler) -> Any:
        tool = self.server.tools.get(params.name)
        opts = tool.options(EXTENSION_ID) if tool is not None else None
        if not isinstance(opts, AppOptions):
            return await call_next(ctx, params)
        rendering = client_renders_apps(ctx)
        if not rendering and "model" not in opts.visibility:
            raise errors.invalid_params(f"Unknown tool: {params.name}", {"name": params.name})
        result = await call_next(ctx, params)
        if not rendering and opts.fallback is not None and isinstance(result, t.CallToolResult):
            text = opts.fallback(result) if callable(opts.fallback) else opts.fallback
            if text:
                result.content = [*result.content, t.TextContent(text=str(text))]
        return result
