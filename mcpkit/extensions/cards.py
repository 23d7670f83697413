"""Server cards over HTTP (SEP-2127, **a Draft**: experimental, off by default).

A server card is a static JSON document that tells a client what a remote server is and how
to connect to it before it connects; an AI catalog lists a domain's cards. Install it on a
server served over Streamable HTTP::

    from mcpkit.extensions.cards import ServerCard

    server = Server("weather", "1.2.0", description="Forecasts and alerts")
    server.use(ServerCard(name="com.example/weather"))

(or ``server.card(name="com.example/weather")``, or ``Server(..., card=True)`` for a server
whose own name is a card name), and the HTTP app serves (through the public route hook, :meth:`Server.add_http_route`):

- ``GET <mcp-url>/server-card``: the card (``application/mcp-server-card+json``):
  ``$schema``, ``name``, ``version``, ``description``, ``title``/``websiteUrl``/``icons``
  when the server has them, ``repository`` and ``_meta`` when given, and one ``remotes``
  entry: ``streamable-http`` at the MCP endpoint's URL (``url=``, else the request's
  ``Host`` and the endpoint path) with ``supportedProtocolVersions`` (the server's
  2026-07-28 versions, plus the 2025-11-25 family when it serves legacy clients);
- ``GET /.well-known/ai-catalog.json`` (unless ``catalog=False``): an AI catalog
  (``application/ai-catalog+json``) with one entry pointing at that card, its
  ``identifier`` ``urn:air:<publisher>:mcp:<name>`` (from the card name, or ``identifier=``).

Both answer ``OPTIONS`` (CORS preflight) and send ``Access-Control-Allow-Origin: *`` (cards
are public metadata), ``Cache-Control: public, max-age=3600`` (``max_age=``) and an ``ETag``;
``If-None-Match`` with it gets ``304 Not Modified``. No OAuth applies to them.

Consistency with ``server/discover``, as the Draft asks: the card's ``version``, ``title``,
``description``, ``websiteUrl`` and ``icons`` are the server's own ``serverInfo`` (a card
value given here may fill one the server lacks, never contradict one it has: ValueError),
and its versions are the ones ``server/discover`` lists. Cards carry no tools, resources or
prompts (the Draft leaves those to the runtime listings). The extension puts nothing on the
MCP wire, so it is not advertised in ``capabilities.extensions``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..protocol import cards as C
from ..protocol import versions
from . import Extension

if TYPE_CHECKING:
    from ..server import Server
    from ..transports.routes import HttpRequest, HttpResponse

__all__ = ["ServerCard", "install_card"]

_CORS = [("access-control-allow-origin", "*"), ("access-control-allow-methods", "GET"),
         ("access-control-allow-headers", "Content-Type, If-None-Match"), ("access-control-expose-headers", "ETag")]


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    bare = etag.removeprefix("W/")
    return any(tag.strip() == "*" or tag.strip().removeprefix("W/") == bare for tag in header.split(","))


class ServerCard(Extension[None]):
    """Serve this server's card and a domain catalog over HTTP: ``server.use(ServerCard(...))``.

    ``name`` is the card's reverse-DNS ``namespace/name`` (default: the server's name, which
    must then have that form). ``description``, ``title``, ``website_url`` and ``icons`` fill
    what the server's ``serverInfo`` lacks (a card needs a description of 1 to 100
    characters). ``repository`` (``{"url", "source", ...}``) and ``meta`` (the card's
    ``_meta``) pass through. ``url`` is the MCP endpoint's public URL (default: built from
    each request). ``catalog`` serves ``/.well-known/ai-catalog.json`` too; ``identifier``
    is its entry's identifier; ``max_age`` the ``Cache-Control`` lifetime in seconds.
    """

    id: ClassVar[str] = "io.modelcontextprotocol/server-card"
    advertised: ClassVar[bool] = False

    def __init__(self, *, name: str | None = None, description: str | None = None, title: str | None = None,
                 website_url: str | None = None, icons: list[dict[str, Any]] | None = None,
                 repository: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
                 url: str | None = None, catalog: bool = True, identifier: str | None = None,
                 max_age: int = 3600) -> None:
        if name is not None:
            C.check_name(name)
        if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
            raise ValueError(f"url must be the MCP endpoint's http(s) URL, not {url!r}")
        if not isinstance(max_age, int) or max_age < 0:
            raise ValueError("max_age must be an integer >= 0 (seconds)")
        if identifier is not None and (not isinstance(identifier, str) or not identifier):
            raise ValueError("identifier must be a non-empty string")
        self._given = {"description": description, "title": title, "websiteUrl": website_url, "icons": icons}
        self.name = name
        self.repository = dict(repository) if repository is not None else None
        self.meta = dict(meta) if meta is not None else None
        self.url = url.rstrip("/") if url is not None else None
        self.catalog = catalog
        self.identifier = identifier
        self.max_age = max_age
        self._server: Server | None = None
        self._fixed: dict[str, Any] = {}

    # ------------------------------------------------------------------ the documents
    def install(self, server: Server) -> None:
        info = server.info
        name = self.name if self.name is not None else server.name
        try:
            C.check_name(name)
        except C.CardError:
            raise ValueError(f"the server's name {name!r} is not a card name: give ServerCard(name='namespace/name'), "
                             "e.g. 'com.example/weather'") from None
        import msgspec

        own = msgspec.to_builtins(info)
        fixed: dict[str, Any] = {"$schema": C.CARD_SCHEMA, "name": name, "version": info.version}
        for key in ("title", "description", "websiteUrl", "icons"):
            mine, given = own.get(key), self._given[key]
            if mine is not None and given is not None and mine != given:
                raise ValueError(f"the card's {key} {given!r} contradicts the server's own ({mine!r}): "
                                 "server/discover would say otherwise")
            value = mine if mine is not None else given
            if value is not None:
                fixed[key] = value
        if "description" not in fixed:
            raise ValueError("a server card needs a description (1-100 characters): Server(description=...) "
                             "or ServerCard(description=...)")
        if self.repository is not None:
            fixed["repository"] = self.repository
        if self.meta is not None:
            fixed["_meta"] = self.meta
        self._server = server
        self._fixed = fixed
        try:
            C.check_card(self.document("https://example.invalid/mcp"))
            if self.catalog and self.identifier is None:
                C.catalog_identifier(name)
        except C.CardError as exc:
            raise ValueError(f"this server's card would be invalid: {exc}") from None
        server.add_http_route(C.CARD_SUFFIX, self._serve_card, methods=("GET", "OPTIONS"))
        if self.catalog:
            server.add_http_route(C.CATALOG_PATH, self._serve_catalog, methods=("GET", "OPTIONS"))

    def supported_versions(self) -> list[str]:
        """The protocol versions the endpoint speaks: ``server/discover``'s, then the legacy ones."""
        server = self._server
        assert server is not None, "the card is not installed on a server"
        legacy = list(versions.LEGACY_VERSIONS) if server.legacy else []
        return list(server.supported_versions) + legacy

    def document(self, mcp_url: str) -> dict[str, Any]:
        """The card of a server whose MCP endpoint is at ``mcp_url`` (as ``/server-card`` serves it)."""
        remote = {"type": "streamable-http", "url": mcp_url, "supportedProtocolVersions": self.supported_versions()}
        return {**self._fixed, "remotes": [remote]}

    def catalog_document(self, mcp_url: str) -> dict[str, Any]:
        """The AI catalog that ``/.well-known/ai-catalog.json`` serves: one entry, this card."""
        name = self._fixed["name"]
        entry = {"identifier": self.identifier or C.catalog_identifier(name), "type": C.CARD_MEDIA_TYPE,
                 "url": f"{mcp_url.rstrip('/')}/{C.CARD_SUFFIX}"}
        return {"specVersion": C.CATALOG_SPEC_VERSION, "entries": [entry]}

    # ------------------------------------------------------------------ HTTP
    def _mcp_url(self, request: HttpRequest) -> str:
        return self.url if self.url is not None else request.base_url() + request.mcp_path

    async def _serve_card(self, request: HttpRequest) -> HttpResponse:
        return self._respond(request, lambda: self.document(self._mcp_url(request)), C.CARD_MEDIA_TYPE)

    async def _serve_catalog(self, request: HttpRequest) -> HttpResponse:
        return self._respond(request, lambda: self.catalog_document(self._mcp_url(request)), C.CATALOG_MEDIA_TYPE)

    def _respond(self, request: HttpRequest, build: Any, media_type: str) -> HttpResponse:
        from ..transports.routes import HttpResponse

        if request.method == "OPTIONS":  # CORS preflight
            return HttpResponse(204, b"", [*_CORS, ("access-control-max-age", "86400")])
        body = json.dumps(build(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        headers = [("etag", etag), ("cache-control", f"public, max-age={self.max_age}"), *_CORS]
        if _etag_matches(request.headers.get("if-none-match"), etag):
            return HttpResponse(304, b"", headers)
        return HttpResponse(200, body, [("content-type", media_type), *headers])


def install_card(server: Server, card: bool | Mapping[str, Any] | ServerCard) -> ServerCard:
    """Install a card on ``server``: what ``Server(card=...)`` and ``server.card(**options)`` run.

    ``True``: a card from the server's own ``serverInfo`` (its name must then be a card name);
    a mapping: :class:`ServerCard`'s options; a :class:`ServerCard`: that one. Anything else
    is a TypeError; an unknown option a TypeError naming it.
    """
    if card is True:
        ext = ServerCard()
    elif isinstance(card, ServerCard):
        ext = card
    elif isinstance(card, Mapping) and not isinstance(card, bool):
        if not all(isinstance(k, str) for k in card):
            raise TypeError("card options are keyword names (str)")
        try:
            ext = ServerCard(**card)
        except TypeError as exc:
            raise TypeError(f"card options: {exc} (see ServerCard)") from None
    else:
        raise TypeError(f"card= takes True, a dict of ServerCard options or a ServerCard, not {card!r}")
    return server.use(ext)
