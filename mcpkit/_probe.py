"""What a started client can learn about its server: the era (``modern``, ``legacy`` or
``dual``), the DiscoverResult and the lists, as ``mcpkit discover``, ``mcpkit scan`` and the
inspector report it; and closing such a client quickly.

Shared by :mod:`mcpkit.cli` and :mod:`mcpkit.inspect`. A TARGET is the command line's (the
CLI builds one); :class:`Target` is what this module and the inspector read of it, so neither
imports the CLI.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .client import Client


class Target(Protocol):
    """Where a server is and how to reach it, as the probe and the inspector read it."""

    url: str | None
    argv: list[str] | None
    label: str
    headers: dict[str, str]
    env: dict[str, str]
    timeout: float

    @property
    def transport(self) -> str:
        """``http`` or ``stdio``."""
        ...

    def time_left(self, cap: float) -> float:
        """Seconds left before the deadline, at most ``cap``."""
        ...

    def auth(self) -> Any:
        """The auth hook for an HTTP target (None: none)."""
        ...

    def client(self, **options: Any) -> Client:
        """A Client for this target (not started)."""
        ...

    def server_output(self, lines: int = 20) -> list[str]:
        """What the server wrote that was not MCP (its stderr, non-JSON stdout lines)."""
        ...

#: Fields mcpkit fills in when it builds a DiscoverResult from a legacy initialize result:
#: a legacy server never said them, so they are not shown as if it had.
_INVENTED_FOR_LEGACY = ("ttlMs", "cacheScope", "resultType")

SECTIONS = (
    # (capability, client method, JSON key, card label, identifying field)
    ("tools", "list_tools", "tools", "Tools", "name"),
    ("resources", "list_resources", "resources", "Resources", "uri"),
    ("resources", "list_resource_templates", "resourceTemplates", "Resource templates", "uriTemplate"),
    ("prompts", "list_prompts", "prompts", "Prompts", "name"),
)


async def probe(client: Client, target: Target, *, lists: bool = True,
                both_eras: bool | None = None) -> dict[str, Any]:
    """Everything about a started client's server: era, DiscoverResult, and its lists.
    ``report["discoveredAt"]`` is the ``time.monotonic()`` when the card was in hand.

    ``both_eras``: whether a modern server is also asked for the 2025-11-25 handshake (a second,
    legacy-only connection; era ``dual`` when it answers). None (the default): over HTTP only,
    since over stdio that second connection starts the server a second time.
    """
    import time

    import msgspec

    raw = dict(await client.discover_raw())
    discovered_at = time.monotonic()
    report: dict[str, Any] = {"era": client.era}
    if client.era == "legacy":
        for key in _INVENTED_FOR_LEGACY:
            raw.pop(key, None)
        report["legacyVersion"] = client.legacy_version
    report["discover"] = raw
    caps = raw.get("capabilities") or {}
    if lists:
        from .errors import MCPError

        for cap, method, key, _label, _ident in SECTIONS:
            if cap in caps:
                try:
                    report[key] = [msgspec.to_builtins(x) for x in await getattr(client, method)()]
                except MCPError as exc:  # a list the server fails to give is shown, not fatal
                    report.setdefault("errors", {})[key] = f"error {exc.code}: {exc.message}"
    if both_eras is None:
        both_eras = target.url is not None
    if client.era == "modern" and both_eras and await answers_initialize(target):
        report["era"] = "dual"
    report["discoveredAt"] = discovered_at
    return report


async def answers_initialize(target: Target) -> bool:
    """Whether a modern server also speaks 2025-11-25 (a second, legacy-only connection)."""
    from .client import Client
    from .errors import MCPError, TransportError

    # What is left of the whole probe's time (keeping a moment to report): a server whose
    # legacy answer does not come in time is reported as modern, not as a failure.
    timeout = target.time_left(5.0) - 0.25
    if timeout <= 0.1:
        return False
    if target.url is not None:
        probe = Client(target.url, mode="legacy", timeout=timeout, headers=target.headers or None,
                       auth=target.auth())
    else:
        assert target.argv is not None
        probe = Client(target.argv, mode="legacy", timeout=timeout, env=target.env or None, stderr=subprocess.DEVNULL)
    start = asyncio.ensure_future(probe.start())
    try:
        done, _pending = await asyncio.wait({start}, timeout=timeout)
        if not done:
            kill_process(probe)  # before cancelling: a cancelled start() closes politely, which takes seconds
            start.cancel()
            await asyncio.gather(start, return_exceptions=True)
            return False
        start.result()
        return probe.era == "legacy"
    except (TimeoutError, MCPError, TransportError, OSError):
        return False
    finally:
        await close_quickly(probe, target)



async def close_quickly(client: Client, target: Target) -> None:
    """Close ``client`` within the time left; a server process still running then is killed."""
    try:
        await asyncio.wait_for(client.close(), max(0.2, target.time_left(5.0)))
    except Exception:
        pass
    proc = getattr(getattr(client.transport, "proc", None), "proc", None)
    if proc is not None and proc.returncode is None:
        try:
            proc.kill()
            await asyncio.wait_for(proc.wait(), 1.0)
        except (ProcessLookupError, TimeoutError):
            pass


def kill_process(client: Client) -> None:
    """Kill a stdio client's server process now (a polite close waits seconds for a stuck one)."""
    proc = getattr(getattr(client.transport, "proc", None), "proc", None)
    if proc is not None and proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
