"""The commands' help layout: descriptions are reflowed to the terminal's width, but text
written on several lines (the examples of an epilog) keeps its lines."""

from __future__ import annotations

import argparse
import os
import sys


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that text holding a newline is printed as written."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse makes a formatter for every add_argument and sizes it with
        # shutil.get_terminal_size(): importing shutil (and bz2, lzma, zlib) costs a server
        # started by ``mcpkit serve`` about 2 ms before its first answer. The same width, from os.
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line if line else line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def terminal_columns(fallback: int = 80) -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it (``COLUMNS``,
    else the size of the terminal on stdout, else ``fallback``), without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return fallback
    return size.columns or fallback


def examples(*lines: str) -> str:
    """An epilog of example command lines, one per line."""
    return "\n".join(("example:" if len(lines) == 1 else "examples:", *(f"  {ln}" for ln in lines)))


__all__ = ["HelpFormatter", "examples"]
