"""One line for a failure talking to a server, as the commands and the inspector word it.

Shared by the CLI (:mod:`mcpkit.cli`) and :mod:`mcpkit.inspect`; pure wording, no I/O.
"""

from __future__ import annotations

import re
from typing import Any


def describe_error(exc: BaseException, timeout: float | None = None, *, credentials: bool = False) -> str:
    """One line for a failure talking to a server (``credentials``: some were sent)."""
    from .errors import HttpStatusError, MCPError, OAuthError, ServerLoadError

    if isinstance(exc, MCPError):
        return f"the server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, HttpStatusError):
        if exc.status == 401:
            how = _reason(exc)
            if credentials:
                return (f"the server refused the credentials given (HTTP 401{how}): "
                        "check the token, or run mcpkit login URL")
            return (f"the server requires authorization (HTTP 401{how}): "
                    "pass --bearer TOKEN or --header 'Authorization: ...', or run mcpkit login URL")
        if exc.status == 403:
            return f"the server refused these credentials (HTTP 403 Forbidden{_reason(exc)})"
        return str(exc)
    if isinstance(exc, OAuthError):
        # The authorization server's words (sanitized by the caller before printing).
        return f"authorization failed: {exc}"
    if isinstance(exc, ServerLoadError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s" if timeout is not None else "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _reason(exc: Any) -> str:
    """``, REASON`` for a 401/403: the challenge's ``error_description``, else the JSON-RPC
    error the body carried, else the challenge's realm or scheme; empty without any."""
    value = _header(exc.headers, "www-authenticate")
    m = re.search(r'error_description="([^"]*)"', value)
    if m:
        return f", {m.group(1)}"
    said = str(exc)
    if said and not said.startswith("HTTP "):
        return f", {said}"
    m = re.search(r'realm="([^"]*)"', value)
    if m:
        return f", {m.group(1)}"
    return f", {value.split()[0]}" if value else ""


def _header(headers: Any, name: str) -> str:
    try:
        value = headers.get(name) if headers is not None else None
    except Exception:
        value = None
    return value if isinstance(value, str) else ""
