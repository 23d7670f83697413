"""The Client's typed API: ``discover``, the ``list_*`` walks over every page, ``call_tool``,
``read_resource``, ``get_prompt`` and ``complete`` (a base class of :class:`~mcpkit.client.Client`).

Each builds its params and per-call options, sends them through :meth:`Client._request` (the
layered send path, in :mod:`._client`) and converts the result dict to its wire type.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, cast, overload

import msgspec

from ..errors import ProtocolError
from ..protocol import meta as M
from ..protocol import types as t
from ._cache import CacheMode
from ._session import discover_from_initialize
from ._transport import ClientTransport, OnNote

if TYPE_CHECKING:
    from ._client import Client
    from ._input import InputHandlers
    from ._restart import Recoverer
    from ._session import EraSession
    from ._tasks import TaskHandle

__all__ = ["LogCallback", "ProgressCallback", "TypedApi"]

R = TypeVar("R")
log = logging.getLogger("mcpkit.client")
ProgressCallback = Callable[[float, "float | None", "str | None"], Any]
LogCallback = Callable[[dict[str, Any]], Any]


class _Options(NamedTuple):
    """The per-call options every request method takes."""

    progress: ProgressCallback | None = None
    log_level: str | None = None
    on_log: LogCallback | None = None
    on_notification: OnNote | None = None
    timeout: float | None = None
    cache: CacheMode = "use"
    answer_input: bool = True


class TypedApi:
    """The typed request methods of :class:`~mcpkit.client.Client` (which sets these up)."""

    _session: EraSession | None
    _recoverer: Recoverer
    _input: InputHandlers
    capabilities: dict[str, Any]
    #: The serverInfo of the latest DiscoverResult seen (see :attr:`server_info`).
    _server_info: dict[str, Any] | None = None

    if TYPE_CHECKING:
        @property
        def transport(self) -> ClientTransport: ...

        @property
        def legacy_version(self) -> str | None: ...

        @property
        def initialize_result(self) -> dict[str, Any] | None: ...

        async def start(self) -> None: ...

        async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]: ...

        async def _request(self, method: str, params: dict[str, Any] | None, opts: _Options) -> dict[str, Any]: ...

    async def _typed(self, typ: type[R], method: str, params: dict[str, Any] | None, opts: _Options) -> R:
        result = await self._request(method, params, opts)
        if issubclass(typ, t.CacheableResult) and ("ttlMs" not in result or "cacheScope" not in result):
            # An older server: no hints means stale at once, and never shared.
            result = {"ttlMs": 0, "cacheScope": "private", **result}
        return _convert(typ, method, result)

    @property
    def server_info(self) -> t.Implementation | None:
        """Who the server says it is (``name``, ``version``, maybe ``title``, ``description``...):
        from its DiscoverResult's ``_meta`` (2026-07-28) or its initialize result's
        ``serverInfo`` (2025-11-25). None before :meth:`start`, or when it did not say.

        A connection's era probe brings the card along; a connection that skipped the probe
        (an in-memory server, or a "modern" verdict from the era cache) knows it once
        :meth:`discover` has been called."""
        session = self._session
        if session is None:
            return None
        if session.era == "legacy":
            info = (self.initialize_result or {}).get("serverInfo")
        else:
            card = session.peek_card()  # the era probe's card, not yet handed out
            if card is not None:
                self._remember_discovered(card)
            info = self._server_info
        if not isinstance(info, dict):
            return None
        try:
            return msgspec.convert(info, t.Implementation)
        except msgspec.ValidationError:
            return None  # a server that names itself badly is unnamed, not an error here

    def _remember_discovered(self, result: Any) -> None:
        """Keep the server's identity from a DiscoverResult (a dict or the typed one)."""
        meta = result.get("_meta") if isinstance(result, dict) else getattr(result, "meta", None)
        if isinstance(meta, dict) and isinstance(meta.get(M.SERVER_INFO), dict):
            self._server_info = meta[M.SERVER_INFO]

    async def discover(self, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                       on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                       timeout: float | None = None, cache: CacheMode = "use") -> t.DiscoverResult:
        """The server's card. On a legacy server it is built from the initialize result."""
        await self.start()
        assert self._session is not None
        found = self._session.take_card(cache == "use")  # legacy: from initialize; modern: the probe's answer
        if found is not None:
            self._remember_discovered(found)
            return _convert(t.DiscoverResult, "server/discover", found)
        result = await self._typed(t.DiscoverResult, "server/discover", None,
                                   _Options(progress, log_level, on_log, on_notification, timeout, cache))
        self._remember_discovered(result)
        return result

    async def discover_raw(self) -> dict[str, Any]:
        """The DiscoverResult as the server sent it (built from initialize on a legacy server)."""
        await self.start()
        assert self._session is not None
        found = self._session.take_card(True)
        if found is None:
            found = await self.request("server/discover")
        self._remember_discovered(found)
        return found

    def discover_raw_legacy(self) -> dict[str, Any]:
        """The ``server/discover`` result built from a legacy session's ``initialize`` result, as a dict."""
        return discover_from_initialize(self.legacy_version, self.initialize_result)

    async def _walk(self, typ: type[Any], method: str, key: str, opts: _Options) -> list[Any]:
        out: list[Any] = []
        cursor: str | None = None
        for _ in range(10_000):  # a server handing back cursors forever is not our problem to loop on
            params = {"cursor": cursor} if cursor is not None else None
            page = await self._typed(typ, method, params, opts)
            out.extend(getattr(page, key))
            nxt = page.nextCursor
            if nxt is msgspec.UNSET or nxt is None:
                return out
            cursor = nxt  # an empty string is a valid cursor, not the end
        raise ProtocolError(f"{method}: too many pages")

    async def list_tools(self, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                         on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                         timeout: float | None = None, cache: CacheMode = "use") -> list[t.Tool]:
        """All tools (every page). Over HTTP, tools whose ``x-mcp-header`` annotations are
        invalid are left out (with a warning), since they could not be called correctly."""
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        tools: list[t.Tool] = await self._walk(t.ListToolsResult, "tools/list", "tools", opts)
        self._recoverer.note_tools(tools)
        if not self.transport.capabilities.http:
            return tools
        from ..protocol import headers as H

        usable, annotations = [], {}
        for tool in tools:
            try:
                ann = H.header_annotations(tool.inputSchema)
            except H.InvalidHeaderAnnotation as exc:
                log.warning("ignoring tool %r: invalid x-mcp-header annotation: %s", tool.name, exc)
                continue
            if ann:
                annotations[tool.name] = ann
            usable.append(tool)
        self.transport.use_tool_annotations(annotations)
        return usable

    async def list_resources(self, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                             on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                             timeout: float | None = None, cache: CacheMode = "use") -> list[t.Resource]:
        """All resources (every page). The keywords are those of :meth:`list_tools`: ``progress``,
        ``log_level``/``on_log``, ``on_notification``, ``timeout`` (seconds) and ``cache``
        (``"use"`` the client's cache per the server's hints, or bypass it).
        """
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return await self._walk(t.ListResourcesResult, "resources/list", "resources", opts)

    async def list_resource_templates(self, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                                      on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                                      timeout: float | None = None, cache: CacheMode = "use") -> list[t.ResourceTemplate]:
        """All resource templates (every page); keywords as for :meth:`list_resources`."""
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return await self._walk(t.ListResourceTemplatesResult, "resources/templates/list", "resourceTemplates", opts)

    async def list_prompts(self, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                           on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                           timeout: float | None = None, cache: CacheMode = "use") -> list[t.Prompt]:
        """All prompts (every page); keywords as for :meth:`list_resources`."""
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return await self._walk(t.ListPromptsResult, "prompts/list", "prompts", opts)

    @overload
    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                        progress: ProgressCallback | None = None, log_level: str | None = None,
                        on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                        timeout: float | None = None, cache: CacheMode = "use",
                        task: Literal[False] = False) -> t.CallToolResult: ...

    @overload
    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                        progress: ProgressCallback | None = None, log_level: str | None = None,
                        on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                        timeout: float | None = None, cache: CacheMode = "use",
                        task: Literal[True]) -> TaskHandle: ...

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                        progress: ProgressCallback | None = None, log_level: str | None = None,
                        on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                        timeout: float | None = None, cache: CacheMode = "use",
                        task: bool = False) -> t.CallToolResult | TaskHandle:
        """Call a tool. ``progress(progress, total, message)`` gets its progress,
        ``on_log(params)`` its log messages at ``log_level`` and above.

        ``task=True`` declares the tasks extension on this request (a 2025-11-25 server that
        offers tool tasks: ``params.task``) and returns a :class:`~mcpkit.client.TaskHandle`
        (``await handle.result()``), already complete when the server answers at once. A call
        answered with a task otherwise (the client declared the extension in ``capabilities``)
        is waited for, and its result returned.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        if task:
            await self.start()
            assert self._session is not None
            params = self._session.for_task(params, self.capabilities)
        raw = await self._request("tools/call", params, opts)
        if task or raw.get("resultType") == "task":
            # (The task modules are imported here, not per call: an import statement costs a
            # plain call some 50 bytecodes even when the modules are loaded.)
            return await self._task_result(raw, task)
        return _convert(t.CallToolResult, "tools/call", raw)

    async def _task_result(self, raw: dict[str, Any], task: bool) -> t.CallToolResult | TaskHandle:
        """A task-augmented call's answer (its handle), or a plain call answered with a task."""
        from . import _tasks, _tasks_legacy

        client = cast("Client", self)  # TypedApi is only ever a base of Client
        if task and _tasks_legacy.is_created(raw):  # a 2025-11-25 CreateTaskResult
            return _tasks_legacy.LegacyTaskHandle(client, raw, inputs=self._input)
        if raw.get("resultType") == "task":
            handle = _tasks.TaskHandle(client, raw, inputs=self._input)
            return handle if task else await handle.result()
        return _tasks.TaskHandle(client, result=_convert(t.CallToolResult, "tools/call", raw), inputs=self._input)

    async def list_tasks(self) -> list[dict[str, Any]]:
        """Every task the server keeps for this client (``tasks/list``, every page; 2025-11-25
        servers with ``capabilities.tasks.list``): the Task objects as sent (``taskId``,
        ``status``, ``statusMessage``, ``createdAt``, ``ttl``, ``pollInterval``...)."""
        from ._tasks_legacy import list_tasks

        return await list_tasks(cast("Client", self))

    async def read_resource(self, uri: str, *, progress: ProgressCallback | None = None, log_level: str | None = None,
                            on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                            timeout: float | None = None, cache: CacheMode = "use") -> t.ReadResourceResult:
        """Read the resource ``uri``: its ``ReadResourceResult`` (``contents``, each text or a base64
        blob). An unknown ``uri`` raises MCPError (-32602, or -32002 from a legacy server). Keywords as for
        :meth:`list_resources`.
        """
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return await self._typed(t.ReadResourceResult, "resources/read", {"uri": uri}, opts)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None, *,
                         progress: ProgressCallback | None = None, log_level: str | None = None,
                         on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                         timeout: float | None = None, cache: CacheMode = "use") -> t.GetPromptResult:
        """Get the prompt ``name`` with ``arguments`` (strings): its ``GetPromptResult``
        (``messages``, ``description``). Keywords as for :meth:`list_resources`.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return await self._typed(t.GetPromptResult, "prompts/get", params, opts)

    async def complete(self, ref: dict[str, Any], argument: str, value: str, context: dict[str, str] | None = None, *,
                       progress: ProgressCallback | None = None, log_level: str | None = None,
                       on_log: LogCallback | None = None, on_notification: OnNote | None = None,
                       timeout: float | None = None, cache: CacheMode = "use") -> t.Completion:
        """Completions for ``argument`` typed so far as ``value``: ``ref`` names the prompt
        (``{"type": "ref/prompt", "name": ...}``) or resource template
        (``{"type": "ref/resource", "uri": ...}``); ``context`` holds arguments already given.
        Returns the ``Completion`` (``values``, ``total``, ``hasMore``).
        """
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        opts = _Options(progress, log_level, on_log, on_notification, timeout, cache)
        return (await self._typed(t.CompleteResult, "completion/complete", params, opts)).completion


def _convert(typ: type[R], method: str, result: dict[str, Any]) -> R:
    """``method``'s raw result as ``typ`` (ProtocolError when it is malformed)."""
    try:
        return msgspec.convert(result, typ)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"{method}: malformed result: {exc}") from None
