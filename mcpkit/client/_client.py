"""The Client: one API over stdio, in-memory (and HTTP) servers."""

from __future__ import annotations

import asyncio
import itertools
import logging
import shlex
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import msgspec

from .. import __version__
from ..protocol import errors, versions
from ..protocol import meta as M
from ..protocol import types as t
from ._transports import ClientTransport, MemoryTransport, OnNote, StdioTransport, TransportError

if TYPE_CHECKING:
    from ..server import Server

R = TypeVar("R")
log = logging.getLogger("mcpkit.client")
ProgressCallback = Callable[[float, "float | None", "str | None"], Any]


class ProtocolError(TransportError):
    """The peer sent something that is not a valid answer to our request."""


class Client:
    """An MCP client.

    ``target`` is a ``Server`` object (in-memory), a command line (a string or a list: spawned
    and spoken to over stdio), or an ``http(s)://`` URL.
    """

    def __init__(
        self,
        target: "Server | str | Sequence[str]",
        *,
        client_info: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        protocol_version: str = versions.LATEST,
        timeout: float = 30.0,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
        on_notification: OnNote | None = None,
        **http_options: Any,
    ) -> None:
        self.client_info = client_info or {"name": "mcpkit", "version": __version__}
        self.capabilities = capabilities if capabilities is not None else {}
        self.protocol_version = protocol_version
        self.timeout = timeout
        self.on_notification = on_notification
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.transport: ClientTransport = self._make_transport(target, env, cwd, stderr, http_options)
        self._started = False

    def _make_transport(self, target: Any, env, cwd, stderr, http_options) -> ClientTransport:
        from ..server import Server

        if isinstance(target, Server):
            return MemoryTransport(target, self._notify_cb)
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            from ._http import HttpTransport

            return HttpTransport(target, **http_options)
        argv = shlex.split(target) if isinstance(target, str) else list(target)
        if not argv:
            raise ValueError("empty command")
        return StdioTransport(argv[0], argv[1:], env=env, cwd=cwd, stderr=stderr, on_notification=self._notify_cb)

    def _notify_cb(self, method: str, params: dict) -> None:
        if self.on_notification is not None:
            self.on_notification(method, params)

    # ------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> "Client":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self) -> None:
        if not self._started:
            await self.transport.start()
            self._started = True

    async def close(self) -> None:
        if self._started:
            self._started = False
            await self.transport.close()

    # ------------------------------------------------------------ requests
    def _meta(self, progress_token: Any = None, log_level: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {
            M.PROTOCOL_VERSION: self.protocol_version,
            M.CLIENT_CAPABILITIES: self.capabilities,
        }
        if self.client_info is not None:
            meta[M.CLIENT_INFO] = self.client_info
        if progress_token is not None:
            meta[M.PROGRESS_TOKEN] = progress_token
        if log_level is not None:
            meta[M.LOG_LEVEL] = log_level
        return meta

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        log_level: str | None = None,
        on_notification: OnNote | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one request (stamping ``_meta``) and return its raw result, or raise MCPError."""
        await self.start()
        token = f"p{next(self._tokens)}" if progress is not None else None
        on_note = _note_router(progress, on_notification) if (progress or on_notification) else None
        retried = False
        while True:
            body = dict(params or {})
            body["_meta"] = {**body.get("_meta", {}), **self._meta(token, log_level)}
            rid = next(self._ids)
            try:
                resp = await asyncio.wait_for(
                    self.transport.request(rid, method, body, on_note), timeout if timeout is not None else self.timeout
                )
            except asyncio.TimeoutError:
                raise TransportError(f"{method}: no answer within {timeout or self.timeout:g} s") from None
            if resp.error is None:
                if not isinstance(resp.result, dict):
                    raise ProtocolError(f"{method}: the result is not an object")
                return resp.result
            err = resp.error
            exc = errors.MCPError(err.get("code", 0), err.get("message", ""), err.get("data"))
            if exc.code == errors.UNSUPPORTED_PROTOCOL_VERSION and not retried:
                chosen = _retry_version(exc, self.protocol_version)
                if chosen is not None:
                    self.protocol_version = chosen
                    retried = True
                    continue
            if exc.code == errors.HEADER_MISMATCH and method == "tools/call" and not retried and self._is_http():
                # Our Mcp-Param-* headers came from a stale inputSchema: re-list, then retry once.
                retried = True
                await self.list_tools()
                continue
            raise exc

    def _is_http(self) -> bool:
        return hasattr(self.transport, "tool_annotations")

    async def _typed(self, typ: type[R], method: str, params: dict | None = None, **kw: Any) -> R:
        result = await self.request(method, params, **kw)
        rt = result.get("resultType", "complete")
        if rt != "complete":
            if rt == "input_required":
                raise ProtocolError(f"{method}: the server asked for input (MRTR), which this call does not handle")
            raise ProtocolError(f"{method}: unknown resultType {rt!r}")
        try:
            return msgspec.convert(result, typ)
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"{method}: malformed result: {exc}") from None

    async def discover(self) -> t.DiscoverResult:
        return await self._typed(t.DiscoverResult, "server/discover")

    async def _walk(self, typ: type, method: str, key: str) -> list[Any]:
        out: list[Any] = []
        cursor: str | None = None
        for _ in range(10_000):  # a server handing back cursors forever is not our problem to loop on
            params = {"cursor": cursor} if cursor is not None else None
            page = await self._typed(typ, method, params)
            out.extend(getattr(page, key))
            nxt = page.nextCursor
            if nxt is msgspec.UNSET or nxt is None:
                return out
            cursor = nxt  # an empty string is a valid cursor, not the end
        raise ProtocolError(f"{method}: too many pages")

    async def list_tools(self) -> list[t.Tool]:
        """All tools (every page). Over HTTP, tools whose ``x-mcp-header`` annotations are
        invalid are left out (with a warning), since they could not be called correctly."""
        tools = await self._walk(t.ListToolsResult, "tools/list", "tools")
        if not self._is_http():
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
        self.transport.tool_annotations = annotations  # type: ignore[attr-defined]
        return usable

    async def list_resources(self) -> list[t.Resource]:
        return await self._walk(t.ListResourcesResult, "resources/list", "resources")

    async def list_resource_templates(self) -> list[t.ResourceTemplate]:
        return await self._walk(t.ListResourceTemplatesResult, "resources/templates/list", "resourceTemplates")

    async def list_prompts(self) -> list[t.Prompt]:
        return await self._walk(t.ListPromptsResult, "prompts/list", "prompts")

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> t.CallToolResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._typed(t.CallToolResult, "tools/call", params, **kw)

    async def read_resource(self, uri: str, **kw: Any) -> t.ReadResourceResult:
        return await self._typed(t.ReadResourceResult, "resources/read", {"uri": uri}, **kw)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None, **kw: Any) -> t.GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self._typed(t.GetPromptResult, "prompts/get", params, **kw)

    async def complete(self, ref: dict[str, Any], argument: str, value: str,
                       context: dict[str, str] | None = None) -> t.Completion:
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return (await self._typed(t.CompleteResult, "completion/complete", params)).completion


def _note_router(progress: ProgressCallback | None, other: OnNote | None) -> OnNote:
    def route(method: str, params: dict) -> None:
        if method == "notifications/progress" and progress is not None:
            progress(params.get("progress"), params.get("total"), params.get("message"))
        elif other is not None:
            other(method, params)

    return route


def _retry_version(exc: errors.MCPError, current: str) -> str | None:
    data = exc.data if isinstance(exc.data, dict) else {}
    supported = data.get("supported")
    if not isinstance(supported, list):
        return None
    chosen = versions.pick_version([v for v in supported if isinstance(v, str)])
    return chosen if chosen is not None and chosen != current else None
