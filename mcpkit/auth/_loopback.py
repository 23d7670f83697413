"""The interactive authorizer for people: a one-shot loopback listener (RFC 8252 §7.3).

It listens on 127.0.0.1 (a port chosen when it is made, so the redirect URI is known before
registration), opens the authorization URL in the browser (or prints it when there is none,
or when ``open_browser`` is False), and returns the first redirect that reaches
``/callback``. The page it answers with says to return to the terminal; it shows no code.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from urllib.parse import urlsplit

from ._errors import OAuthError

_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
         b"Connection: close\r\n\r\n<!doctype html><title>mcpkit</title>"
         b"<p>Authorization finished. You can close this window and return to the terminal.</p>")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class LoopbackRedirect:
    """``await LoopbackRedirect()(authorization_url, redirect_uri)`` → the callback URL."""

    def __init__(self, *, port: int = 0, path: str = "/callback", open_browser: bool = True,
                 timeout: float = 300.0, announce: Callable[[str], None] | None = None) -> None:
        self._sock = self._bind(port)
        self.port = self._sock.getsockname()[1]
        self.path = path
        self.redirect_uri = f"http://127.0.0.1:{self.port}{path}"
        self.open_browser = open_browser
        self.timeout = timeout
        self._announce = announce or (lambda text: print(text, file=sys.stderr, flush=True))

    @staticmethod
    def _bind(port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(8)
        sock.setblocking(False)
        return sock

    def close(self) -> None:
        self._sock.close()

    async def __call__(self, url: str, redirect_uri: str) -> str:
        got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
                while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                    pass
                parts = line.split()
                target = parts[1] if len(parts) >= 2 and parts[0] == "GET" else ""
                if urlsplit(target).path == self.path and not got.done():
                    writer.write(_PAGE)
                    got.set_result(f"http://127.0.0.1:{self.port}{target}")
                else:
                    writer.write(_NOT_FOUND)
                await writer.drain()
            except (TimeoutError, OSError, UnicodeDecodeError):
                pass
            finally:
                writer.close()

        if self._sock.fileno() == -1:  # a second authorization (step-up): listen again, same port
            self._sock = self._bind(self.port)
        server = await asyncio.start_server(handle, sock=self._sock)
        try:
            opened = False
            if self.open_browser:
                import webbrowser

                try:
                    opened = webbrowser.open(url)
                except Exception:
                    opened = False
            if opened:
                self._announce("Opened the browser to authorize. If it did not open, visit:\n  " + url)
            else:
                self._announce("To authorize, open this URL in a browser:\n  " + url)
            try:
                return await asyncio.wait_for(got, self.timeout)
            except TimeoutError:
                raise OAuthError(f"no authorization response within {self.timeout:g} s", error="timeout") from None
        finally:
            server.close()
