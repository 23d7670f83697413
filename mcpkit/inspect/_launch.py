"""Opening the inspector in a browser without its token on any command line.

A browser started with ``http://127.0.0.1:PORT/?token=T`` in its argv shows ``T`` to every
local user (``ps``), for as long as the browser runs. So ``mcpkit inspect`` opens a file
instead: a 0600 HTML page in a private (0700) temporary directory that redirects to
``/?code=C``, where ``C`` is a one-time code. The app answers the first request with a valid
``C`` by a redirect to ``/?token=T`` (what the printed URL says) and forgets ``C``; a second
use, or one after :data:`CODE_TTL` seconds, is refused with 403. The file is removed once
its code is used, and the directory when the inspector stops.

Why no cookie: a browser sends a cookie for ``127.0.0.1`` to every port on that host, so any
other local web server the browser visits would receive it.
"""

from __future__ import annotations

import html
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: Seconds a one-time code stays valid.
CODE_TTL = 120.0


class OneTimeCodes:
    """Codes that each open the page once."""

    def __init__(self, ttl: float = CODE_TTL) -> None:
        self.ttl = ttl
        self._codes: dict[str, float] = {}
        #: Called after a code was used (the redirect file is removed then).
        self.on_used: list[Callable[[], None]] = []

    def issue(self) -> str:
        code = secrets.token_urlsafe(24)
        now = time.monotonic()
        self._codes = {c: d for c, d in self._codes.items() if d > now}
        self._codes[code] = now + self.ttl
        return code

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is valid; it is spent either way."""
        deadline = self._codes.pop(code, None)
        ok = deadline is not None and time.monotonic() < deadline
        if ok:
            for callback in self.on_used:
                callback()
        return ok


class RedirectFile:
    """A private HTML file that sends the browser to ``url`` (which holds a one-time code)."""

    def __init__(self, url: str) -> None:
        self.directory = tempfile.mkdtemp(prefix="mcpkit-inspect-")  # 0700
        self.path = os.path.join(self.directory, "open.html")
        link = html.escape(url, quote=True)
        page = ("<!doctype html>\n<meta charset=\"utf-8\">\n<meta name=\"referrer\" content=\"no-referrer\">\n"
                f"<meta http-equiv=\"refresh\" content=\"0;url={link}\">\n<title>mcpkit inspect</title>\n"
                f"<p><a href=\"{link}\">Open the mcpkit inspector</a></p>\n")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)

    @property
    def uri(self) -> str:
        """``file:///...``: what the browser is given (no secret in it)."""
        return Path(self.path).as_uri()

    def remove_file(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


__all__ = ["CODE_TTL", "OneTimeCodes", "RedirectFile"]
