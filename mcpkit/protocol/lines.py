"""Splitting a byte stream into newline-delimited messages (the stdio transport's framing), sans IO.

Both ends of stdio read with it: the server its stdin, the client the server's stdout. A line
longer than the limit is skipped up to its newline and stands as ``None`` in what
:meth:`LineSplitter.feed` returns (the reader answers or logs it, in its place among the lines).
"""

from __future__ import annotations


class LineSplitter:
    """Lines of at most ``max_line`` bytes, without their newline, from the chunks fed in."""

    __slots__ = ("max_line", "buf", "skipping")

    def __init__(self, max_line: int, head: bytes = b"") -> None:
        self.max_line = max_line
        #: Inside an oversized line, until its newline.
        self.skipping = len(head) > max_line
        #: The start of a line not complete yet.
        self.buf = b"" if self.skipping else head

    def feed(self, data: bytes) -> list[bytes | None]:
        """The lines ``data`` completes, in order; ``None`` for each one that was too long."""
        out: list[bytes | None] = []
        if self.skipping:
            i = data.find(b"\n")
            if i < 0:
                return out
            self.skipping = False
            data = data[i + 1:]
            out.append(None)
        lines = (self.buf + data).split(b"\n") if self.buf else data.split(b"\n")
        self.buf = lines.pop()
        limit = self.max_line
        if len(self.buf) > limit:
            self.buf, self.skipping = b"", True
        if not out and (not lines or max(map(len, lines)) <= limit):
            return lines  # type: ignore[return-value]  # (the usual case: no line too long, none skipped before)
        out.extend(None if len(line) > limit else line for line in lines)
        return out

    def end(self) -> bytes | None:
        """At EOF: the last line, which had no newline (``b""``: none; ``None``: it was too long)."""
        return None if self.skipping else self.buf
