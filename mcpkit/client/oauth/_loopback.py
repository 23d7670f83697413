"""The interactive authorizer for people: a one-shot loopback listener (RFC 8252 §7.3).

It listens on 127.0.0.1 (a port chosen when it is made, so the redirect URI is known before
registration), opens the authorization URL in the browser (or prints it when there is none,
or when ``open_browser`` is False), and returns the first redirect to ``/callback`` that
carries the authorization request's ``state``. Callbacks with another ``state`` or none (a
stray tab, a stale redirect, a forged one) get a small 400 page and are otherwise ignored:
the listener keeps waiting until ``timeout``. A matching callback with ``error=`` ends the
login with that error (the OAuth client raises it; nothing here prints it). The page it
answers with says to return to the terminal; it shows no code.
"""

from __future__ import annotations

import asyncio
import hmac
import socket
import sys
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from ._errors import OAuthError

_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
         b"Connection: close\r\n\r\n<!doctype html><title>mcpkit</title>"
         b"<p>Authorization finished. You can close this window and return to the terminal.</p>")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_STRAY = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
          b"Connection: close\r\n\r\n<!doctype html><title>mcpkit</title>"
          b"<p>This is not the authorization mcpkit is waiting for. It was ignored.</p>")
_MAX_HEADER_LINES = 100


def _state_of(target: str) -> str | None:
    values = parse_qs(urlsplit(target).query, keep_blank_values=True).get("state")
    return values[0] if values and len(values) == 1 else None


def _matches(target: str, expected: str | None) -> bool:
    """Does a callback carry the request's state? (No state asked for: any callback does.)"""
    if expected is None:
        return True
    got = _state_of(target)
    return got is not None and hmac.compare_digest(got.encode(), expected.encode())


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
        expected = _state_of(url)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
                for _ in range(_MAX_HEADER_LINES):
                    if (await asyncio.wait_for(reader.readline(), 10)) in (b"\r\n", b"\n", b""):
                        break
                parts = line.split()
                target = parts[1] if len(parts) >= 2 and parts[0] == "GET" else ""
                if urlsplit(target).path != self.path:
                    writer.write(_NOT_FOUND)
                elif got.done() or not _matches(target, expected):
                    writer.write(_STRAY)  # not this authorization's answer: ignored, keep waiting
                else:
                    writer.write(_PAGE)
                    got.set_result(f"http://127.0.0.1:{self.port}{target}")
                await writer.drain()
            except (TimeoutError, OSError, UnicodeDecodeError, ValueError):
                pass
            finally:
                writer.close()

        if self._sock.fileno() == -1:  # a second authorization (step-up): listen again, same port
            self._sock = self._bind(self.port)
        if not url.isprintable():  # control characters would reach the terminal and the browser's argv
            raise OAuthError("the authorization URL (built from the authorization server's metadata) holds "
                             "control characters: refusing to open or print it", error="invalid_request")
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
