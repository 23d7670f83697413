"""The one test harness: paths, message builders and wire checks, server processes (and the
in-process ASGI client), raw wire peers for stdio and HTTP, and the peer-SDK installer.

- :mod:`tests.helpers.paths`: where things are, and the environment of a child Python;
- :mod:`tests.helpers.messages`: request/params builders, HTTP headers, SSE parsing, wire checks;
- :mod:`tests.helpers.servers`: free ports, uvicorn server subprocesses, the in-process ASGI client;
- :mod:`tests.helpers.wire`: stdio peers, JSON-RPC wires over stdio and HTTP, legacy sessions;
- :mod:`tests.helpers.aio`: running coroutines from synchronous tests;
- :mod:`tests.helpers.peers`: installing and running the third-party peer clients.
"""
