"""One entry in Goose's ``config.yaml``, added or removed without a YAML library.

mcpkit has no YAML dependency, so it edits only what it can locate for certain and leaves
every other byte of the file as it was: the top-level ``extensions:`` block mapping (or an
empty ``extensions: {}``), whose children are ``NAME:`` keys at one indentation. An entry is
written as block keys with JSON values (JSON scalars and flow collections are YAML), so it
reads back exactly. Anything else (tabs in the indentation, a flow or sequence ``extensions``,
several documents, a quoted top-level key, lines that fit no block) is refused with
:class:`Unsafe`, and the caller tells the user to add the entry by hand.
"""

from __future__ import annotations

import json
import re
from typing import Any

_KEY = re.compile(r"""^( *)("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\-?:,\[\]{}&*!|>%@`][^#]*?)\s*:(?:\s+(.*))?$""")
_EMPTY_VALUES = ("", "{}", "null", "~")


class Unsafe(ValueError):
    """The file is not in a form mcpkit edits without a YAML parser (the reason)."""


def _content(line: str) -> bool:
    """Not blank, not a comment."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _key_name(raw: str) -> str:
    if raw.startswith('"'):
        value = json.loads(raw)
        return value if isinstance(value, str) else raw
    if raw.startswith("'"):
        return raw[1:-1].replace("''", "'")
    return raw.strip()


def _quote(name: str) -> str:
    return json.dumps(name)


def render(name: str, entry: dict[str, Any], indent: int = 2, step: int = 2) -> list[str]:
    """The lines of ``NAME:`` and its keys, JSON values, at ``indent``."""
    pad, inner = " " * indent, " " * (indent + step)
    return [f"{pad}{_quote(name)}:", *(f"{inner}{key}: {json.dumps(value)}" for key, value in entry.items())]


class _Doc:
    """Where ``extensions:`` and its entries are in ``text``."""

    def __init__(self, text: str) -> None:
        if "\t" in "".join(line[: len(line) - len(line.lstrip())] for line in text.splitlines()):
            raise Unsafe("it indents with tabs")
        self.lines = text.splitlines()
        self.ext: int | None = None  # the index of the `extensions:` line
        self.inline_empty = False
        first = next((ln for ln in self.lines if _content(ln) and ln.strip() != "---"), "")
        if first.lstrip().startswith(("{", "[")):
            raise Unsafe("it is a flow mapping, not block keys")
        for i, line in enumerate(self.lines):
            if line.startswith(("---", "...")) and i > 0 and any(_content(x) for x in self.lines[:i]):
                raise Unsafe("it holds several YAML documents")
            if re.match(r"""^["']extensions["']\s*:""", line) or re.match(r"^\?", line):
                raise Unsafe("its extensions key is quoted or complex")
            m = re.match(r"^extensions\s*:(.*)$", line)
            if m:
                if self.ext is not None:
                    raise Unsafe("it has two extensions keys")
                value = m.group(1).split(" #", 1)[0].strip() if not m.group(1).strip().startswith("#") else ""
                if value not in _EMPTY_VALUES:
                    raise Unsafe(f"its extensions value is inline ({value[:30]})")
                self.ext = i
                self.inline_empty = value != ""
        self.child = 2
        self.end = len(self.lines)
        self.entries: dict[str, tuple[int, int]] = {}
        if self.ext is None:
            return
        end = self.ext + 1
        while end < len(self.lines) and not (_content(self.lines[end]) and _indent(self.lines[end]) == 0):
            end += 1
        if end < len(self.lines) and self.lines[end].startswith("-"):
            raise Unsafe("its extensions value is a sequence")
        children = [i for i in range(self.ext + 1, end) if _content(self.lines[i])]
        if self.inline_empty and children:
            raise Unsafe("its extensions value is inline and followed by indented lines")
        self.end = (children[-1] + 1) if children else self.ext + 1
        if not children:
            return
        self.child = _indent(self.lines[children[0]])
        starts: list[tuple[str, int]] = []
        for i in children:
            line = self.lines[i]
            depth = _indent(line)
            if depth < self.child:
                raise Unsafe(f"line {i + 1} is indented less than the extensions above it")
            if depth > self.child:
                continue
            m = _KEY.match(line)
            if m is None:
                raise Unsafe(f"line {i + 1} is not a NAME: key of extensions")
            name = _key_name(m.group(2))
            if name in self.entries or any(n == name for n, _ in starts):
                raise Unsafe(f"extension {name!r} is there twice")
            starts.append((name, i))
        for k, (name, start) in enumerate(starts):
            stop = starts[k + 1][1] if k + 1 < len(starts) else self.end
            while stop > start + 1 and not _content(self.lines[stop - 1]):
                stop -= 1  # comments and blank lines before the next entry stay with it
            self.entries[name] = (start, stop)

    def text(self, lines: list[str]) -> str:
        return "\n".join(lines) + "\n" if lines else ""


def names(text: str) -> list[str]:
    """The extension names in ``text`` (Unsafe when it cannot tell)."""
    return list(_Doc(text).entries)


def existing(text: str, name: str) -> list[str] | None:
    """The lines of entry ``name`` as they are, or None."""
    doc = _Doc(text)
    span = doc.entries.get(name)
    return None if span is None else doc.lines[span[0]:span[1]]


def add(text: str, name: str, entry: dict[str, Any], *, replace: bool = False) -> tuple[str, str]:
    """(the new text, ``added`` | ``same`` | ``replaced`` | ``differs``). ``differs``: an entry
    of that name is there and is not this one (the text is unchanged unless ``replace``)."""
    doc = _Doc(text)
    lines = list(doc.lines)
    if doc.ext is None:
        if lines and lines[-1].strip():
            lines.append("")
        return doc.text([*lines, "extensions:", *render(name, entry)]), "added"
    if doc.inline_empty:
        lines[doc.ext] = "extensions:"
        lines[doc.ext + 1:doc.ext + 1] = render(name, entry)
        return doc.text(lines), "added"
    step = _step(doc)
    mine = render(name, entry, doc.child, step)
    span = doc.entries.get(name)
    if span is not None:
        if doc.lines[span[0]:span[1]] == mine:
            return text, "same"
        if not replace:
            return text, "differs"
        lines[span[0]:span[1]] = mine
        return doc.text(lines), "replaced"
    lines[doc.end:doc.end] = mine
    return doc.text(lines), "added"


def remove(text: str, name: str) -> str | None:
    """``text`` without entry ``name`` (None: it is not there)."""
    doc = _Doc(text)
    span = doc.entries.get(name)
    if span is None or doc.ext is None:
        return None
    lines = list(doc.lines)
    del lines[span[0]:span[1]]
    if len(doc.entries) == 1:
        lines[doc.ext] = "extensions: {}"
    return doc.text(lines)


def _step(doc: _Doc) -> int:
    """How far the file indents an entry's keys below its name (2 unless it shows otherwise)."""
    for start, stop in doc.entries.values():
        for line in doc.lines[start + 1:stop]:
            if _content(line) and _indent(line) > doc.child:
                return _indent(line) - doc.child
    return 2
