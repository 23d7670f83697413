"""``mcpkit inspect``: a web inspector for an MCP server, with no Node.

The command (:mod:`mcpkit.cli._inspect`) connects mcpkit's :class:`~mcpkit.client.Client`
to a TARGET and serves a page (plain HTML, CSS and JavaScript in ``static/``, no build step,
no CDN) plus a small JSON API from an ASGI app (:class:`~mcpkit.inspect.InspectorApp`)
on uvicorn, bound to 127.0.0.1.

Access: every request must carry the random access token the command prints, as
``?token=T`` in the URL or an ``X-Inspector-Token: T`` header; without it the answer is
403. A request whose ``Origin`` is not the inspector's own, or whose ``Host`` is not the
loopback address it listens on, is refused with 403 too (other sites, DNS rebinding).
The browser the command opens gets neither: it opens a private (0600) redirect file to
``/?code=C``, a one-time code the app answers once with a 303 to ``/?token=T`` and then
refuses (403), as it does after two minutes (:class:`~mcpkit.inspect.RedirectFile`).

The API (JSON in and out; errors are ``{"error": "..."}`` with status 4xx, or 502 when
the server failed the request):

``GET /api/card``
    ``{"target", "cliTarget", "transport", "era", "legacyVersion"?, "serverInfo", "discover",
    "connected", "error"?}``;
    ``discover`` is the DiscoverResult (name, version, title, instructions, versions,
    capabilities, ``ttlMs``, ``cacheScope``); ``era`` is ``modern``, ``legacy`` or ``dual``.
``POST /api/reconnect``
    close the client, connect again; answers the new card.
``GET /api/tools`` | ``/api/resources`` | ``/api/templates`` | ``/api/prompts``
    ``{"items": [...]}`` as the server listed them (every page).
``POST /api/call`` ``{"name", "arguments", "callId"?}``
    ``{"result": CallToolResult, "ms", "progress": [...], "callId"}``, or ``{"cancelled": true,
    ...}`` when it was cancelled; progress is also sent live on the event stream.
``POST /api/cancel`` ``{"callId"}``
    cancel a call in flight (the client tells the server).
``POST /api/read`` ``{"uri"}``
    ``{"result": ReadResourceResult, "ms"}``.
``POST /api/prompt`` ``{"name", "arguments"}``
    ``{"result": GetPromptResult, "ms"}``.
``POST /api/complete`` ``{"ref", "argument", "value", "context"?}``
    ``{"completion": {"values", "total"?, "hasMore"?}}`` (``ref``: ``{"type": "ref/prompt",
    "name"}`` or ``{"type": "ref/resource", "uri"}``; ``context``: the other arguments).
``POST /api/answer`` ``{"id", "result"}``
    answer a question the server asked (an ``input`` event): an ElicitResult, or a
    CreateMessageResult for sampling (``{}`` refuses). Unanswered questions are cancelled
    after 10 minutes; with no page open they are cancelled at once.
``POST /api/listen`` ``{"tools", "prompts", "resourcesList", "resources": [URI, ...]}``
    open a ``subscriptions/listen`` stream (a legacy session: its pushed notifications),
    replacing the previous one; ``POST /api/unlisten`` closes it.
``GET /api/events``
    server-sent events, each ``data:`` one JSON object: ``progress`` (``callId``,
    ``progress``, ``total``, ``message``), ``input`` (``id``, ``kind``: ``elicitation`` or
    ``sampling``, ``params``), ``input-done`` (``id``), ``notification`` (``method``,
    ``params``, ``at``), ``listen-ended`` (``reason``).
``POST /api/app/open`` ``{"uri", "tool"?}``
    read a ``ui://`` MCP App (``text/html;profile=mcp-app``) and keep it for one frame:
    ``{"frameId", "src": "/frame/<id>", "csp", "refused", "allow", "prefersBorder"}``;
    ``GET /frame/<id>`` (no token; served once, within 60 s) is the app's document under that
    policy plus ``sandbox allow-scripts`` (see :mod:`mcpkit.inspect._apps`).
``POST /api/app/call`` ``{"frameId", "name", "arguments"}``
    ``{"result": CallToolResult}``: a ``tools/call`` from the app, relayed only to a tool whose
    visibility includes ``app`` (403 otherwise); in the history with ``"from": "app"``.
``GET /api/history``
    ``{"items": [{"id", "method", "params", "result" | "error", "ms", "at", "from"?}]}``:
    every request the inspector made for the page or an app it renders (``"from": "app"``,
    ``"app"``: its URI), and every question the server asked
    (``"from": "server"``, with the page's answer), oldest first, with its timing (``at``:
    Unix seconds when it was sent).

Nothing here is imported by ``import mcpkit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports as _lazy_exports

# What the command uses; each loads on first use (the app pulls in the client and ASGI plumbing).
_EXPORTS = {
    "Inspector": "mcpkit.inspect._app",
    "InspectorApp": "mcpkit.inspect._app",
    "RedirectFile": "mcpkit.inspect._launch",
}

__all__: list[str] = []

if TYPE_CHECKING:
    from ._app import Inspector as Inspector
    from ._app import InspectorApp as InspectorApp
    from ._launch import RedirectFile as RedirectFile

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
