"""The Client: one API over in-memory, stdio and HTTP servers, and its layered send path.

A request goes down through small layers, each its own method (in the manner of httpx's
``Client.send``)::

    request()                        the public call: options -> OutgoingRequest
      _send_handling_cache()         fresh results honour ttlMs/cacheScope
        _send_handling_input()       MRTR: answer inputRequests, retry with inputResponses
          _send()                    start; the final Response -> result dict or MCPError
            _send_handling_auth()    the auth hook's flow (headers; retry on e.g. 401)
              _send_handling_retries()  -32022 version, -32020 re-list, stale-era re-probe
                _send_single_request()  stamp _meta, assign an id, time limit
                  transport.request()   one exchange -> Response (message, status, headers)

The typed methods (``discover``, ``list_*``, ``call_tool``, ...) live in ``_api``, era
negotiation in ``_era``, listen streams in ``_listen``, answering the server's questions in
``_input``, the response cache in ``_cache``.
"""

from __future__ import annotations

import asyncio
import itertools
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import MCPError, ProtocolError, TransportError
from ..protocol import codec, errors, versions
from ..protocol import meta as M
from ..protocol.mrtr import MRTR_METHODS
from . import _era
from ._api import LogCallback, ProgressCallback, TypedApi, _Options
from ._auth import Auth, BearerAuth, OutgoingRequest, first_step
from ._cache import CACHEABLE, CacheMode, ResponseCache, cache_key
from ._credentials import outgoing, params_bytes, with_context
from ._era import DEFAULT_ERA_CACHE, EraCache, era_key
from ._input import ElicitationHandler, InputHandlers, Roots, SamplingHandler
from ._listen import LIST_NOTES, Hub, Notification, legacy_stream, modern_stream, subscription_filter
from ._restart import Recoverer, Recovery, resend
from ._skills import SkillsApi
from ._transport import ClientTransport, NoAnswer, OnNote, Response

if TYPE_CHECKING:
    import httpx

    from ..server import Server
    from ._http import HeaderProvider

_INF = float("inf")


class Client(TypedApi, SkillsApi):
    """An MCP client.

    ``target`` is a ``Server`` object (in-memory), a command line (a string or a list: spawned
    and spoken to over stdio), or an ``http(s)://`` URL.

    Input the server asks for (MRTR) is answered by ``elicitation``, ``sampling`` and
    ``roots``; the matching client capabilities are declared for you.

    HTTP only: ``headers`` go on every request, ``header_provider`` (sync or async) is called
    per request, ``bearer_token`` is ``auth=BearerAuth(token)``, ``auth`` is an :class:`Auth`
    hook that sees each request and each Response (status and headers) and may retry,
    ``http_client`` is an ``httpx.AsyncClient`` to use (it is not closed for you), ``verify``
    is passed to the one made otherwise, ``max_response_bytes`` (16 MiB, as stdio's line limit)
    caps a JSON answer and each SSE line and event (:class:`~mcpkit.errors.ResponseTooLarge`).

    ``restart``: recovery from a dead server (see :class:`~mcpkit.client.Recovery`). By default
    (None) a stdio server that exits is not restarted, and HTTP requests that are safe to repeat
    are retried (with backoff, 3 times) when the connection fails; True turns both on, False off.
    """

    def __init__(
        self,
        target: Server | str | Sequence[str],
        *,
        client_info: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        elicitation: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        sampling: SamplingHandler | None = None,
        roots: Roots | None = None,
        max_input_rounds: int = 8,
        protocol_version: str = versions.LATEST,
        mode: str = "auto",
        probe_timeout: float = 5.0,
        era_cache: EraCache | None = None,
        timeout: float = 30.0,
        cache: bool = True,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: Any = None,
        on_notification: OnNote | None = None,
        auth: Auth | None = None,
        headers: Mapping[str, str] | None = None,
        header_provider: HeaderProvider | None = None,
        bearer_token: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        verify: Any = True,
        max_response_bytes: int | None = None,
        restart: bool | Recovery | None = None,
    ) -> None:
        if mode not in ("auto", "legacy", "modern") and not versions.is_modern(mode):
            raise ValueError(f"mode must be 'auto', 'legacy', 'modern' or a modern protocol version, not {mode!r}")
        self.client_info = client_info or {"name": "mcpkit", "version": __version__}
        self._input = InputHandlers(elicitation, sampling, roots)
        self.capabilities = self._input.declare(capabilities, elicitation_modes)
        self.max_input_rounds = max_input_rounds
        self.protocol_version = protocol_version
        if versions.is_modern(mode):
            self.protocol_version = mode
        self.mode = mode
        self.timeout = timeout
        self.cache = ResponseCache() if cache else None
        self.on_notification = on_notification
        self.probe_timeout = probe_timeout
        self.era_cache = era_cache if era_cache is not None else DEFAULT_ERA_CACHE
        #: "modern" or "legacy" once connected.
        self.era: _era.Era | None = None
        self.legacy_version: str | None = None
        self.initialize_result: dict[str, Any] | None = None
        #: The filter the server acknowledged on the latest listen() stream.
        self.acknowledged: dict[str, Any] | None = None
        self._discovered: dict[str, Any] | None = None
        self._era_key: str | None = None
        self._era_unconfirmed = False
        self._hub = Hub()
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        http_given = [name for name, value in (("headers", headers), ("header_provider", header_provider),
                                               ("bearer_token", bearer_token), ("http_client", http_client),
                                               ("max_response_bytes", max_response_bytes))
                      if value is not None] + (["verify"] if verify is not True else [])
        if bearer_token is not None:
            if auth is not None:
                raise TypeError("give bearer_token or auth, not both")
            auth = BearerAuth(bearer_token)
        #: The auth hook (None: requests go out as they are, at no cost).
        self.auth = auth
        if auth is not None and (declared := auth.client_extensions()):
            self.capabilities["extensions"] = {**declared, **(self.capabilities.get("extensions") or {})}
        self.transport: ClientTransport = self._make_transport(
            target, env=env, cwd=cwd, stderr=stderr, http_given=http_given,
            http_options={"headers": headers, "header_provider": header_provider, "http_client": http_client,
                          "verify": verify, **({} if max_response_bytes is None else
                                               {"max_response_bytes": max_response_bytes})})
        self.transport.on_notification = self._notify_cb
        self.transport.on_request = self._input.serve  # the one place the server's requests are answered
        self._started = False
        #: Recovery from a dead server or connection (``restart``; see :mod:`mcpkit.client._restart`).
        self._recoverer = Recoverer(Recovery.of(restart))

    def _make_transport(self, target: Any, *, env: dict[str, str] | None, cwd: str | None, stderr: Any,
                        http_given: list[str], http_options: dict[str, Any]) -> ClientTransport:
        if not isinstance(target, (str, list, tuple)):
            from ._memory import MemoryTransport, is_server

            if is_server(target):
                return MemoryTransport(target)
        if isinstance(target, (list, tuple)) and len(target) == 1:
            target = target[0]
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            from ._http import HttpTransport

            self._era_key = era_key(target)
            return HttpTransport(target, auth_headers=self._auth_headers if self.auth is not None else None, **http_options)
        if http_given:
            raise TypeError(f"unexpected options for a stdio server: {', '.join(http_given)}")
        argv = shlex.split(target) if isinstance(target, str) else list(target)
        if not argv:
            raise ValueError("empty command")
        self._era_key = era_key(argv)
        from ._stdio import StdioTransport

        return StdioTransport(argv[0], argv[1:], env=env, cwd=cwd, stderr=stderr)

    # The input handlers (set at construction; the capabilities declared then stay).
    @property
    def elicitation(self) -> ElicitationHandler | None:
        return self._input.elicitation

    @elicitation.setter
    def elicitation(self, handler: ElicitationHandler | None) -> None:
        self._input.elicitation = handler

    @property
    def sampling(self) -> SamplingHandler | None:
        return self._input.sampling

    @sampling.setter
    def sampling(self, handler: SamplingHandler | None) -> None:
        self._input.sampling = handler

    @property
    def roots(self) -> Roots | None:
        return self._input.roots

    @roots.setter
    def roots(self, roots: Roots | None) -> None:
        self._input.roots = roots

    def _notify_cb(self, method: str, params: dict[str, Any]) -> None:
        """Notifications that belong to no request (and every listen stream's changes)."""
        if self.cache is not None and method in LIST_NOTES:
            self.cache.invalidate(method, params)
        self._hub.publish(method, params)  # legacy sessions: pushed changes feed listen()
        if self.on_notification is not None:
            self.on_notification(method, params)

    # ------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect: start the transport and settle which era the server speaks."""
        if not self._started:
            self._started = True
            try:
                await self.transport.start()
                await _era.settle(self)
            except BaseException:
                self._started = False
                await self.transport.close()
                raise

    async def close(self) -> None:
        if self._started:
            self._started = False
            await self.transport.close()

    # ------------------------------------------------------------ the layered send path
    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        log_level: str | None = None,
        on_log: LogCallback | None = None,
        on_notification: OnNote | None = None,
        timeout: float | None = None,
        cache: CacheMode = "use",
    ) -> dict[str, Any]:
        """Send one request (stamping ``_meta``) and return its raw result, or raise MCPError.

        ``input_required`` answers are handled here: the handlers given to the Client answer
        them and the request is retried, until a final result (or ``max_input_rounds``).
        """
        return await self._request(method, params, _Options(progress, log_level, on_log, on_notification, timeout, cache))

    async def _request(self, method: str, params: dict[str, Any] | None, opts: _Options) -> dict[str, Any]:
        on_note = None
        if opts.progress is not None or opts.on_log is not None or opts.on_notification is not None:
            on_note = _note_router(opts.progress, opts.on_log, opts.on_notification)
        token = self._new_token() if opts.progress is not None else None
        req = OutgoingRequest(method, params, on_note=on_note, progress_token=token, log_level=opts.log_level,
                              timeout=opts.timeout)
        if self.cache is not None and method in CACHEABLE:
            return await self._send_handling_cache(req, opts.cache)
        return (await self._send_handling_input(req))[0]

    def _new_token(self) -> str:
        return f"p{next(self._tokens)}"

    async def _send_handling_cache(self, req: OutgoingRequest, mode: CacheMode) -> dict[str, Any]:
        cache = self.cache
        assert cache is not None
        key = cache_key(req.method, req.params)
        if mode == "use":
            # A private entry only for the credentials this request would carry now.
            part = await outgoing(self.auth, self.transport, req) if cache.has_private(key) else None
            hit = cache.get(key, part)
            if hit is not None:
                return hit
        result, rounds = await self._send_handling_input(req)
        if rounds == 0 and mode != "bypass":  # a result after input rounds is never cached
            part = with_context(req.credentials, self.auth.cache_context()) if self.auth else req.credentials
            cache.put(key, part, req.method, result)
        return result

    async def _send_handling_input(self, req: OutgoingRequest) -> tuple[dict[str, Any], int]:
        """The final result, and how many input rounds it took."""
        result = await self._send(req)
        rounds = 0
        original = req.params
        while result.get("resultType", "complete") == "input_required":
            if req.method not in MRTR_METHODS:
                raise ProtocolError(f"{req.method}: input_required is not allowed for this method")
            rounds += 1
            if rounds > self.max_input_rounds:
                raise ProtocolError(f"{req.method}: the server still wants input after {self.max_input_rounds} rounds")
            answers = await self._input.answer_all(req.method, result.get("inputRequests"))
            # A retry is a new request (new id, new progress token).
            req = req.copy(self._input.retry_params(req.method, original, result, answers))
            if req.progress_token is not None:
                req.progress_token = self._new_token()
            result = await self._send(req)
        rt = result.get("resultType", "complete")  # a missing resultType is a pre-2026 "complete"
        if rt == "task" and req.method == "tools/call":
            return result, rounds  # the tasks extension: call_tool makes it a TaskHandle
        if rt != "complete":
            raise ProtocolError(f"{req.method}: unknown resultType {rt!r}")
        return result, rounds

    async def _send(self, req: OutgoingRequest) -> dict[str, Any]:
        """One request's result, or its error raised."""
        if not self._started:
            await self.start()
        if self.auth is not None:
            resp = await self._send_handling_auth(req)
        else:  # no hook: skip its layer altogether
            resp = await self._send_handling_retries(req)
        req.credentials = resp.credentials
        msg = resp.require_message()
        if msg.error is not None:
            e = msg.error
            raise MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
        if not isinstance(msg.result, dict):
            raise ProtocolError(f"{req.method}: the result is not an object")
        return msg.result

    async def _send_handling_auth(self, req: OutgoingRequest,
                                  send: Callable[[OutgoingRequest], Awaitable[Response]] | None = None) -> Response:
        """Run the auth hook's flow around ``send`` (the retries layer unless given)."""
        if send is None:
            send = self._send_handling_retries
        if self.auth is None:
            return await send(req)
        method, before = req.method, params_bytes(req.params) if req.method in CACHEABLE else b""
        flow = self.auth.async_flow(req)
        try:
            req = await flow.__anext__()
            while True:
                resp = await send(req)
                try:
                    req = await flow.asend(resp)
                except StopAsyncIteration:
                    if before and (req.method != method or params_bytes(req.params) != before):
                        resp.credentials = None  # the hook changed the body: a credential may be in it
                    return resp
        finally:
            await flow.aclose()

    async def _auth_headers(self, http_method: str = "POST") -> Mapping[str, str]:
        """The auth hook's headers for a transport's own requests (no answer is shown to it)."""
        assert self.auth is not None
        return (await first_step(self.auth, OutgoingRequest("", http_method=http_method))).headers

    async def _send_handling_retries(self, req: OutgoingRequest) -> Response:
        """Resend when the answer says how to do better, each at most once: -32022 (another
        version), -32020 (stale header annotations: re-list tools), and a legacy-looking answer
        under a cached "modern" verdict (re-probe the era)."""
        retried_version = retried_headers = False
        while True:
            resp = await self._send_single_request(req)
            msg = resp.message
            if msg is None:
                status = resp.status
                if self._era_unconfirmed and status is not None and 400 <= status < 500 and status not in (401, 403):
                    return await self._reprobe_and_retry(req, None)
                return resp
            if msg.error is None:
                if isinstance(msg.result, dict):
                    self._era_unconfirmed = False
                return resp
            code = msg.error.get("code")
            if code == errors.UNSUPPORTED_PROTOCOL_VERSION and not retried_version:
                chosen = _era.retry_version(msg.error.get("data"))
                if chosen is not None:
                    self.protocol_version = chosen
                    retried_version = True
                    continue
            if (code == errors.HEADER_MISMATCH and req.method == "tools/call" and not retried_headers
                    and self.transport.capabilities.supports_header_mirroring):
                retried_headers = True
                await self.list_tools(cache="refresh")
                continue
            if self._era_unconfirmed and self.era != "legacy" and code not in errors.MODERN_ERROR_CODES:
                e = msg.error
                return await self._reprobe_and_retry(req, MCPError(e.get("code", 0), e.get("message", ""), e.get("data")))
            return resp

    async def _reprobe_and_retry(self, req: OutgoingRequest, original: BaseException | None) -> Response:
        if not await _era.reprobe(self):
            if original is not None:
                raise original
            raise TransportError(f"{req.method}: the server's answer fits neither era")
        return await self._send_handling_retries(req)

    async def _send_single_request(self, req: OutgoingRequest) -> Response:
        """Stamp ``_meta``, assign an id and send once, within the time limit."""
        body = dict(req.params) if req.params else {}
        if req.stamp_meta:
            if self.era == "legacy":
                # 2025-11-25: version and capabilities were settled by initialize.
                if req.progress_token is not None:
                    body["_meta"] = {**body.get("_meta", {}), M.PROGRESS_TOKEN: req.progress_token}
            else:
                given = body.get("_meta", {})
                body["_meta"] = {**given, **self._meta(req.progress_token, req.log_level)}
                if M.CLIENT_CAPABILITIES in given:  # declared for this request only (e.g. the tasks extension)
                    body["_meta"][M.CLIENT_CAPABILITIES] = given[M.CLIENT_CAPABILITIES]
        rid = next(self._ids)
        limit = req.timeout if req.timeout is not None else self.timeout
        if req.headers:
            call = self.transport.request(rid, req.method, body, req.on_note, headers=req.headers)
        else:
            call = self.transport.request(rid, req.method, body, req.on_note)
        if self._recoverer.policy.stdio_restart or self._recoverer.policy.http_retry:
            call = self._recoverer.send(self, req.method, body, resend(call, self.transport, rid, req.method, body,
                                                                        req.on_note, req.headers))
        try:
            resp: Response | codec.Response = await (call if limit == _INF else asyncio.wait_for(call, limit))
        except TimeoutError:
            raise NoAnswer(f"{req.method}: no answer within {limit:g} s") from None
        if type(resp) is codec.Response:  # a transport written to the earlier, bare-message contract
            return Response(resp)
        return resp  # type: ignore[return-value]

    async def _notify(self, method: str, params: dict[str, Any] | None) -> None:
        headers = None
        if self.auth is not None:
            headers = (await first_step(self.auth, OutgoingRequest(method, params))).headers or None
        await self.transport.notify(method, params, headers=headers)

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
        stream is closed). The iteration ends when the server closes it. On a 2025-11-25
        server the notifications its session pushes are filtered instead.
        """
        await self.start()
        if self.era == "legacy":
            stream = legacy_stream(self._hub, self.request, tools, prompts, resources_list, resources)
        else:
            params = {"notifications": subscription_filter(tools, prompts, resources_list, resources)}

            def send(on_note: OnNote) -> Awaitable[dict[str, Any]]:
                return self._send(OutgoingRequest("subscriptions/listen", params, on_note=on_note, timeout=_INF))

            stream = modern_stream(send, self._notify_cb, self._acknowledge)
        async with aclosing(stream):
            async for note in stream:
                yield note

    def _acknowledge(self, notifications: dict[str, Any]) -> None:
        self.acknowledged = notifications


def _note_router(progress: ProgressCallback | None, on_log: LogCallback | None, other: OnNote | None) -> OnNote:
    def route(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress" and progress is not None:
            progress(params.get("progress"), params.get("total"), params.get("message"))  # type: ignore[arg-type]
        elif method == "notifications/message" and on_log is not None:
            on_log(params)
        elif other is not None:
            other(method, params)

    return route
