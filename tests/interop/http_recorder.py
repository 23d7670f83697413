"""``mcpkit serve --http`` with every HTTP exchange recorded.

Usage: ``python http_recorder.py LOG serve --http --port PORT FILE.py``  (the arguments
after LOG are exactly those of ``python -m mcpkit``).

The real ``mcpkit`` command line runs; only its ASGI application (``HttpApp``, as built
by ``Server.http_app()`` / ``run_http_server``) is wrapped in a recorder that appends one
JSON object per line to LOG:

* ``{"dir": "c2s", "method": "POST", "path": "/mcp", "headers": {...}, "body": "..."}``
  once a request's body has been read in full;
* ``{"dir": "s2c", "status": 200, "contentType": "...", "request": N}`` when the response starts;
* ``{"dir": "s2c", "chunk": "...", "request": N}`` for each response body chunk (a JSON body,
  or SSE events as they are written).

``request`` is the index of the exchange (its ``c2s`` record has the same ``seq``).
Used by ``tests/test_inspector.py`` to prove what a third-party client sent to our server.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any


class RecordingApp:
    """ASGI middleware: pass everything through, log request bodies and responses."""

    def __init__(self, app: Any, log_path: str) -> None:
        self.app = app
        self._log = open(log_path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def __getattr__(self, name: str) -> Any:  # e.g. anything run_http_server may ask of the app
        return getattr(self.app, name)

    def _write(self, record: dict) -> None:
        with self._lock:
            self._log.write(json.dumps(record) + "\n")
            self._log.flush()

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        seq = next(self._seq)
        body = bytearray()
        logged = False
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}

        def log_request() -> None:
            nonlocal logged
            if not logged:
                logged = True
                self._write({"dir": "c2s", "seq": seq, "method": scope.get("method"), "path": scope.get("path"),
                             "headers": headers, "body": body.decode("utf-8", errors="replace")})

        async def recv() -> dict:
            message = await receive()
            if message.get("type") == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    log_request()
            return message

        async def snd(message: dict) -> None:
            kind = message.get("type")
            if kind == "http.response.start":
                log_request()  # answered before the body was read (e.g. a GET, or an early refusal)
                ctype = dict((k.decode("latin-1").lower(), v.decode("latin-1"))
                             for k, v in message.get("headers", [])).get("content-type")
                self._write({"dir": "s2c", "request": seq, "status": message.get("status"), "contentType": ctype})
            elif kind == "http.response.body" and message.get("body"):
                self._write({"dir": "s2c", "request": seq,
                             "chunk": bytes(message["body"]).decode("utf-8", errors="replace")})
            await send(message)

        await self.app(scope, recv, snd)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: http_recorder.py LOG serve --http --port PORT FILE.py", file=sys.stderr)
        return 2
    log_path, mcpkit_args = argv[0], argv[1:]

    import mcpkit.transports.http as http_transport
    from mcpkit.cli import main as mcpkit_main

    original = http_transport.HttpApp

    def recording_http_app(*args: Any, **kwargs: Any) -> RecordingApp:
        return RecordingApp(original(*args, **kwargs), log_path)

    http_transport.HttpApp = recording_http_app  # type: ignore[assignment,misc]
    return mcpkit_main(mcpkit_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
