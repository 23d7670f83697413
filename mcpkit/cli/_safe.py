"""Text from a server made safe for a terminal.

A server chooses what its results, errors, progress messages, questions, names and
descriptions say, and so does an authorization server and a failed server's stderr. Written
to a terminal as they are, control characters in them set the window title, clear the
screen, write the clipboard (OSC 52) or move the cursor to fake an mcpkit prompt. So every
such string goes through :func:`clean` before it is printed: C0 controls (but newline and
tab), DEL, the C1 controls U+0080-U+009F and the bidi overrides and isolates
(U+202A-U+202E, U+2066-U+2069) are shown as Python-style escapes (``\\x1b``, ``\\x9b``,
``\\u202e``); a CRLF line end becomes a newline. ``--json`` output is JSON, whose string
escapes already cover C0; :func:`json_text` escapes DEL, C1 and bidi there too (the same
JSON value). ``--raw`` (:func:`set_raw`) turns all of it off: the bytes pass as sent.

Pure functions and one process-wide switch (plus :func:`safe_logging` for the client
commands' log warnings).
"""

from __future__ import annotations

import argparse

_NEUTRALISED = [*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0),
                *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
#: code point -> its visible escape, for :func:`clean`
_TERMINAL = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _NEUTRALISED}
#: code point -> its JSON escape, for :func:`json_text` (C0 is escaped by JSON itself)
_JSON = {c: f"\\u{c:04x}" for c in _NEUTRALISED if c >= 0x7F}

_raw = False


def set_raw(on: bool) -> None:
    """``--raw``: print server text exactly as it came (controls included)."""
    global _raw
    _raw = bool(on)


def is_raw() -> bool:
    return _raw


def clean(text: object) -> str:
    """``text`` (anything, as ``str()``) with its terminal controls made visible."""
    s = text if isinstance(text, str) else str(text)
    if _raw:
        return s
    return s.replace("\r\n", "\n").translate(_TERMINAL)


def json_text(text: str) -> str:
    """JSON text with DEL, C1 and bidi characters as ``\\uXXXX`` escapes (they only occur
    inside strings there, so the value is the same)."""
    if _raw:
        return text
    return text.translate(_JSON)


def safe_logging() -> None:
    """Warnings of mcpkit's loggers (which may quote a server: a method name, a reason) go
    to stderr through :func:`clean`, as Python's last-resort handler would print them
    otherwise. Once per process, and only when nothing configured logging."""
    import logging

    logger = logging.getLogger("mcpkit")
    if logger.handlers or logging.getLogger().handlers:
        return

    class _Clean(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return clean(super().format(record))

    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_Clean("%(message)s"))
    logger.addHandler(handler)


def add_raw_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--raw", action="store_true",
                        help="print what the server sent exactly, terminal control characters included "
                             "(by default they are shown as escapes such as \\x1b)")


__all__ = ["add_raw_option", "clean", "is_raw", "json_text", "safe_logging", "set_raw"]
