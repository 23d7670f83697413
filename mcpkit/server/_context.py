"""The handler context: what a handler may know about, and do for, the request it serves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import meta as M
from ..protocol import types as t
from ..protocol.types import RequestMeta
from ._input import InputChannel, InputRequests, check_capabilities, parse_answer, schema_of

if TYPE_CHECKING:
    from ..extensions import Extension
    from ._server import Server
    from .auth._principal import Principal

#: Sends one notification (method, params) on this request's own stream.
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
#: Takes ``ctx.report_progress(progress, total, message)`` instead of a progress notification.
ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]

H = TypeVar("H")


async def _no_emit(method: str, params: dict[str, Any]) -> None:  # transports without a stream for it
    return None


class Context:
    """Passed to any handler parameter annotated with ``Context``.

    It carries this request's own ``_meta`` (version, client capabilities, client info,
    progress token, log level) and sends progress and log notifications on the request's
    stream. Nothing here outlives the request: the protocol is stateless.

    Extensions may redirect a request: ``emitter`` (where notifications go),
    ``input_channel`` (where questions go), ``progress_sink`` (where progress goes) and
    ``extensions`` (their own data) are theirs to set. ``ctx.extension(ExtClass)`` is an
    installed extension's helper for this request.

    Attributes:
        server: The :class:`~mcpkit.Server` answering the request.
        request_id: The JSON-RPC id of the request.
        method: The request's method (``tools/call``, ``resources/read``, ...).
        meta: The raw ``_meta`` of the request, every key included.
        emitter: Sends this request's notifications (``ctx.emit`` calls it); replace it to
            redirect them.
        input_channel: Where questions go; None for methods that may not ask (only MRTR
            methods may).
        state: Handler data kept across MRTR rounds (sealed into ``requestState`` with the
            answers): what a handler stores here before asking is there when the answers come.
        principal: The authenticated caller's key, when the transport knows one (MRTR state
            and tasks are bound to it).
        auth: The OAuth caller (``mcpkit.auth.server.Principal``: subject, client_id, scopes,
            claims) when the server is protected; None otherwise (and on stdio).
        peer: The caller's network address over HTTP (the socket's peer, or the client a
            trusted proxy names: ``trusted_proxies``); None on stdio and in memory.
    """

    # Slots: one Context is made per request, so it stays small and quick to build.
    __slots__ = ("server", "request_id", "method", "meta", "_m", "emitter", "_last_progress", "input_channel",
                 "_counters", "state", "principal", "auth", "_ext", "progress_sink", "peer")

    def __init__(self, server: Server, request_id: Any, method: str, meta: dict[str, Any], m: RequestMeta,
                 emit: Emit | None = None, peer: str | None = None) -> None:
        self.server = server
        self.request_id = request_id
        self.method = method
        #: The raw ``_meta`` of this request, every key included.
        self.meta = meta
        self._m = m
        #: Sends this request's notifications (``ctx.emit`` calls it); replace it to redirect them.
        self.emitter: Emit = emit or _no_emit
        self._last_progress: float | None = None
        #: Where questions go; None for methods that may not ask (only MRTR methods may).
        self.input_channel: InputChannel | None = None
        self._counters: dict[str, int] | None = None  # made on the first auto-keyed question
        #: Handler data kept across MRTR rounds (sealed into requestState with the answers).
        self.state: dict[str, Any] = {}
        #: The authenticated caller, when the transport knows one (MRTR state and tasks are bound to it).
        self.principal: str | None = None
        #: The OAuth caller (``mcpkit.auth.server.Principal``: subject, client_id, scopes,
        #: claims) when the server is protected; None otherwise (and on stdio).
        self.auth: Principal | None = None
        self._ext: dict[str, Any] | None = None  # made on first use: most requests carry no extension data
        #: When set (by an extension), ``report_progress`` hands its arguments here instead of
        #: sending ``notifications/progress`` (a task turns progress messages into its status).
        self.progress_sink: ProgressSink | None = None
        #: The caller's network address (HTTP), or None (stdio, in memory).
        self.peer = peer

    @property
    def lifespan(self) -> Any:
        """What the server's ``lifespan`` yielded (a pool, clients...), while it runs; else None."""
        return self.server.lifespan_state

    @property
    def extensions(self) -> dict[str, Any]:
        """Extensions' data for this request, keyed by extension id."""
        ext = self._ext
        if ext is None:
            ext = self._ext = {}
        return ext

    def extension(self, kind: type[Extension[H]]) -> H:
        """The per-request helper of the extension ``kind`` installed on this server
        (``server.use(kind(...))``), e.g. ``ctx.extension(Tasks).start()``.

        Raises LookupError when no such extension is installed.
        """
        ext = self.server.get_extension(kind)
        if ext is None:
            raise LookupError(f"the extension {kind.id} is not installed on this server: "
                              f"server.use({kind.__name__}(...))")
        return ext.context(self)

    # ------------------------------------------------------------ what the client said
    @property
    def protocol_version(self) -> str:
        """The protocol version this request was made in (``2026-07-28``, or the legacy session's)."""
        return self._m.protocolVersion

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared for this request (``{}`` when none)."""
        return self.meta.get(M.CLIENT_CAPABILITIES) or {}

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's ``{"name": ..., "version": ...}`` as it sent it with this request, or None."""
        return self.meta.get(M.CLIENT_INFO)

    @property
    def progress_token(self) -> str | int | None:
        """The progress token of this request, or None: :meth:`report_progress` sends nothing then."""
        return self.meta.get(M.PROGRESS_TOKEN)

    @property
    def log_level(self) -> str | None:
        """The lowest log level the client asked to receive for this request, or None (no log messages)."""
        return self.meta.get(M.LOG_LEVEL)

    def client_extension(self, ext_id: str) -> dict[str, Any] | None:
        """The settings this request's client declared for extension ``ext_id``
        (``clientCapabilities.extensions[ext_id]``; both eras), or None if it did not declare it."""
        declared = self.client_capabilities.get("extensions")
        settings = declared.get(ext_id) if isinstance(declared, dict) else None
        return settings if isinstance(settings, dict) else None

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        """Whether the client declared capability ``name`` (and ``sub`` inside it, when given),
        e.g. ``ctx.has_capability("elicitation", "form")``.
        """
        cap = self.client_capabilities.get(name)
        if not isinstance(cap, dict):
            return False
        return sub is None or sub in cap

    # ------------------------------------------------------------ notifications
    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for it; never goes backwards.

        When an extension set :attr:`progress_sink`, it takes the call instead (in a task no
        notification is sent: ``message`` becomes the task's ``statusMessage``).
        """
        sink = self.progress_sink
        if sink is not None:
            await sink(progress, total, message)
            return
        token = self.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress < self._last_progress:
            raise ValueError(f"progress must not decrease ({progress} < {self._last_progress})")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.emitter("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when this request set a log level at or below ``level``."""
        wanted = self.log_level
        if wanted is None:
            return
        rank = M.LOG_LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        if rank < M.LOG_LEVEL_RANK.get(wanted, 0):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.emitter("notifications/message", params)

    async def emit(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification on this request's stream (or wherever ``emitter`` points)."""
        await self.emitter(method, params)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        """Send a ``debug`` log message (see :meth:`log`)."""
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        """Send an ``info`` log message (see :meth:`log`)."""
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        """Send a ``warning`` log message (see :meth:`log`)."""
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        """Send an ``error`` log message (see :meth:`log`)."""
        await self.log("error", data, logger)

    # ------------------------------------------------------------ deprecated (tasks extension)
    def _tasks(self) -> Any:
        from ..protocol.tasks import EXTENSION_ID

        ext = self.server.extensions.get(EXTENSION_ID)
        return ext.context(self) if ext is not None else None

    @property
    def task_id(self) -> str | None:
        """Deprecated: ``ctx.extension(Tasks).task_id`` (:mod:`mcpkit.extensions.tasks`)."""
        tasks = self._tasks()
        return tasks.task_id if tasks is not None else None

    async def start_task(self) -> bool:
        """Deprecated: ``await ctx.extension(Tasks).start()`` (:mod:`mcpkit.extensions.tasks`);
        False when the tasks extension is not installed."""
        tasks = self._tasks()
        return bool(await tasks.start()) if tasks is not None else False

    # ------------------------------------------------------------ asking the client for input
    async def ask(self, requests: InputRequests) -> dict[str, Any]:
        """Ask several questions at once: ``{key: {"method": ..., "params": ...}}`` -> typed answers.

        Only ``tools/call``, ``prompts/get`` and ``resources/read`` handlers may ask. On a
        2026-07-28 request the handler is re-run when the answers arrive, so code before
        the question runs again: keep it idempotent, or keep results in ``ctx.state``.
        """
        channel = self.input_channel
        if channel is None:
            raise RuntimeError(f"{self.method} cannot ask the client for input (only tools/call, prompts/get, "
                               "resources/read, and a 2025-11-25 tasks/result)")
        check_capabilities(requests, self.client_capabilities)
        raw = await channel.ask(requests)
        return {k: parse_answer(k, requests[k], raw[k]) for k in requests}

    def _key(self, kind: str, key: str | None) -> str:
        if key is not None:
            return key
        counters = self._counters
        if counters is None:
            counters = self._counters = {}
        n = counters[kind] = counters.get(kind, 0) + 1
        return f"{kind}-{n}"

    async def _one(self, kind: str, key: str | None, method: str, params: dict[str, Any] | None) -> Any:
        k = self._key(kind, key)
        req: dict[str, Any] = {"method": method}
        if params is not None:
            req["params"] = params
        return (await self.ask({k: req}))[k]

    async def elicit(self, message: str, schema: Any = None, *, key: str | None = None) -> t.ElicitResult:
        """Ask the user to fill in a form (``schema``: a JSON Schema dict, dataclass, TypedDict or Struct)."""
        answer: t.ElicitResult = await self._one("elicit", key, "elicitation/create",
                                                 {"mode": "form", "message": message, "requestedSchema": schema_of(schema)})
        return answer

    async def elicit_url(self, message: str, url: str, *, key: str | None = None) -> t.ElicitResult:
        """Send the user to ``url`` (out-of-band interaction, e.g. an OAuth consent page)."""
        answer: t.ElicitResult = await self._one("elicit", key, "elicitation/create",
                                                 {"mode": "url", "message": message, "url": url})
        return answer

    async def sample(
        self,
        messages: str | list[Any],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict[str, Any] | None = None,
        include_context: str | None = None,
        tools: list[Any] | None = None,
        tool_choice: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> t.CreateMessageResult:
        """Ask the client's model for a completion (deprecated in 2026-07-28, still supported)."""
        import msgspec

        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": msgspec.to_builtins(messages), "maxTokens": max_tokens}
        for name, value in (("systemPrompt", system_prompt), ("temperature", temperature),
                            ("stopSequences", stop_sequences), ("modelPreferences", model_preferences),
                            ("includeContext", include_context), ("tools", tools), ("toolChoice", tool_choice),
                            ("metadata", metadata)):
            if value is not None:
                params[name] = msgspec.to_builtins(value)
        answer: t.CreateMessageResult = await self._one("sample", key, "sampling/createMessage", params)
        return answer

    async def list_roots(self, *, key: str | None = None) -> list[t.Root]:
        """The client's roots (deprecated in 2026-07-28, still supported)."""
        result: t.ListRootsResult = await self._one("roots", key, "roots/list", None)
        return result.roots
