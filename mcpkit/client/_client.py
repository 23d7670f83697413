"""The Client: one API over in-memory, stdio and HTTP servers, and its layered send path.

A request goes down through small layers, each its own method calling only the one below (in
the manner of httpx's ``Client.send``)::

    request()                          the public call: options -> OutgoingRequest
      _send_handling_cache()           fresh results honour ttlMs/cacheScope
        _send_handling_input()         MRTR: answer inputRequests, retry with inputResponses
          _send()                      start; the final Response -> result dict or MCPError
            _send_handling_signals()   act on what a layer below signals, then send again
              _send_handling_auth()    the auth hook's flow (headers; retry on e.g. 401)
                _send_handling_retries()   -32022: another version; signals -32020 and a stale era
                  _send_handling_recovery()  HTTP: retry safe requests; stdio: signals a dead server
                    _send_single_request()   stamp _meta (the era's rule), assign an id, time limit
                      transport.request()    one exchange -> Response (message, status, headers)

A lower layer never calls back up: it raises a signal (:mod:`._signals`: the tools' header
annotations are stale, the remembered era no longer fits, the stdio server died) and
``_send_handling_signals`` re-lists, re-negotiates or restarts, and sends again.

The era is an object (:mod:`._session`: ``ModernSession``, ``LegacySession``) settled by a
``Negotiation`` (:mod:`._era`); the Client asks it, never tests the era by name. The typed
methods (``discover``, ``list_*``, ``call_tool``, ...) live in ``_api``, listen streams in
``_listen``, answering the server's questions in ``_input``, the response cache in ``_cache``,
recovery in ``_restart``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._timers import Schedule, schedule_for, within
from .._version import __version__
from ..errors import MCPError, ProtocolError, RequestNotRetried, TransportClosed, TransportError
from ..protocol import codec, errors, versions
from ..protocol.mrtr import MRTR_METHODS
from . import _hooks
from ._api import LogCallback, ProgressCallback, TypedApi, _Options
from ._auth import Auth, BearerAuth, OutgoingRequest, first_step
from ._cache import CACHEABLE, CacheMode, ResponseCache, cache_key, credentials
from ._connect import make_transport
from ._era import DEFAULT_ERA_CACHE, EraCache, Link, Negotiation, Slot
from ._input import ElicitationHandler, InputHandlers, InputProperties, Roots, SamplingHandler
from ._listen import LIST_NOTES, Hub, Notification, note_router
from ._restart import Recoverer, Recovery
from ._session import ChangeFeeds, Era, EraSession, Hello, ModernSession
from ._signals import EraStale, ServerExited, ToolsStale
from ._skills_api import SkillsApi
from ._transport import ClientTransport, NoAnswer, OnNote, Response

if TYPE_CHECKING:
    import httpx

    from ..server import Server
    from ._http import HeaderProvider

_INF = float("inf")
log = logging.getLogger("mcpkit.client")
#: How requests are stamped before any era is settled (the probe itself): 2026-07-28.
_UNSETTLED = ModernSession()


class Client(TypedApi, SkillsApi, InputProperties):
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
    ``transport``: ``"auto"`` (a URL whose path ends in ``/sse`` is a 2024-11-05 HTTP+SSE server,
    any other Streamable HTTP, falling back to HTTP+SSE when ``initialize`` is refused with
    400, 404 or 405), ``"sse"`` or ``"streamable-http"`` (no fallback).

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
        transport: str = "auto",
    ) -> None:
        if transport not in ("auto", "sse", "streamable-http"):
            raise ValueError(f"transport must be 'auto', 'sse' or 'streamable-http', not {transport!r}")
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
        self._timers: Schedule | None = None  # the requests' time limits, one timer (on the loop in use)
        self.cache = ResponseCache() if cache else None
        self.on_notification = on_notification
        self.probe_timeout = probe_timeout
        self.era_cache = era_cache if era_cache is not None else DEFAULT_ERA_CACHE
        #: The era this client speaks with its server (None until connected).
        self._session: EraSession | None = None
        #: The filter the server acknowledged on the latest listen() stream.
        self.acknowledged: dict[str, Any] | None = None
        self._era_key: str | None = None
        self._hub = Hub()
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        http_given = [name for name, value in (("headers", headers), ("header_provider", header_provider),
                                               ("bearer_token", bearer_token), ("http_client", http_client),
                                               ("max_response_bytes", max_response_bytes))
                      if value is not None] + (["verify"] if verify is not True else []) + \
            ([f"transport={transport!r}"] if transport != "auto" else [])
        if bearer_token is not None:
            if auth is not None:
                raise TypeError("give bearer_token or auth, not both")
            auth = BearerAuth(bearer_token)
        #: The auth hook (None: requests go out as they are, at no cost).
        self.auth = auth
        if auth is not None and (declared := auth.client_extensions()):
            self.capabilities["extensions"] = {**declared, **(self.capabilities.get("extensions") or {})}
        made, self._era_key = make_transport(
            target, mode=self.mode, auth_headers=self._auth_headers if auth is not None else None, env=env, cwd=cwd,
            stderr=stderr, http_given=http_given, transport=transport,
            http_options={"headers": headers, "header_provider": header_provider, "http_client": http_client,
                          "verify": verify, **({} if max_response_bytes is None else
                                               {"max_response_bytes": max_response_bytes})})
        self._slot = Slot(made)
        self.transport.on_notification = self._notify_cb
        self.transport.on_request = self._serve_request  # the one place the server's requests are answered
        self._started = False
        #: Recovery from a dead server or connection (``restart``; see :mod:`mcpkit.client._restart`).
        self._recoverer = Recoverer(Recovery.of(restart))
        #: What era negotiation sends through: auth over one send, never the retries or restarts.
        self._link = Link(self._send_negotiating, self._notify, self._slot, self._serve_input)
        self._feeds = ChangeFeeds(self._hub, self.request, self._send_listen, self._notify_cb, self._acknowledge)

    @property
    def transport(self) -> ClientTransport:
        """The transport requests go through now (era negotiation may switch it)."""
        return self._slot.transport

    @transport.setter
    def transport(self, transport: ClientTransport) -> None:
        self._slot.transport = transport

    @property
    def era(self) -> Era | None:
        """``"modern"`` or ``"legacy"`` once connected (None before)."""
        return self._session.era if self._session is not None else None

    @property
    def legacy_version(self) -> str | None:
        """The 2025-11-25 version ``initialize`` settled on (a legacy server only)."""
        return self._session.legacy_version if self._session is not None else None

    @property
    def initialize_result(self) -> dict[str, Any] | None:
        """The server's ``initialize`` result (a legacy server only)."""
        return self._session.initialize_result if self._session is not None else None

    def _notify_cb(self, method: str, params: dict[str, Any]) -> None:
        """Notifications that belong to no request (and every listen stream's changes)."""
        if _hooks.observer is not None:  # telemetry: a SERVER span around handling it
            _hooks.observer.received(self, method, params, lambda: self._on_note(method, params))
        else:
            self._on_note(method, params)

    def _on_note(self, method: str, params: dict[str, Any]) -> None:
        if self.cache is not None and method in LIST_NOTES:
            self.cache.invalidate(method, params)
        self._hub.publish(method, params)  # legacy sessions: pushed changes feed listen()
        if self.on_notification is not None:
            self.on_notification(method, params)

    # ------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Client:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._close(exc[1])

    async def start(self) -> None:
        """Connect: start the transport and settle which era the server speaks."""
        if not self._started:
            self._started = True
            if _hooks.observer is not None:  # telemetry: mcp.client.session.duration
                _hooks.observer.opened(self)
            try:
                await self.transport.start()
                self._session = None  # negotiation speaks 2026-07-28 until it knows better
                self._use(await self._negotiation().settle())
            except BaseException as exc:
                await self._close(exc)
                raise

    async def close(self) -> None:
        """Close the transport (a stdio server is stopped, an HTTP session ended); nothing
        happens when it is not started. ``async with Client(...)`` calls it on the way out."""
        await self._close(None)

    async def _close(self, error: BaseException | None) -> None:
        if self._started:
            self._started = False
            await self.transport.close()
            if _hooks.observer is not None:
                _hooks.observer.closed(self, error)

    # ------------------------------------------------------------ the era
    def _negotiation(self) -> Negotiation:
        return Negotiation(self._link, self.mode, self.capabilities, self.client_info, self.probe_timeout,
                           self.timeout, self.era_cache, self._era_key)

    def _use(self, session: EraSession) -> None:
        self._session = session
        if session.version is not None:
            self.protocol_version = session.version

    def _serve_input(self) -> None:
        self._input.serving = True  # a legacy session: the server may now ask for sampling, elicitation, roots

    async def _renegotiate(self) -> bool:
        """The remembered era met an answer of the other one: probe again. True when it changed."""
        session, switched = await self._negotiation().reprobe()
        self._use(session)
        return switched

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
        answer_input: bool = True,
    ) -> dict[str, Any]:
        """Send one request (stamping ``_meta``) and return its raw result, or raise MCPError.

        ``input_required`` answers are handled here: the handlers given to the Client answer
        them and the request is retried, until a final result (or ``max_input_rounds``).

        ``answer_input=False`` sends one round only: an ``input_required`` result is returned
        as it is (``inputRequests`` unanswered, ``requestState`` opaque), for the caller to
        answer, e.g. a proxy relaying the questions to its own client (declare what it can
        answer with ``capabilities=``). The retry is another such call whose ``params`` carry
        ``inputResponses`` (by the keys asked) and the ``requestState`` echoed exactly. Such
        rounds never use or fill the response cache.
        """
        return await self._request(method, params, _Options(progress, log_level, on_log, on_notification, timeout, cache,
                                                            answer_input))

    async def _request(self, method: str, params: dict[str, Any] | None, opts: _Options) -> dict[str, Any]:
        on_note = None
        if opts.progress is not None or opts.on_log is not None or opts.on_notification is not None:
            on_note = note_router(opts.progress, opts.on_log, opts.on_notification)
        token = self._new_token() if opts.progress is not None else None
        req = OutgoingRequest(method, params, on_note=on_note, progress_token=token, log_level=opts.log_level,
                              timeout=opts.timeout)
        if not opts.answer_input:
            return await self._send_one_round(req)
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
            part = await credentials().outgoing(self.auth, self.transport, req) if cache.has_private(key) else None
            hit = cache.get(key, part)
            if hit is not None:
                return hit
        result, rounds = await self._send_handling_input(req)
        if rounds == 0 and mode != "bypass":  # a result after input rounds is never cached
            part = credentials().with_context(req.credentials, self.auth.cache_context()) if self.auth else req.credentials
            cache.put(key, part, req.method, result)
        return result

    async def _send_handling_input(self, req: OutgoingRequest) -> tuple[dict[str, Any], int]:
        """The final result, and how many input rounds it took."""
        if _hooks.observer is None or req.method not in MRTR_METHODS:
            return await self._send_rounds(req)
        with _hooks.observer.rounds(self, req.method):  # telemetry: one span across the rounds
            return await self._send_rounds(req)

    async def _send_rounds(self, req: OutgoingRequest) -> tuple[dict[str, Any], int]:
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

    async def _send_one_round(self, req: OutgoingRequest) -> dict[str, Any]:
        """One round of a request, its ``input_required`` result returned unanswered."""
        result = await self._send(req)
        rt = result.get("resultType", "complete")
        if rt == "input_required" and req.method not in MRTR_METHODS:
            raise ProtocolError(f"{req.method}: input_required is not allowed for this method")
        if rt not in ("complete", "input_required") and not (rt == "task" and req.method == "tools/call"):
            raise ProtocolError(f"{req.method}: unknown resultType {rt!r}")
        return result

    async def _send(self, req: OutgoingRequest) -> dict[str, Any]:
        """One request's result, or its error raised."""
        if not self._started:
            await self.start()
        resp = await self._send_handling_signals(req)
        req.credentials = resp.credentials
        msg = resp.require_message()
        if msg.error is not None:
            e = msg.error
            raise MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
        if not isinstance(msg.result, dict):
            raise ProtocolError(f"{req.method}: the result is not an object")
        return msg.result

    async def _send_handling_signals(self, req: OutgoingRequest) -> Response:
        """Send, and act on what the layers below signal, each at most once per request (a
        dead stdio server: within the restart budget): re-list tools (-32020), re-negotiate
        the era, restart the server (then re-send only what is safe to repeat)."""
        relisted = renegotiated = False
        restarts = 0
        while True:
            try:
                if self.auth is not None:
                    return await self._send_handling_auth(req)
                return await self._send_handling_retries(req)  # no hook: skip its layer altogether
            except ToolsStale as sig:
                if relisted:
                    return sig.response
                relisted = True
                await self.list_tools(cache="refresh")
            except EraStale as sig:
                if renegotiated or not await self._renegotiate():
                    if sig.error is not None:
                        raise sig.error from None
                    raise TransportError(f"{req.method}: the server's answer fits neither era") from None
                renegotiated = True
            except ServerExited as sig:
                if sig.sent and restarts >= self._recoverer.policy.attempts:
                    raise sig.cause from None
                async with self._recoverer.restarting(sig.generation, sig.cause) as mine:
                    if mine:
                        await self.close()
                        await self.start()
                if sig.sent:
                    if not self._recoverer.is_safe(req.method, req.params):
                        raise RequestNotRetried(
                            f"{req.method}: the server exited while handling it; it was restarted, but the request was"
                            f" not sent again because it may not be safe to repeat ({sig.cause})") from sig.cause
                    restarts += 1
                    log.warning("re-sending %s to the restarted server", req.method)

    async def _send_handling_auth(self, req: OutgoingRequest,
                                  below: Callable[[OutgoingRequest], Awaitable[Response]] | None = None) -> Response:
        """Run the auth hook's flow around the layer ``below`` (the retries unless given)."""
        send = below if below is not None else self._send_handling_retries
        if self.auth is None:
            return await send(req)
        params_bytes = credentials().params_bytes
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

    async def _send_negotiating(self, req: OutgoingRequest) -> Response:
        """Era negotiation's send: the auth flow over one send (HTTP retries, no restarts)."""
        return await self._send_handling_auth(req, self._send_handling_recovery_only)

    async def _auth_headers(self, http_method: str = "POST") -> Mapping[str, str]:
        """The auth hook's headers for a transport's own requests (no answer is shown to it)."""
        assert self.auth is not None
        return (await first_step(self.auth, OutgoingRequest("", http_method=http_method))).headers

    async def _send_handling_retries(self, req: OutgoingRequest) -> Response:
        """Resend with another version after -32022 (once); signal a -32020 header mismatch
        (:class:`ToolsStale`) and an answer that does not fit the era (:class:`EraStale`)."""
        retried_version = False
        while True:
            resp = await self._send_handling_recovery(req)
            session = self._session or _UNSETTLED
            msg = resp.message
            if msg is not None and msg.error is not None:
                code = msg.error.get("code")
                if code == errors.UNSUPPORTED_PROTOCOL_VERSION and not retried_version:
                    chosen = session.retry_version(msg.error)
                    if chosen is not None:
                        self.protocol_version = chosen
                        retried_version = True
                        continue
                if (code == errors.HEADER_MISMATCH and req.method == "tools/call"
                        and self.transport.capabilities.supports_header_mirroring):
                    raise ToolsStale(resp)
            session.vet(resp)
            return resp

    def _send_handling_recovery(self, req: OutgoingRequest) -> Awaitable[Response]:
        """HTTP: retry a safe request whose connection failed. stdio: a dead server is
        signalled (:class:`ServerExited`) for the top to restart, when restarts are on.
        (It picks the layer below and returns its awaitable: no frame of its own per request.)"""
        if self.transport.capabilities.kind == "stdio" and self._recoverer.policy.stdio_restart:
            return self._send_handling_restarts(req)
        return self._send_handling_recovery_only(req)

    async def _send_handling_restarts(self, req: OutgoingRequest) -> Response:
        transport = self.transport
        generation = self._recoverer.generation
        if transport.closed:  # it died earlier: nothing of this request was sent yet
            raise ServerExited(TransportClosed("the server had exited"), generation, sent=False)
        try:
            return await self._send_single_request(req)
        except TransportClosed as exc:
            raise ServerExited(exc, generation, sent=True) from exc

    async def _send_handling_recovery_only(self, req: OutgoingRequest) -> Response:
        """The HTTP half of recovery (retries); stdio deaths are raised as they are. The first
        attempt is awaited here; only a failure that may be retried goes to the recoverer."""
        if self.transport.capabilities.http and self._recoverer.policy.http_retry:
            try:
                return await self._send_single_request(req)
            except TransportError as exc:
                if not self._recoverer.retried(exc):
                    raise
                return await self._recoverer.retry(req.method, req.params, lambda: self._send_single_request(req), exc)
        return await self._send_single_request(req)

    async def _send_single_request(self, req: OutgoingRequest) -> Response:
        """Stamp ``_meta`` (the era session's rule), assign an id and send once, within the time limit."""
        body = dict(req.params) if req.params else {}
        if req.stamp_meta:
            (self._session or _UNSETTLED).stamp(body, req.progress_token, req.log_level,
                                                Hello(self.protocol_version, self.capabilities, self.client_info))
        rid = next(self._ids)
        around = None
        on_note = req.on_note
        if _hooks.observer is not None:  # telemetry: a CLIENT span; the request's notifications traced
            around = _hooks.observer(self, req.method, rid, body)
            on_note = on_note and _hooks.observer.listener(self, on_note)
        limit = req.timeout if req.timeout is not None else self.timeout
        if req.headers:
            call = self.transport.request(rid, req.method, body, on_note, headers=req.headers)
        else:
            call = self.transport.request(rid, req.method, body, on_note)
        try:
            if around is not None:  # mcpkit.observability: a CLIENT span around the exchange, time limit included
                resp: Response | codec.Response = await around(call if limit == _INF else asyncio.wait_for(call, limit))
            elif limit == _INF:
                resp = await call
            else:  # the limit on this task itself (wait_for's own task cost two more loop turns a call)
                self._timers = timers = schedule_for(self._timers)
                resp = await within(timers, call, limit)
        except TimeoutError:
            raise NoAnswer(f"{req.method}: no answer within {limit:g} s") from None
        if type(resp) is codec.Response:  # a transport written to the earlier, bare-message contract
            return Response(resp)
        return resp  # type: ignore[return-value]

    async def _notify(self, method: str, params: dict[str, Any] | None) -> None:
        headers = None
        if self.auth is not None:
            headers = (await first_step(self.auth, OutgoingRequest(method, params))).headers or None
        if _hooks.observer is not None:  # telemetry: a CLIENT span, its context in params._meta
            return await _hooks.observer.notify(self, method, params or {},
                                                lambda body: self.transport.notify(method, body, headers=headers))
        await self.transport.notify(method, params, headers=headers)

    async def _serve_request(self, method: str, params: dict[str, Any]) -> Any:
        if _hooks.observer is not None:  # telemetry: a SERVER span
            return await _hooks.observer.serve(self, method, params, self._input.serve)
        return await self._input.serve(method, params)

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
        assert self._session is not None
        stream = self._session.changes(self._feeds, tools, prompts, resources_list, resources)
        async with aclosing(stream):
            async for note in stream:
                yield note

    def _send_listen(self, params: dict[str, Any], on_note: OnNote) -> Awaitable[dict[str, Any]]:
        return self._send(OutgoingRequest("subscriptions/listen", params, on_note=on_note, timeout=_INF))

    def _acknowledge(self, notifications: dict[str, Any]) -> None:
        self.acknowledged = notifications

