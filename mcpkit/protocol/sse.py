"""Server-Sent Events: framing for servers and an incremental parser for clients (pure).

Both HTTP eras carry JSON-RPC messages as ``event: message`` frames; comments (``:`` lines)
are keep-alives. The parser takes lines (as an HTTP client yields them, without the line
ending) and returns an :class:`Event` at each blank line that ends one.
"""

from __future__ import annotations

from typing import NamedTuple

#: Response headers for an event stream (``X-Accel-Buffering`` stops nginx from buffering it).
HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]

KEEPALIVE = b": keep-alive\n\n"


_MESSAGE_HEAD = b"event: message\ndata: "


def frame(data: bytes, *, event: bytes = b"message", id: bytes | None = None) -> bytes:
    """One event carrying ``data`` (a single-line JSON text)."""
    if id is None and event == b"message":
        return _MESSAGE_HEAD + data + b"\n\n"  # every JSON-RPC message: one concatenation
    head = b"event: " + event + b"\n"
    if id is not None:
        head = b"id: " + id + b"\n" + head
    return head + b"data: " + data + b"\n\n"


def comment(text: str) -> bytes:
    """A comment frame (ignored by parsers; keeps the connection and proxies awake)."""
    return b": " + text.encode() + b"\n\n"


class Event(NamedTuple):
    """One parsed event: its data (lines joined by ``\\n``), event type, last event id, retry."""

    data: str
    event: str
    id: str | None
    retry: int | None


class Parser:
    """Feed lines; get an :class:`Event` each time one is complete.

    Follows the WHATWG rules that matter here: a single space after the colon is dropped,
    ``id`` values with NUL are ignored, ``retry`` must be digits, and the last event id
    persists across events (a reconnecting client sends it as ``Last-Event-ID``).
    """

    __slots__ = ("_data", "_event", "_retry", "last_id", "_dirty")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._dirty = False
        #: The latest ``id`` seen on the stream (None until one arrives).
        self.last_id: str | None = None

    def feed(self, line: str) -> Event | None:
        """Take one line (without its line ending); return the event a blank line completes."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._dirty = True
        elif field == "event":
            self._event = value
            self._dirty = True
        elif field == "id" and "\x00" not in value:
            self.last_id = value
            self._dirty = True
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
            self._dirty = True
        return None

    def end(self) -> Event | None:
        """The stream ended: an event still being built is delivered if it carries data."""
        if self._data:
            return self._dispatch()
        return None

    def _dispatch(self) -> Event | None:
        if not self._dirty:
            return None
        ev = Event("\n".join(self._data), self._event or "message", self.last_id, self._retry)
        self._data, self._event, self._retry, self._dirty = [], "", None, False
        return ev
