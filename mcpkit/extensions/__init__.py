"""Extensions as objects: one class per extension, installed with ``server.use(extension)``.

An extension is a subclass of :class:`Extension` with an ``id`` (``prefix/name``, e.g.
``io.modelcontextprotocol/tasks``). ``server.use(ext)``:

1. advertises ``capabilities.extensions[ext.id] = ext.settings()`` (both eras: ``server/discover``
   and ``initialize``), which also opens every method registered with
   ``capability=ext.capability``;
2. calls ``ext.install(server)``, where the extension registers what it serves through the
   server's public hooks (``add_method``, ``wrap_method``, ``add_middleware``, ``resource``,
   ``tool``, ``require_scopes``, ``add_extension`` to change its settings);
3. from then on, a tool registered with ``tool(..., extensions={ext.id: options})`` hands its
   options to ``ext.tool_options(tool, options)``, which checks them (ValueError refuses the
   registration) and returns what the tool keeps; the extension reads them back per request
   with ``tool.options(ext.id)`` (and may publish ``_meta`` with ``tool.set_meta``);
4. a handler reaches the extension's per-request helper with ``ctx.extension(ExtClass)``
   (:meth:`Extension.context` builds it), typed by the class's parameter: ``Extension[H]``.

Whether the client of one request declared the extension is ``ext.declared(ctx)`` (its
``clientCapabilities.extensions``: in ``_meta`` on 2026-07-28 requests, from ``initialize``
on legacy sessions). The built-in ones are :class:`mcpkit.extensions.tasks.Tasks`,
:class:`mcpkit.extensions.skills.Skills`, :class:`mcpkit.extensions.apps.Apps` and
:class:`mcpkit.extensions.cards.ServerCard` (experimental: it tracks a Draft).

Importing this package loads no extension: each lives in its own module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from .._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from ..server import Context, Server, ToolDef
    from .apps import Apps as Apps
    from .cards import ServerCard as ServerCard
    from .skills import Skills as Skills
    from .tasks import Tasks as Tasks

__all__ = ["Apps", "Extension", "ServerCard", "Skills", "Tasks"]

H = TypeVar("H")


class Extension(Generic[H]):
    """A server extension: subclass it, set :attr:`id`, override what the extension needs.

    ``H`` is the type of the per-request helper that :meth:`context` returns (what
    ``ctx.extension(ThisClass)`` gives a handler); use ``Extension[None]`` for none.
    """

    #: The extension identifier: a reverse-DNS prefix, a slash, a name.
    id: ClassVar[str] = ""
    #: Whether ``server.use`` advertises ``capabilities.extensions[id]``; False for an extension
    #: that puts nothing on the MCP wire (server cards: plain HTTP documents).
    advertised: ClassVar[bool] = True

    @property
    def capability(self) -> str:
        """The capability name that gates this extension's methods (``add_method(..., capability=)``)."""
        return f"extensions/{self.id}"

    def settings(self) -> dict[str, Any]:
        """What ``capabilities.extensions[id]`` advertises (``{}``: supported, no settings)."""
        return {}

    def install(self, server: Server) -> None:
        """Register the extension's methods, wrappers, resources... through public hooks.

        Called once by ``server.use(self)``, after the capability is advertised.
        """

    def tool_options(self, tool: ToolDef, options: Any) -> Any:
        """Check the options a tool was registered with (``tool(extensions={id: options})``)
        and return what the tool keeps (``tool.options(id)``). Raise ValueError to refuse.

        The default refuses every option: an extension takes per-tool options only if it says so.
        """
        raise ValueError(f"tool {tool.name!r}: the extension {self.id} takes no per-tool options")

    def context(self, ctx: Context) -> H:
        """The per-request helper a handler gets from ``ctx.extension(type(self))``."""
        raise TypeError(f"the extension {self.id} offers no context helper")

    def declared(self, ctx: Context) -> bool:
        """Whether this request's client declared the extension (either era)."""
        return ctx.client_extension(self.id) is not None


# The built-in extensions load on first use: `import mcpkit.extensions` imports none of them.
_EXPORTS = {"Apps": "mcpkit.extensions.apps", "ServerCard": "mcpkit.extensions.cards",
            "Skills": "mcpkit.extensions.skills", "Tasks": "mcpkit.extensions.tasks"}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
