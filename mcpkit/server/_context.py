"""The handler context: what a handler may know about, and do for, the request it serves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..protocol import meta as M
from ..protocol.types import RequestMeta

if TYPE_CHECKING:
    from ._server import Server

#: Sends one notification (method, params) on this request's own stream.
Emit = Callable[[str, dict], Awaitable[None]]


async def _no_emit(method: str, params: dict) -> None:  # transports without a stream for it
    return None


class Context:
    """Passed to any handler parameter annotated with ``Context``.

    It carries this request's own ``_meta`` (version, client capabilities, client info,
    progress token, log level) and sends progress and log notifications on the request's
    stream. Nothing here outlives the request: the protocol is stateless.
    """

    __slots__ = ("server", "request_id", "method", "meta", "_m", "_emit", "_last_progress", "input_responses", "request_state")

    def __init__(self, server: "Server", request_id: Any, method: str, meta: dict, m: RequestMeta, emit: Emit | None = None) -> None:
        self.server = server
        self.request_id = request_id
        self.method = method
        #: The raw ``_meta`` of this request, every key included.
        self.meta = meta
        self._m = m
        self._emit = emit or _no_emit
        self._last_progress: float | None = None
        self.input_responses: dict[str, Any] | None = None
        self.request_state: str | None = None

    # ------------------------------------------------------------ what the client said
    @property
    def protocol_version(self) -> str:
        return self._m.protocolVersion

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.meta.get(M.CLIENT_CAPABILITIES) or {}

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.meta.get(M.CLIENT_INFO)

    @property
    def progress_token(self) -> str | int | None:
        return self.meta.get(M.PROGRESS_TOKEN)

    @property
    def log_level(self) -> str | None:
        return self.meta.get(M.LOG_LEVEL)

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        cap = self.client_capabilities.get(name)
        if not isinstance(cap, dict):
            return False
        return sub is None or sub in cap

    # ------------------------------------------------------------ notifications
    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for it; never goes backwards."""
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
        await self._emit("notifications/progress", params)

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
        await self._emit("notifications/message", params)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)
