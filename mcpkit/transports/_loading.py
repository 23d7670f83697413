"""While a server file is being loaded, a call that would serve hands the server over instead.

A file that calls ``server.run()`` when it is imported (a common pattern) must not start a
server while ``mcpkit serve`` (or a worker) loads it: the loader serves it itself. The loader
imports the file inside :func:`loading`; ``Server.run`` and :func:`run_stdio_server` call
:func:`hand_over` first, which, only inside that scope, stops the import with
:class:`RunAtImport` carrying the server. The scope is a context variable, so it holds only
for the thread (or asyncio task) doing the import and is restored on the way out, whatever
happens; nothing is patched.

This sits in ``transports`` (not ``server``) because the stdio transport consults it too and
transports never import the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_loading: ContextVar[bool] = ContextVar("mcpkit_loading_server", default=False)


class RunAtImport(BaseException):
    """The file being loaded called ``server.run()`` (or ``run_stdio_server``) at import.

    A ``BaseException``, so the file's own ``except Exception`` does not swallow it."""

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server


@contextmanager
def loading() -> Iterator[None]:
    """The scope in which serve calls hand their server over (:func:`hand_over`)."""
    token = _loading.set(True)
    try:
        yield
    finally:
        _loading.reset(token)


def hand_over(server: Any) -> None:
    """Inside :func:`loading`, raise :class:`RunAtImport` for ``server``; elsewhere do nothing."""
    if _loading.get():
        raise RunAtImport(server)
