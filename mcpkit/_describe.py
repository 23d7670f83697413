"""One line for a failure talking to a server, as the commands and the inspector word it.

Shared by the CLI (:mod:`mcpkit.cli`) and :mod:`mcpkit.inspect`; pure wording, no I/O.
"""

from __future__ import annotations

import re
from typing import Any


def describe_error(exc: BaseException, timeout: float | None = None, *, credentials: bool = False) -> str:
    """One line for a failure talking to a server (``credentials``: some were sent)."""
    from .errors import HttpStatusError, MCPError

    if isinstance(exc, MCPError):
        return f"the server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, HttpStatusError):
        if exc.status == 401:
            how = _www_authenticate(exc.headers)
            if credentials:
                return f"the server refused the credentials given (HTTP 401{how})"
            return (f"the server requires authorization (HTTP 401{how}): "
                    "pass --bearer TOKEN or --header 'Authorization: ...', or run mcpkit login URL")
        if exc.status == 403:
            return "the server refused these credentials (HTTP 403 Forbidden)"
        return str(exc)
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s" if timeout is not None else "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _www_authenticate(headers: Any) -> str:
    try:
        value = headers.get("www-authenticate") if headers is not None else None
    except Exception:
        value = None
    if not value:
        return ""
    m = re.search(r'error_description="([^"]*)"', value) or re.search(r'realm="([^"]*)"', value)
    return f", {m.group(1)}" if m else f", {value.split()[0]}"
