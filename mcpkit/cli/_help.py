"""The commands' help layout: descriptions are reflowed to the terminal's width, but text
written on several lines (the examples of an epilog) keeps its lines."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that text holding a newline is printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line if line else line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def examples(*lines: str) -> str:
    """An epilog of example command lines, one per line."""
    return "\n".join(("example:" if len(lines) == 1 else "examples:", *(f"  {ln}" for ln in lines)))


__all__ = ["HelpFormatter", "examples"]
