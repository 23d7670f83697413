"""Server cards (SEP-2127, a Draft): mcpkit/extensions/cards.py on the HTTP route hook
(mcpkit/transports/routes.py), the shapes (mcpkit/protocol/cards.py) and
``mcpkit discover --card``.

A real uvicorn (``mcpkit serve --http``) serves tests/servers/card_server.py with the card,
without it, and with a broken one; every bad configuration and document is refused with a
clear message.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from mcpkit import Client, Server
from mcpkit.extensions.cards import ServerCard
from mcpkit.protocol import cards as C
from mcpkit.protocol import versions
from mcpkit.transports.routes import HttpRequest, HttpResponse, HttpRoute, mount
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.servers import mcpkit_serve_argv, running_server

CARD_SERVER = ROOT / "tests" / "servers" / "card_server.py"


def _serve(mode: str) -> Any:
    return running_server(mcpkit_serve_argv(CARD_SERVER), env=subprocess_env(MCPKIT_TEST_CARD=mode), timeout=30)


@pytest.fixture(scope="module")
def url() -> Any:
    with _serve("on") as u:
        yield u


def _get(u: str, **headers: str) -> httpx.Response:
    return httpx.get(u, headers=headers, timeout=10, trust_env=False)


def test_card_shape_and_headers(url: str) -> None:
    r = _get(url + "/server-card", Accept=C.CARD_MEDIA_TYPE)
    assert r.status_code == 200
    assert r.headers["content-type"] == C.CARD_MEDIA_TYPE
    assert r.headers["cache-control"] == "public, max-age=3600"
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["access-control-expose-headers"] == "ETag"
    card = C.check_card(r.json())
    assert card == {
        "$schema": C.CARD_SCHEMA, "name": "com.example/weather", "version": "1.2.0", "title": "Weather",
        "description": "Forecasts and alerts", "websiteUrl": "https://example.com/weather",
        "repository": {"url": "https://example.com/src", "source": "github"},
        "remotes": [{"type": "streamable-http", "url": url,
                     "supportedProtocolVersions": [*versions.MODERN_VERSIONS, *versions.LEGACY_VERSIONS]}],
    }
    assert "tools" not in card  # the Draft leaves primitives to the runtime listings


def test_card_is_consistent_with_discover(url: str) -> None:
    card = _get(url + "/server-card").json()

    async def go() -> None:
        async with Client(url) as client:
            found = await client.discover()
            info = client.server_info
            assert info is not None
            assert (info.version, info.title, info.description, info.websiteUrl) == \
                (card["version"], card["title"], card["description"], card["websiteUrl"])
            remote = card["remotes"][0]
            assert set(found.supportedVersions) <= set(remote["supportedProtocolVersions"])
            assert remote["url"] == url  # the endpoint the client just spoke to
            assert "extensions" not in (card.get("_meta") or {})
            assert ServerCard.id not in (found.capabilities.extensions or {})  # nothing on the MCP wire

    run(go())


def test_etag_and_if_none_match(url: str) -> None:
    first = _get(url + "/server-card")
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = _get(url + "/server-card", **{"If-None-Match": header})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        assert again.headers["access-control-allow-origin"] == "*"
    changed = _get(url + "/server-card", **{"If-None-Match": '"stale"'})
    assert changed.status_code == 200 and changed.headers["etag"] == etag and changed.json() == first.json()


def test_cors_preflight_and_methods(url: str) -> None:
    for target in (url + "/server-card", url.removesuffix("/mcp") + C.CATALOG_PATH):
        pre = httpx.options(target, headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET",
                                             "Access-Control-Request-Headers": "if-none-match"}, trust_env=False)
        assert pre.status_code == 204
        assert pre.headers["access-control-allow-origin"] == "*"
        assert pre.headers["access-control-allow-methods"] == "GET"
        assert pre.headers["access-control-allow-headers"] == "Content-Type, If-None-Match"
    # A browser page on any origin reads the card; the MCP endpoint still refuses that origin.
    assert _get(url + "/server-card", Origin="https://app.example").status_code == 200
    mcp = httpx.post(url, headers={"Origin": "https://app.example", "Content-Type": "application/json"}, content=b"{}",
                     trust_env=False)
    assert mcp.status_code == 403
    head = httpx.head(url + "/server-card", trust_env=False)
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 100
    post = httpx.post(url + "/server-card", content=b"{}", trust_env=False)
    assert post.status_code == 405 and post.headers["allow"] == "GET, OPTIONS, HEAD"
    wrong_host = _get(url + "/server-card", Host="evil.example")
    assert wrong_host.status_code == 403


def test_catalog(url: str) -> None:
    base = url.removesuffix("/mcp")
    r = _get(base + C.CATALOG_PATH)
    assert r.status_code == 200 and r.headers["content-type"] == C.CATALOG_MEDIA_TYPE
    assert r.headers["access-control-allow-origin"] == "*" and "etag" in r.headers
    catalog = C.check_catalog(r.json())
    assert catalog == {"specVersion": "1.0", "entries": [
        {"identifier": "urn:air:example.com:mcp:weather", "type": C.CARD_MEDIA_TYPE, "url": url + "/server-card"}]}
    assert _get(catalog["entries"][0]["url"]).json()["name"] == "com.example/weather"
    assert _get(base + C.CATALOG_PATH, **{"If-None-Match": r.headers["etag"]}).status_code == 304


def test_off_by_default() -> None:
    with _serve("off") as u:
        assert _get(u + "/server-card").status_code == 404
        assert _get(u.removesuffix("/mcp") + C.CATALOG_PATH).status_code == 404
        out = _discover_card(u)
        assert out.returncode == 1
        assert out.stderr.strip().splitlines() == [
            f"mcpkit discover: GET {u}/server-card: HTTP 404 (no server card there: a server serves one only when "
            "it enables it)"]


def test_card_true_in_the_constructor() -> None:
    """``Server(card=True)``: the card comes from the server's own info, catalog included."""
    with _serve("ctor") as u:
        r = _get(u + "/server-card")
        assert r.status_code == 200 and r.headers["content-type"] == C.CARD_MEDIA_TYPE
        card = C.check_card(r.json())
        assert card["name"] == "com.example/weather" and card["version"] == "1.2.0"
        assert card["description"] == "Forecasts and alerts" and "repository" not in card
        assert card["remotes"][0]["url"] == u
        catalog = _get(u.removesuffix("/mcp") + C.CATALOG_PATH).json()
        assert catalog["entries"][0]["identifier"] == "urn:air:example.com:mcp:weather"
        assert catalog["entries"][0]["url"] == u + "/server-card"

        async def info() -> str:
            async with Client(u) as client:
                await client.discover()
                assert client.server_info is not None
                return client.server_info.name

        assert run(info()) == card["name"]  # consistent with server/discover


def test_server_card_method() -> None:
    """``server.card(**options)`` is ``server.use(ServerCard(**options))``."""
    with _serve("method") as u:
        r = _get(u + "/server-card")
        assert r.status_code == 200 and r.headers["cache-control"] == "public, max-age=60"
        assert C.check_card(r.json())["name"] == "com.example/weather"
        assert _get(u.removesuffix("/mcp") + C.CATALOG_PATH).status_code == 404  # catalog=False


def test_card_spellings_in_process() -> None:
    server = Server("w", "1.0.0", description="d")
    card = server.card(name="com.example/w", identifier="urn:air:example.com:mcp:w")
    assert server.get_extension(ServerCard) is card and set(server.http_routes) == {
        "server-card", C.CATALOG_PATH}
    with pytest.raises(RuntimeError, match="already installed"):
        server.card(name="com.example/w")
    given = ServerCard(name="com.example/w", catalog=False)
    assert Server("w", description="d", card=given).get_extension(ServerCard) is given
    from_dict = Server("w", description="d", card={"name": "com.example/w", "max_age": 5})
    assert from_dict.get_extension(ServerCard).max_age == 5  # type: ignore[union-attr]
    for off in (None, False):
        assert Server("w", description="d", card=off).http_routes == {}


@pytest.mark.parametrize("card, error, problem", [
    (True, ValueError, "not a card name: give ServerCard\\(name="),   # the server's name is no card name
    ({"nmae": "com.example/w"}, TypeError, "card options: .*'nmae'"),
    ({"name": "bare"}, ValueError, "reverse-DNS"),
    ("yes", TypeError, "card= takes True, a dict of ServerCard options or a ServerCard"),
    (1, TypeError, "card= takes True"),
    ({1: "x"}, TypeError, "keyword names"),
])
def test_bad_card_argument(card: Any, error: type[Exception], problem: str) -> None:
    with pytest.raises(error, match=problem):
        Server("w", description="d", card=card)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nmae'"):
        Server("w", description="d").card(nmae="com.example/w")


# ---------------------------------------------------------------- mcpkit discover --card
def _discover_card(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpkit", "discover", "--card", *args], capture_output=True,
                          text=True, timeout=60, env=subprocess_env(), stdin=subprocess.DEVNULL)


def test_discover_card_cli(url: str) -> None:
    for target in (url, url + "/server-card"):
        out = _discover_card(target)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "Weather (com.example/weather)  v1.2.0"
        assert f"Remote:        streamable-http {url}" in lines
    catalog = _discover_card(url.removesuffix("/mcp") + C.CATALOG_PATH)
    assert catalog.returncode == 0 and catalog.stdout.splitlines()[:3] == [
        "AI catalog: 1 MCP server card(s)", "", "urn:air:example.com:mcp:weather"]
    as_json = _discover_card("--json", url)
    assert as_json.returncode == 0
    import json

    assert json.loads(as_json.stdout)["card"]["name"] == "com.example/weather"


def test_discover_card_refuses_bad_input() -> None:
    with _serve("bad") as u:
        out = _discover_card(u)
        assert out.returncode == 1
        assert out.stderr.strip().splitlines() == [f"mcpkit discover: {u}/server-card is not a server card: name must be "
                                                   "reverse-DNS 'namespace/name' (e.g. 'com.example/weather'), not 'weather'"]
    bad = _discover_card("ftp://example.com/card")
    assert bad.returncode == 1 and bad.stderr.strip() == "mcpkit discover: 'ftp://example.com/card' is not an http(s) URL"
    two = _discover_card("http://a/mcp", "http://b/mcp")
    assert two.returncode == 2 and "--card takes one URL" in two.stderr


# ---------------------------------------------------------------- the shapes
GOOD = {"$schema": C.CARD_SCHEMA, "name": "example-org/minimal", "version": "1.0.0", "description": "Smallest card."}


@pytest.mark.parametrize("change, problem", [
    ({"$schema": None}, "'$schema' must be"),
    ({"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"}, "'$schema' must be"),
    ({"name": None}, "'name' is missing"),
    ({"name": "no-slash"}, "reverse-DNS"),
    ({"name": "a/b/c"}, "reverse-DNS"),
    ({"version": "^1.2.3"}, "not a range"),
    ({"version": "1.x"}, "not a range"),
    ({"description": ""}, "non-empty string"),
    ({"description": "x" * 101}, "longer than 100"),
    ({"websiteUrl": "javascript:alert(1)"}, "http(s) URL"),
    ({"repository": {"url": "https://x"}}, "'repository' must be"),
    ({"icons": [{"mimeType": "image/png"}]}, "'icons' must be"),
    ({"remotes": [{"type": "stdio", "url": "https://x"}]}, "remotes[0]: 'type'"),
    ({"remotes": [{"type": "sse", "url": "ftp://x"}]}, "remotes[0]: 'url'"),
    ({"remotes": [{"type": "sse", "url": "{tenant}.example.com", "headers": [{}]}]}, "'headers' must be"),
    ({"remotes": [{"type": "sse", "url": "https://x", "supportedProtocolVersions": "2026-07-28"}]}, "list of strings"),
    ({"_meta": []}, "'_meta' must be"),
])
def test_bad_cards(change: dict[str, Any], problem: str) -> None:
    doc = {**GOOD, **change}
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(C.CardError, match=re.escape(problem)):
        C.check_card(doc)
    assert C.check_card(GOOD) == GOOD
    with pytest.raises(C.CardError, match="JSON object"):
        C.check_card([GOOD])


def test_bad_catalogs() -> None:
    entry = {"identifier": "urn:air:example.com:mcp:x", "type": C.CARD_MEDIA_TYPE}
    for doc, problem in (([], "JSON object"), ({"entries": []}, "'specVersion' is missing"),
                         ({"specVersion": "1.0"}, "'entries' must be a list"),
                         ({"specVersion": "1.0", "entries": [entry]}, "exactly one of 'url' and 'data'"),
                         ({"specVersion": "1.0", "entries": [{**entry, "url": "x", "data": GOOD}]}, "exactly one"),
                         ({"specVersion": "1.0", "entries": [{**entry, "data": {**GOOD, "name": "x"}}]},
                          "entries\\[0\\]: data: name must be")):
        with pytest.raises(C.CardError, match=problem):
            C.check_catalog(doc)
    other = {"identifier": "agent", "type": "application/a2a-agent-card+json"}  # another kind of entry: not ours to check
    assert C.check_catalog({"specVersion": "1.0", "entries": [other, {**entry, "data": GOOD}]})
    assert C.catalog_identifier("io.github.acme/code-review") == "urn:air:acme.github.io:mcp:code-review"


# ---------------------------------------------------------------- configuration
@pytest.mark.parametrize("server, card, problem", [
    (Server("weather", description="d"), ServerCard(), "not a card name: give ServerCard\\(name="),
    (Server("w"), ServerCard(name="com.example/w"), "needs a description"),
    (Server("w", description="mine"), ServerCard(name="com.example/w", description="other"), "contradicts"),
    (Server("w", description="x" * 101), ServerCard(name="com.example/w"), "would be invalid: .*longer than 100"),
])
def test_bad_configuration(server: Server, card: ServerCard, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        server.use(card)
    assert server.http_routes == {} and server.get_extension(ServerCard) is None


def test_bad_arguments() -> None:
    for kw, problem in (({"name": "bare"}, "reverse-DNS"), ({"url": "ws://x"}, "http\\(s\\) URL"),
                        ({"max_age": -1}, "max_age"), ({"identifier": ""}, "identifier")):
        with pytest.raises(ValueError, match=problem):
            ServerCard(**kw)


def test_filling_what_the_server_lacks_and_no_catalog() -> None:
    server = Server("w", "2.0.0")
    card = server.use(ServerCard(name="com.example/w", description="Filled", title="T", catalog=False,
                                 url="https://mcp.example.com/mcp/", meta={"com.example/tier": "free"}))
    assert set(server.http_routes) == {"server-card"}
    doc = card.document("https://mcp.example.com/mcp")
    assert doc["description"] == "Filled" and doc["title"] == "T" and doc["_meta"] == {"com.example/tier": "free"}
    assert card.url == "https://mcp.example.com/mcp"
    legacy_off = Server("w", "2.0.0", description="d", legacy=False).use(ServerCard(name="com.example/w"))
    assert legacy_off.supported_versions() == list(versions.MODERN_VERSIONS)


# ---------------------------------------------------------------- the route hook
async def _ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, b"ok")


def test_route_hook_rules() -> None:
    for path in ("", "/", "a b", "../x", "x/./y", "x?y"):
        with pytest.raises(ValueError, match="invalid route path"):
            HttpRoute(path, _ok)
    with pytest.raises(ValueError, match="GET and/or OPTIONS"):
        HttpRoute("x", _ok, ("POST",))
    with pytest.raises(TypeError):
        HttpRoute("x", "not callable")  # type: ignore[arg-type]
    server = Server("s")
    server.add_http_route("x", _ok)
    with pytest.raises(ValueError, match="already served"):
        server.add_http_route("x", _ok)
    routes = {"a": HttpRoute("a", _ok), "b": HttpRoute("/.well-known/b", _ok)}
    assert set(mount(routes, "/mcp")) == {"/mcp/a", "/.well-known/b"}
    assert set(mount(routes, "/")) == {"/a", "/.well-known/b"}
    with pytest.raises(ValueError, match="replace the MCP endpoint"):
        mount({"m": HttpRoute("/mcp", _ok)}, "/mcp")
    with pytest.raises(ValueError, match="two routes"):
        mount({"a": HttpRoute("a", _ok), "b": HttpRoute("/mcp/a", _ok)}, "/mcp")


# ---------------------------------------------------------------- in process: OAuth, a broken route
class _NoTokens:
    async def verify(self, token: str, request: Any) -> Any:
        return None


def _asgi_get(app: Any, path: str, **headers: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            return await client.get(path, headers=headers)

    return run(go())


def test_card_needs_no_token_on_a_protected_server() -> None:
    from mcpkit.auth.server import ResourceServerAuth

    auth = ResourceServerAuth(_NoTokens(), resource="http://127.0.0.1:8000/mcp", authorization_servers=["https://as"],
                              scopes=["mcp"])
    server = Server("w", "1.0.0", description="Protected", auth=auth)
    server.use(ServerCard(name="com.example/w"))
    app = server.http_app()
    assert _asgi_get(app, "/mcp/server-card").json()["name"] == "com.example/w"
    assert _asgi_get(app, C.CATALOG_PATH).status_code == 200
    mcp = _asgi_get(app, "/mcp", Accept="text/event-stream")
    assert mcp.status_code == 401  # the MCP endpoint itself still wants a token


def test_a_failing_route_is_a_500() -> None:
    async def broken(request: HttpRequest) -> HttpResponse:
        raise RuntimeError("boom")

    server = Server("s")
    server.add_http_route("broken", broken)
    r = _asgi_get(server.http_app(), "/mcp/broken")
    assert r.status_code == 500 and r.text == "Internal Server Error"
