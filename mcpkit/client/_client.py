"""The Client: one API over stdio, in-memory and HTTP servers."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import logging
import shlex
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Sequence, TypeVar

import msgspec

from .. import __version__
from ..protocol import errors, versions
from ..protocol import meta as M
from ..protocol import types as t
from ._cache import CACHEABLE, CacheMode, ResponseCache, cache_key
from ._era import DEFAULT_ERA_CACHE, EraCache, era_key
from ._transports import ClientTransport, MemoryTransport, OnNote, StdioTransport, TransportError

if TYPE_CHECKING:
    from ..server import Server

R = TypeVar("R")
log = logging.getLogger("mcpkit.client")
ProgressCallback = Callable[[float, "float | None", "str | None"], Any]
#: Answers one input request's params; sync or async.
ElicitationHandler = Callable[[t.ElicitRequestParams], "t.ElicitResult | dict | Awaitable[t.ElicitResult | dict]"]
SamplingHandler = Callable[[t.CreateMessageRequestParams], "t.CreateMessageResult | dict | Awaitable[Any]"]
RootsProvider = Callable[[], "list[t.Root | dict] | Awaitable[list[t.Root | dict]]"]

_MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_LIST_NOTES = ("notifications/tools/list_changed", "notifications/prompts/list_changed",
               "notifications/resources/list_changed", "notifications/resources/updated")


class ProtocolError(TransportError):
    """The peer sent something that is not a valid answer to our request."""


class Notification(msgspec.Struct, frozen=True):
    """A notification received on a ``listen()`` stream."""

    method: str
    params: dict[str, Any]

    @property
    def uri(self) -> str | None:
        return self.params.get("uri")


class Client:
    """An MCP client.

    ``target`` is a ``Server`` object (in-memory), a command line (a string or a list: spawned
    and spoken to over stdio), or an ``http(s)://`` URL.

    Input the server asks for (MRTR) is answered by ``elicitation``, ``sampling`` and
    ``roots``; the matching client capabilities are declared for you.
    """

    def __init__(
        self,
        target: "Server | str | Sequence[str]",
        *,
        client_info: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        elicitation: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        sampling: SamplingHandler | None = None,
        roots: "RootsProvider | list[t.Root | dict] | None" = None,
        max_input_rounds: int = 8,
        protocol_version: str = versions.LATEST,
        mode: str = "auto",
        probe_timeout: float = 5.0,
        era_cache: "EraCache | None" = None,
        timeout: float = 30.0,
        cache: bool = True,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
        on_notification: OnNote | None = None,
        **http_options: Any,
    ) -> None:
        self.client_info = client_info or {"name": "mcpkit", "version": __version__}
        caps = dict(capabilities) if capabilities is not None else {}
        if elicitation is not None:
            caps.setdefault("elicitation", {m: {} for m in elicitation_modes})
        if sampling is not None:
            caps.setdefault("sampling", {})
        if roots is not None:
            caps.setdefault("roots", {})
        self.capabilities = caps
        self.elicitation = elicitation
        self.sampling = sampling
        self.roots = roots
        self.max_input_rounds = max_input_rounds
        self.protocol_version = protocol_version
        self.timeout = timeout
        self.cache = ResponseCache() if cache else None
        self.on_notification = on_notification
        if mode not in ("auto", "legacy", "modern") and not versions.is_modern(mode):
            raise ValueError(f"mode must be 'auto', 'legacy', 'modern' or a modern protocol version, not {mode!r}")
        if versions.is_modern(mode):
            self.protocol_version = mode
        self.mode = mode
        self.probe_timeout = probe_timeout
        self.era_cache = era_cache if era_cache is not None else DEFAULT_ERA_CACHE
        #: "modern" or "legacy" once connected.
        self.era: str | None = None
        self.legacy_version: str | None = None
        self.initialize_result: dict[str, Any] | None = None
        self._discovered: dict[str, Any] | None = None
        self._era_key: str | None = None
        self._http_options = http_options
        self._listeners: set[asyncio.Queue] = set()
        #: The filter the server acknowledged on the latest listen() stream.
        self.acknowledged: dict[str, Any] | None = None
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.transport: ClientTransport = self._make_transport(target, env, cwd, stderr, http_options)
        self._started = False

    def _make_transport(self, target: Any, env, cwd, stderr, http_options) -> ClientTransport:
        from ..server import Server

        if isinstance(target, Server):
            return MemoryTransport(target, self._notify_cb)
        if isinstance(target, (list, tuple)) and len(target) == 1:
            target = target[0]
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            from ._http import HttpTransport

            self._era_key = era_key(target)
            self._url = target
            return HttpTransport(target, **http_options)
        if http_options:
            raise TypeError(f"unexpected options for a stdio server: {', '.join(http_options)}")
        argv = shlex.split(target) if isinstance(target, str) else list(target)
        if not argv:
            raise ValueError("empty command")
        self._era_key = era_key(argv)
        return StdioTransport(argv[0], argv[1:], env=env, cwd=cwd, stderr=stderr, on_notification=self._notify_cb)

    def _notify_cb(self, method: str, params: dict) -> None:
        if self.cache is not None and method in _LIST_NOTES:
            self.cache.invalidate(method, params)
        for q in self._listeners:  # legacy sessions: pushed changes feed listen()
            q.put_nowait((method, params))
        if self.on_notification is not None:
            self.on_notification(method, params)

    # ------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> "Client":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect: start the transport and settle which era the server speaks."""
        if not self._started:
            self._started = True
            try:
                await self.transport.start()
                await self._settle_era()
            except BaseException:
                self._started = False
                await self.transport.close()
                raise

    # ------------------------------------------------------------ era
    async def _settle_era(self) -> None:
        if isinstance(self.transport, MemoryTransport):
            self.era = "modern"
            return
        if self.mode == "legacy":
            await self._initialize()
            return
        if self.mode != "auto":
            self.era = "modern"
            return
        cached = self.era_cache.get(self._era_key) if self._era_key else None
        if cached == "legacy":
            try:
                await self._initialize()
                return
            except (errors.MCPError, TransportError) as exc:
                log.info("cached era 'legacy' no longer works (%s); probing again", exc)
                self.era_cache.forget(self._era_key)  # type: ignore[arg-type]
                await self._restart_transport(modern=True)
        elif cached == "modern":
            self.era = "modern"
            self._era_unconfirmed = True
            return
        verdict = await self._probe()
        if verdict == "legacy":
            await self._initialize()
        else:
            self.era = "modern"
        if self._era_key:
            self.era_cache.put(self._era_key, self.era)  # type: ignore[arg-type]

    _era_unconfirmed = False

    async def _probe(self) -> str:
        """Send server/discover under our preferred modern version and read the era off the answer."""
        from ..protocol import eras

        body = {"_meta": self._meta()}
        rid = next(self._ids)
        http = self._is_http()
        try:
            limit = min(self.probe_timeout, self.timeout)
            resp = await asyncio.wait_for(self.transport.request(rid, "server/discover", body, None), limit)
        except asyncio.TimeoutError:
            if http:
                raise TransportError(f"no answer to server/discover within {limit:g} s") from None
            return "legacy"  # silence on stdio: a legacy server waiting for initialize
        except TransportError as exc:
            status = getattr(exc, "status", None)
            if http and status is not None:
                verdict = eras.http_probe_verdict(status, None)
                if verdict == "error":
                    raise
                return verdict
            raise
        if http:
            verdict = eras.http_probe_verdict(self.transport.last_status or 200, resp)  # type: ignore[attr-defined]
            if verdict == "error":
                raise TransportError(f"the server answered the probe with HTTP {self.transport.last_status}")  # type: ignore[attr-defined]
        else:
            verdict = eras.stdio_probe_verdict(resp)
        if verdict == "modern":
            if resp.error is None:
                self._discovered = resp.result
                chosen = versions.pick_version(resp.result.get("supportedVersions") or [])
                if chosen is not None:
                    self.protocol_version = chosen
            else:
                data = resp.error.get("data")
                chosen = _retry_version(errors.MCPError(resp.error.get("code", 0), "", data), "")
                if chosen is not None:
                    self.protocol_version = chosen
                elif resp.error.get("code") == errors.UNSUPPORTED_PROTOCOL_VERSION and isinstance(data, dict) and any(
                        versions.era_of(v) == "legacy" for v in data.get("supported") or [] if isinstance(v, str)):
                    return "legacy"  # it only speaks legacy versions: that is the initialize handshake
        return verdict

    async def _restart_transport(self, modern: bool = False) -> None:
        await self.transport.close()
        if modern and hasattr(self.transport, "session_id"):
            from ._http import HttpTransport  # back to the stateless transport for the probe

            self.transport = HttpTransport(self._url, **self._http_options)
        self.era = None
        await self.transport.start()

    def _legacy_capabilities(self) -> dict[str, Any]:
        caps = {k: v for k, v in self.capabilities.items() if k in ("experimental", "sampling", "elicitation", "roots")}
        if "roots" in caps:
            caps["roots"] = {"listChanged": False}
        return caps

    async def _initialize(self) -> None:
        """The 2025-11-25 handshake: initialize, then notifications/initialized."""
        if self._is_http() and not hasattr(self.transport, "session_id"):
            from ._http import LegacyHttpTransport

            old = self.transport
            self.transport = LegacyHttpTransport(self._url, on_notification=self._notify_cb, **self._http_options)
            self.transport._client = getattr(old, "_client", None)  # reuse the connection pool
            self.transport._owns_client = True
            old._owns_client = False  # type: ignore[attr-defined]
        self.transport.on_request = self._serve_request  # type: ignore[attr-defined]
        params = {"protocolVersion": versions.LATEST_LEGACY, "capabilities": self._legacy_capabilities(),
                  "clientInfo": self.client_info}
        rid = next(self._ids)
        try:
            resp = await asyncio.wait_for(self.transport.request(rid, "initialize", params, None), self.timeout)
        except asyncio.TimeoutError:
            raise TransportError(f"no answer to initialize within {self.timeout:g} s") from None
        if resp.error is not None:
            e = resp.error
            raise errors.MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
        result = resp.result if isinstance(resp.result, dict) else {}
        version = result.get("protocolVersion")
        if versions.era_of(version) != "legacy":
            raise ProtocolError(f"initialize: the server chose protocol version {version!r}, which this client does not speak")
        self.era = "legacy"
        self.legacy_version = version
        self.initialize_result = result
        if hasattr(self.transport, "version"):
            self.transport.version = version  # type: ignore[attr-defined]
        await self.transport.notify("notifications/initialized", None)
        if hasattr(self.transport, "open_stream"):
            await self.transport.open_stream()  # type: ignore[attr-defined]

    async def _serve_request(self, method: str, params: dict) -> Any:
        """Answer a legacy server's own request with the same callbacks MRTR uses."""
        if method == "ping":
            return {}
        try:
            return await self._answer("request", {"method": method, "params": params})
        except ProtocolError as exc:
            raise errors.MCPError(errors.METHOD_NOT_FOUND, str(exc)) from None

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

    def _auth_context(self) -> str:
        """Which authorization context a private cache entry belongs to."""
        headers = getattr(self.transport, "static_headers", None) or {}
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        return hashlib.sha256(auth.encode()).hexdigest()[:16] if auth else ""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        log_level: str | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        on_notification: OnNote | None = None,
        timeout: float | None = None,
        cache: CacheMode = "use",
    ) -> dict[str, Any]:
        """Send one request (stamping ``_meta``) and return its raw result, or raise MCPError.

        ``input_required`` answers are handled here: the handlers given to the Client answer
        them and the request is retried, until a final result (or ``max_input_rounds``).
        """
        key = None
        if self.cache is not None and method in CACHEABLE:
            key = cache_key(method, params)
            if cache == "use":
                hit = self.cache.get(key, self._auth_context())
                if hit is not None:
                    return hit
        result = await self._send(method, params, progress=progress, log_level=log_level, on_log=on_log,
                                  on_notification=on_notification, timeout=timeout)
        rounds = 0
        while result.get("resultType", "complete") == "input_required":
            if method not in _MRTR_METHODS:
                raise ProtocolError(f"{method}: input_required is not allowed for this method")
            rounds += 1
            if rounds > self.max_input_rounds:
                raise ProtocolError(f"{method}: the server still wants input after {self.max_input_rounds} rounds")
            retry = dict(params or {})
            requests = result.get("inputRequests")
            if requests:
                if not isinstance(requests, dict):
                    raise ProtocolError(f"{method}: inputRequests is not an object")
                retry["inputResponses"] = await self._answer_all(requests)
            if "requestState" in result:
                retry["requestState"] = result["requestState"]  # echoed exactly, never inspected
            # A retry is a new request with a new id; its result is never cached.
            result = await self._send(method, retry, progress=progress, log_level=log_level, on_log=on_log,
                                      on_notification=on_notification, timeout=timeout)
            key = None
        rt = result.get("resultType", "complete")  # a missing resultType is a pre-2026 "complete"
        if rt != "complete":
            raise ProtocolError(f"{method}: unknown resultType {rt!r}")
        if key is not None and self.cache is not None and cache != "bypass":
            self.cache.put(key, self._auth_context(), method, result)
        return result

    async def _send(self, method: str, params: dict[str, Any] | None, *, progress, log_level, on_log,
                    on_notification, timeout) -> dict[str, Any]:
        await self.start()
        token = f"p{next(self._tokens)}" if progress is not None else None
        on_note = _note_router(progress, on_log, on_notification) if (progress or on_log or on_notification) else None
        retried_version = retried_headers = False
        legacy = self.era == "legacy"
        while True:
            body = dict(params or {})
            if legacy:
                # 2025-11-25: version and capabilities were settled by initialize.
                if token is not None:
                    body["_meta"] = {**body.get("_meta", {}), M.PROGRESS_TOKEN: token}
            else:
                body["_meta"] = {**body.get("_meta", {}), **self._meta(token, log_level)}
            rid = next(self._ids)
            limit = timeout if timeout is not None else self.timeout
            try:
                call = self.transport.request(rid, method, body, on_note)
                resp = await (call if limit == float("inf") else asyncio.wait_for(call, limit))
            except asyncio.TimeoutError:
                raise TransportError(f"{method}: no answer within {limit:g} s") from None
            except TransportError as exc:
                status = getattr(exc, "status", None)
                if self._era_unconfirmed and status is not None and 400 <= status < 500 and status not in (401, 403):
                    # A cached "modern" verdict met a legacy-looking HTTP answer: probe again.
                    return await self._reprobe_and_retry(method, params, progress, log_level, on_log, on_notification, timeout)
                raise
            if resp.error is None:
                if not isinstance(resp.result, dict):
                    raise ProtocolError(f"{method}: the result is not an object")
                self._era_unconfirmed = False
                return resp.result
            err = resp.error
            exc = errors.MCPError(err.get("code", 0), err.get("message", ""), err.get("data"))
            if exc.code == errors.UNSUPPORTED_PROTOCOL_VERSION and not retried_version:
                chosen = _retry_version(exc, self.protocol_version)
                if chosen is not None:
                    self.protocol_version = chosen
                    retried_version = True
                    continue
            if exc.code == errors.HEADER_MISMATCH and method == "tools/call" and not retried_headers and self._is_http():
                # Our Mcp-Param-* headers came from a stale inputSchema: re-list, then retry once.
                retried_headers = True
                await self.list_tools(cache="refresh")
                continue
            if self._era_unconfirmed and not legacy and exc.code not in errors.MODERN_ERROR_CODES:
                # The cached "modern" verdict may be stale: probe again, then retry once.
                return await self._reprobe_and_retry(method, params, progress, log_level, on_log, on_notification,
                                                     timeout, exc)
            raise exc

    async def _reprobe_and_retry(self, method: str, params: Any, progress: Any, log_level: Any, on_log: Any,
                                 on_notification: Any, timeout: Any, original: BaseException | None = None) -> dict[str, Any]:
        self._era_unconfirmed = False
        self.era_cache.forget(self._era_key)  # type: ignore[arg-type]
        if await self._probe() != "legacy":
            if original is not None:
                raise original
            raise TransportError(f"{method}: the server's answer fits neither era")
        await self._initialize()
        self.era_cache.put(self._era_key, "legacy")  # type: ignore[arg-type]
        return await self._send(method, params, progress=progress, log_level=log_level, on_log=on_log,
                                on_notification=on_notification, timeout=timeout)

    # ------------------------------------------------------------ answering input requests
    async def _answer_all(self, requests: dict[str, Any]) -> dict[str, Any]:
        keys = list(requests)
        answers = await asyncio.gather(*(self._answer(k, requests[k]) for k in keys))
        return dict(zip(keys, answers))

    async def _answer(self, key: str, request: Any) -> Any:
        if not isinstance(request, dict):
            raise ProtocolError(f"input request {key!r} is not an object")
        method = request.get("method")
        params = request.get("params") or {}
        try:
            if method == "elicitation/create":
                if self.elicitation is None:
                    raise ProtocolError("the server asked for elicitation, but this client has no elicitation handler")
                answer = await _call(self.elicitation, msgspec.convert(params, t.ElicitRequestParams))
            elif method == "sampling/createMessage":
                if self.sampling is None:
                    raise ProtocolError("the server asked for sampling, but this client has no sampling handler")
                answer = await _call(self.sampling, msgspec.convert(params, t.CreateMessageRequestParams))
            elif method == "roots/list":
                if self.roots is None:
                    raise ProtocolError("the server asked for roots, but this client has none")
                roots = self.roots if isinstance(self.roots, list) else await _call(self.roots)
                answer = {"roots": msgspec.to_builtins(roots)}
            else:
                raise ProtocolError(f"unknown input request method {method!r}")
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"input request {key!r} ({method}) is malformed: {exc}") from None
        return msgspec.to_builtins(answer)

    # ------------------------------------------------------------ typed API
    def _is_http(self) -> bool:
        return hasattr(self.transport, "tool_annotations")

    async def _typed(self, typ: type[R], method: str, params: dict | None = None, **kw: Any) -> R:
        result = await self.request(method, params, **kw)
        if issubclass(typ, t.CacheableResult) and ("ttlMs" not in result or "cacheScope" not in result):
            # An older server: no hints means stale at once, and never shared.
            result = {"ttlMs": 0, "cacheScope": "private", **result}
        try:
            return msgspec.convert(result, typ)
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"{method}: malformed result: {exc}") from None

    async def discover(self, **kw: Any) -> t.DiscoverResult:
        """The server's card. On a legacy server it is built from the initialize result."""
        await self.start()
        if self.era == "legacy":
            return msgspec.convert(self.discover_raw_legacy(), t.DiscoverResult)
        if self._discovered is not None and kw.get("cache", "use") == "use":
            found, self._discovered = self._discovered, None  # the probe already asked
            try:
                return msgspec.convert(found, t.DiscoverResult)
            except msgspec.ValidationError as exc:
                raise ProtocolError(f"server/discover: malformed result: {exc}") from None
        return await self._typed(t.DiscoverResult, "server/discover", **kw)

    async def discover_raw(self) -> dict[str, Any]:
        """The DiscoverResult as the server sent it (built from initialize on a legacy server)."""
        await self.start()
        if self.era == "legacy":
            return self.discover_raw_legacy()
        if self._discovered is not None:
            found, self._discovered = self._discovered, None
            return found
        return await self.request("server/discover")

    def discover_raw_legacy(self) -> dict[str, Any]:
        init = self.initialize_result or {}
        out: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": [self.legacy_version],
            "capabilities": init.get("capabilities") or {},
            "ttlMs": 0,
            "cacheScope": "private",
        }
        if init.get("instructions") is not None:
            out["instructions"] = init["instructions"]
        if isinstance(init.get("serverInfo"), dict):
            out["_meta"] = {M.SERVER_INFO: init["serverInfo"]}
        return out

    async def _walk(self, typ: type, method: str, key: str, **kw: Any) -> list[Any]:
        out: list[Any] = []
        cursor: str | None = None
        for _ in range(10_000):  # a server handing back cursors forever is not our problem to loop on
            params = {"cursor": cursor} if cursor is not None else None
            page = await self._typed(typ, method, params, **kw)
            out.extend(getattr(page, key))
            nxt = page.nextCursor
            if nxt is msgspec.UNSET or nxt is None:
                return out
            cursor = nxt  # an empty string is a valid cursor, not the end
        raise ProtocolError(f"{method}: too many pages")

    async def list_tools(self, **kw: Any) -> list[t.Tool]:
        """All tools (every page). Over HTTP, tools whose ``x-mcp-header`` annotations are
        invalid are left out (with a warning), since they could not be called correctly."""
        tools = await self._walk(t.ListToolsResult, "tools/list", "tools", **kw)
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

    async def list_resources(self, **kw: Any) -> list[t.Resource]:
        return await self._walk(t.ListResourcesResult, "resources/list", "resources", **kw)

    async def list_resource_templates(self, **kw: Any) -> list[t.ResourceTemplate]:
        return await self._walk(t.ListResourceTemplatesResult, "resources/templates/list", "resourceTemplates", **kw)

    async def list_prompts(self, **kw: Any) -> list[t.Prompt]:
        return await self._walk(t.ListPromptsResult, "prompts/list", "prompts", **kw)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> t.CallToolResult:
        """Call a tool. Options: ``progress=``, ``log_level=``, ``on_log=``, ``timeout=``."""
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
                       context: dict[str, str] | None = None, **kw: Any) -> t.Completion:
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return (await self._typed(t.CompleteResult, "completion/complete", params, **kw)).completion

    # ------------------------------------------------------------ subscriptions
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources_list: bool = False,
        resources: Sequence[str] = (),
    ) -> AsyncIterator[Notification]:
        """Open a ``subscriptions/listen`` stream and yield its change notifications.

        The server's acknowledgement (the filter it agreed to honour) is kept in
        :attr:`Client.acknowledged`, keyed by nothing but the latest stream. Leaving the
        ``async for`` ends the subscription (stdio: ``notifications/cancelled``; HTTP: the
        stream is closed). The iteration ends when the server closes it.
        """
        await self.start()
        if self.era == "legacy":
            async for note in self._legacy_listen(tools, prompts, resources_list, resources):
                yield note
            return
        filt: dict[str, Any] = {}
        if tools:
            filt["toolsListChanged"] = True
        if prompts:
            filt["promptsListChanged"] = True
        if resources_list:
            filt["resourcesListChanged"] = True
        if resources:
            filt["resourceSubscriptions"] = list(resources)
        queue: asyncio.Queue[Notification | None] = asyncio.Queue()

        def on_note(method: str, params: dict) -> None:
            if method in _LIST_NOTES:
                self._notify_cb(method, params)  # keep the cache honest
            if method == "notifications/subscriptions/acknowledged":
                notes = params.get("notifications")
                self.acknowledged = notes if isinstance(notes, dict) else {}
            else:
                queue.put_nowait(Notification(method, params))

        async def run() -> None:
            try:
                await self._send("subscriptions/listen", {"notifications": filt}, progress=None, log_level=None,
                                 on_log=None, on_notification=on_note, timeout=float("inf"))
            finally:
                queue.put_nowait(None)

        task = asyncio.ensure_future(run())
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                yield item
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        finally:
            if not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass


    async def _legacy_listen(self, tools: bool, prompts: bool, resources_list: bool,
                             resources: Sequence[str]) -> AsyncIterator[Notification]:
        """A 2025-11-25 server pushes changes on its session: subscribe, then filter them."""
        wanted = set()
        if tools:
            wanted.add("notifications/tools/list_changed")
        if prompts:
            wanted.add("notifications/prompts/list_changed")
        if resources_list:
            wanted.add("notifications/resources/list_changed")
        uris = list(resources)
        queue: asyncio.Queue = asyncio.Queue()
        self._listeners.add(queue)
        try:
            for uri in uris:
                await self.request("resources/subscribe", {"uri": uri})
            while True:
                method, params = await queue.get()
                if method in wanted or (method == "notifications/resources/updated" and params.get("uri") in uris):
                    yield Notification(method, params)
        finally:
            self._listeners.discard(queue)
            for uri in uris:
                try:
                    await self.request("resources/unsubscribe", {"uri": uri})
                except Exception:
                    pass


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


def _note_router(progress: ProgressCallback | None, on_log: Callable | None, other: OnNote | None) -> OnNote:
    def route(method: str, params: dict) -> None:
        if method == "notifications/progress" and progress is not None:
            progress(params.get("progress"), params.get("total"), params.get("message"))
        elif method == "notifications/message" and on_log is not None:
            on_log(params)
        elif other is not None:
            other(method, params)

    return route


def _retry_version(exc: errors.MCPError, current: str) -> str | None:
    data = exc.data if isinstance(exc.data, dict) else {}
    supported = data.get("supported")
    if not isinstance(supported, list):
        return None
    # Re-send with a version from ``supported`` (a new id); the caller does this at most once.
    # That may be ``current`` again: a server that rejected it while listing it (e.g. a
    # mixed-version deployment mid-rollout) gets one more try with it.
    return versions.pick_version([v for v in supported if isinstance(v, str)])
