"""Which transport a Client target means: a ``Server`` object (in memory), an ``http(s)://`` URL
(Streamable HTTP, or 2024-11-05 HTTP+SSE), or a command line (stdio)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._era import era_key
from ._transport import ClientTransport


def make_transport(target: Any, *, mode: str, auth_headers: Callable[..., Awaitable[Mapping[str, str]]] | None,
                   env: dict[str, str] | None, cwd: str | None, stderr: Any, http_given: list[str], transport: str,
                   http_options: dict[str, Any]) -> tuple[ClientTransport, str | None]:
    """The transport for ``target``, and the key its era is remembered by (None in memory)."""
    if not isinstance(target, (str, list, tuple)):
        from ._memory import MemoryTransport, is_server

        if is_server(target):
            return MemoryTransport(target), None
    if isinstance(target, (list, tuple)) and len(target) == 1:
        target = target[0]
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        from ._http import HttpTransport
        from ._sse_legacy import SseTransport, is_sse_url

        key = era_key(target)
        if transport == "sse" or (transport == "auto" and is_sse_url(target)):
            if mode != "auto" and mode != "legacy":
                raise ValueError(f"mode={mode!r}: the HTTP+SSE transport carries only 2025-11-25 and earlier")
            return SseTransport(target, auth_headers=auth_headers, **http_options), key
        return HttpTransport(target, auth_headers=auth_headers, sse_fallback=transport == "auto", **http_options), key
    if http_given:
        raise TypeError(f"unexpected options for a stdio server: {', '.join(http_given)}")
    if isinstance(target, str):
        import shlex  # (a command line given as one string only)

        target = shlex.split(target)
    argv = list(target)
    if not argv:
        raise ValueError("empty command")
    from ._stdio import StdioTransport

    return StdioTransport(argv[0], argv[1:], env=env, cwd=cwd, stderr=stderr), era_key(argv)
