"""A server with a server card (``mcpkit.extensions.cards``), for tests/test_server_cards.py.

``MCPKIT_TEST_CARD=bad`` serves a broken card instead (a route of its own at
``/mcp/server-card``), to see ``mcpkit discover --card`` refuse it; ``off`` serves none;
``ctor`` spells it ``Server(card=True)`` (a server whose name is a card name) and ``method``
``server.card(...)``."""

from __future__ import annotations

import os

from mcpkit import Server
from mcpkit.extensions.cards import ServerCard
from mcpkit.transports.routes import HttpRequest, HttpResponse

MODE = os.environ.get("MCPKIT_TEST_CARD", "on")
server = Server("com.example/weather" if MODE == "ctor" else "weather", "1.2.0", title="Weather",
                description="Forecasts and alerts", website_url="https://example.com/weather",
                card=MODE == "ctor")


@server.tool()
def forecast(city: str) -> str:
    """Tomorrow's weather."""
    return f"sunny in {city}"


if MODE == "on":
    server.use(ServerCard(name="com.example/weather", repository={"url": "https://example.com/src", "source": "github"}))
elif MODE == "method":
    server.card(name="com.example/weather", catalog=False, max_age=60)
elif MODE == "bad":
    async def bad_card(request: HttpRequest) -> HttpResponse:
        body = b'{"$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json", "name": "weather"}'
        return HttpResponse(200, body, [("content-type", "application/mcp-server-card+json")])

    server.add_http_route("server-card", bad_card)

if __name__ == "__main__":
    server.run("http")
