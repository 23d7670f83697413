"""A proxy: any MCP server (stdio command, ``http(s)`` URL, in-process ``Server``; either era)
re-served as an mcpkit :class:`~mcpkit.Server` to clients of both eras.

    from mcpkit.proxy import proxy

    server = proxy(["node", "server-everything/dist/index.js", "stdio"])
    server.run("http", port=8000)          # or server.run() for stdio, or server.http_app()

:func:`proxy` connects to the backend first (its loop runs on a daemon thread), so the front
advertises exactly what the backend has, then returns a :class:`ProxyServer` whose tools,
resources, templates, prompts, completions, list changes and carried extensions (skills,
tasks: :mod:`._extensions`) forward to it; ``server.run()`` serves the front on the backend's
own loop (no thread hop per call). Era translation:

- a 2026-07-28 front client gets a legacy backend's server-to-client requests (elicitation,
  sampling, roots) as ``input_required``; its retry answers the waiting backend request, kept
  in this process under an unguessable id sealed in the ``requestState`` (bounded, expiring,
  bound to the caller). With several workers sharing Redis a retry that reaches another
  worker is relayed to the one holding it (:mod:`._relay`; without Redis it fails closed),
  and so are the requests for a 2025-11-25 backend's task (to the worker that created it);
- a 2025-11-25 front client gets them (and a modern backend's ``input_required``) as real
  requests on its session;
- the backend is told only the client capabilities the proxy can honour (``declare=``); a
  front client that lacks one gets ``-32021`` and the backend's question an error, never a hang;
- cache hints pass through from a modern backend; for a legacy one they come from ``ttl_ms``
  and ``cache_scope`` (``private`` when the front has ``auth``, else ``public``);
- tasks cross eras: a backend's tasks (2025-11-25 tool tasks, or the 2026-07-28 tasks
  extension) are offered to each front client in its own revision's form, questions a task
  asks included (:mod:`._tasks_legacy`, :mod:`._tasks_modern`);
- progress and cancellation pass through; a backend failure is one JSON-RPC error. A stdio
  backend that dies is restarted by the client's recovery rules (``restart=``).

Composition: :meth:`Server.mount <mcpkit.Server.mount>` serves another server (anything
``proxy`` takes) beside a server's own under a prefix; see :class:`Mounts` for the naming rules
(``prefix_tool``, ``prefix+scheme://...``), how lists and caching hints combine, and how a
failing mount degrades.

Front credentials are never passed to the backend: the backend connection carries its own
(``headers=``, ``bearer_token=``, ``client_auth=``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal

from ..server import Server
from . import _tasks_legacy, _tasks_modern
from ._backend import Backend
from ._extensions import carried
from ._front import STATE_KEY, Forwarder, front_capabilities
from ._mount import Mount, Mounts

__all__ = ["STATE_KEY", "Backend", "Mount", "Mounts", "ProxyServer", "proxy"]


class ProxyServer(Server):
    """A :class:`~mcpkit.Server` that forwards to :attr:`backend` (made by :func:`proxy`)."""

    backend: Backend
    forwarder: Forwarder

    def tool_header_map(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The backend tool ``name``'s ``x-mcp-header`` annotations (the front checks
        ``Mcp-Param-*`` headers against them); None if it has none or is unknown."""
        return self.forwarder.tool_header_map(name)

    def runner(self) -> Callable[[Coroutine[Any, Any, None]], object] | None:
        """What runs the front's serving coroutine: on the backend's loop, in the calling
        thread (``runner=`` of the transports' ``run_*_server``), so front and backend share
        one loop; None once closed."""
        bridge = self.backend.bridge
        return bridge.run_here if bridge is not None else None

    def run(self, transport: Literal["stdio", "http", "streamable-http"] = "stdio", **kwargs: Any) -> None:
        """As :meth:`Server.run <mcpkit.Server.run>`, the front served on the backend's loop."""
        kwargs.setdefault("runner", self.runner())
        super().run(transport, **kwargs)

    def relay_through(self, node: Any) -> None:
        """Several workers sharing Redis (``node``: this worker's
        :class:`~mcpkit.backends.redis.RedisBackend` ``.node``): an MRTR retry for a legacy
        backend's question that reaches this worker is relayed to the worker holding it, and
        a request for a 2025-11-25 backend's task to the worker that created it
        (:mod:`._relay`); this worker answers those relayed to it."""
        from ._relay import Relay

        self.forwarder.relay = Relay(self.forwarder, node)
        self.forwarder.worker_id = self.forwarder.relay.worker_id

    def close(self) -> None:
        """Disconnect from the backend (a stdio backend is stopped) and stop its loop."""
        for call in self.forwarder.pending.clear():
            self.forwarder._cancel(call)
        self.backend.close()


def proxy(
    target: Any,
    *,
    name: str | None = None,
    version: str | None = None,
    ttl_ms: int | None = None,
    cache_scope: str | None = None,
    auth: Any = None,
    declare: Sequence[str] = ("elicitation", "sampling", "roots"),
    connect_timeout: float = 10.0,
    request_timeout: float = 60.0,
    call_timeout: float = 600.0,
    pending_limit: int = 1000,
    pending_ttl: float = 600.0,
    max_sessions: int = 16,
    session_idle_ttl: float = 300.0,
    restart: Any = True,
    headers: Mapping[str, str] | None = None,
    bearer_token: str | None = None,
    client_auth: Any = None,
    env: dict[str, str] | None = None,
    stderr: Any = None,
    mode: str = "auto",
    label: str | None = None,
    **server_options: Any,
) -> ProxyServer:
    """Connect to ``target`` and return a Server that forwards to it (see the module docstring).

    ``target``: a command line (list, or string split like a shell), an ``http(s)://`` URL or
    a ``Server``. ``name``/``version`` default to the backend's ``serverInfo``. ``auth``
    protects the front (``mcpkit.auth.server.ResourceServerAuth``); ``headers``,
    ``bearer_token`` and ``client_auth`` (an :class:`mcpkit.client.Auth`) authenticate the
    proxy to an HTTP backend. ``connect_timeout`` bounds the connection (a backend that never
    answers ``initialize`` raises :class:`~mcpkit.errors.TransportError`), ``request_timeout``
    each list/completion, ``call_timeout`` each tool call, prompt or read (questions included).
    ``pending_limit``/``pending_ttl`` bound the backend calls waiting for an MRTR retry.
    ``max_sessions``/``session_idle_ttl`` bound a legacy backend's sessions (one per front
    principal and client-capability set, :mod:`mcpkit.proxy._pool`).
    Other keyword arguments go to :class:`~mcpkit.Server` (``state_keys``, ``page_size``...).
    """
    if pending_limit < 1 or pending_ttl <= 0:
        raise ValueError("pending_limit must be at least 1 and pending_ttl positive")
    if cache_scope not in (None, "public", "private"):
        raise ValueError("cache_scope must be 'public' or 'private'")
    client_options: dict[str, Any] = {"restart": restart, "mode": mode}
    for key, value in (("headers", headers), ("bearer_token", bearer_token), ("auth", client_auth),
                       ("env", env), ("stderr", stderr)):
        if value is not None:
            client_options[key] = value
    backend = Backend(target, connect_timeout=connect_timeout, request_timeout=request_timeout,
                      call_timeout=call_timeout, declare=declare, label=label, max_sessions=max_sessions,
                      idle_ttl=session_idle_ttl, **client_options)
    backend.connect()
    try:
        card = backend.card
        meta = card.get("_meta")
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        info = info if isinstance(info, dict) else {}
        instructions = card.get("instructions")
        server_options.setdefault("state_ttl", pending_ttl)
        server = ProxyServer(name or str(info.get("name") or "mcpkit-proxy"),
                             version or str(info.get("version") or "0"),
                             instructions=instructions if isinstance(instructions, str) else None,
                             auth=auth, **server_options)
        server.advertise(front_capabilities(card.get("capabilities") or {}, carried(backend)))
        forwarder = Forwarder(server, backend, ttl_ms=ttl_ms, cache_scope=cache_scope,
                              pending_limit=pending_limit, pending_ttl=pending_ttl)
        forwarder.install()
        server.advertise_legacy(_tasks_legacy.legacy_capability(backend) or
                                (_tasks_modern.capability() if _tasks_modern.offers(backend) else {}))
        forwarder.load_tool_headers()
        server.backend = backend
        server.forwarder = forwarder
        return server
    except BaseException:
        backend.close()
        raise
