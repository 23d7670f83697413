"""Signals a lower send layer raises for the top of the Client's send path to act on.

A layer never calls back up (to re-list tools, re-probe the era or restart the server): it
raises one of these, and :meth:`Client._send <mcpkit.client.Client>` does what it says and
sends the request again. They never escape the Client.
"""

from __future__ import annotations

from ..errors import TransportError
from ._transport import Response


class Signal(Exception):
    """Something the top of the send path must act on (never raised to the caller)."""


class EraStale(Signal):
    """An answer that does not fit the era remembered for this server: negotiate again.
    ``error`` is what to raise if the server turns out to speak that era after all."""

    def __init__(self, error: BaseException | None) -> None:
        super().__init__("the remembered era no longer fits the server's answers")
        self.error = error


class ToolsStale(Signal):
    """-32020 (the ``Mcp-*`` headers did not match the body): re-list tools, then send again.
    ``response`` is the answer to return when that was already tried."""

    def __init__(self, response: Response) -> None:
        super().__init__("stale tool header annotations")
        self.response = response


class ServerExited(Signal):
    """The stdio server died: restart it. ``sent`` says whether this request had gone out
    (so the server may have acted on it); ``generation`` is the server generation it went to."""

    def __init__(self, cause: TransportError, generation: int, *, sent: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.generation = generation
        self.sent = sent
