"""The one test harness. Test files import it as ``from tests.helpers.<module> import ...``.

- :mod:`tests.helpers.paths`: where things are, the environment of a child Python, ``serve_argv``;
- :mod:`tests.helpers.messages`: request/params builders (both eras), the HTTP headers a client
  sends, SSE parsing, and the wire checks every server-written message must pass;
- :mod:`tests.helpers.servers`: free ports, HTTP server subprocesses (uvicorn), and the
  in-process client for ``server.http_app()`` (``httpx.ASGITransport``);
- :mod:`tests.helpers.wire`: stdio peers (2026-07-28 and 2025-11-25 checks), JSON-RPC wires over
  stdio and HTTP, raw socket requests;
- :mod:`tests.helpers.legacy`: 2025-11-25 sessions over HTTP (``Mcp-Session-Id``, the GET stream);
- :mod:`tests.helpers.sides`: async clients for ``subscriptions/listen`` streams;
- :mod:`tests.helpers.markers`: marker files a handler writes so a test can see it cancelled;
- :mod:`tests.helpers.aio`: coroutines from synchronous tests;
- :mod:`tests.helpers.peers`: installing and running the third-party peer clients.
- :mod:`tests.helpers.cli`: the ``mcpkit`` command in a subprocess, and ``mcpkit serve --http``
  servers found through their startup line.

Fixtures (``demo``, ``spawn``...) are in ``tests/conftest.py``.
"""
