"""Which era a server speaks: the probe (``server/discover``), the 2025-11-25 ``initialize``
handshake, the re-probe when a remembered verdict goes stale, and the cache of verdicts per
stdio command line or per HTTP origin.

A :class:`Negotiation` gets a :class:`Link` from the Client (its auth layer over one send,
never its retries or restarts; its notify; its :class:`Slot`, the transport in use) and
returns an era session (:mod:`._session`). It changes nothing of the Client's own.

A stdio server that stays silent on ``server/discover`` may be a 2025-11-25 server waiting
for ``initialize``, or a 2026-07-28 one still starting: that process may yet answer the probe,
so it never gets ``initialize``. It is restarted, and the fresh process gets it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from ..errors import MCPError, ProtocolError, TransportError
from ..protocol import eras, errors, versions
from ._auth import OutgoingRequest
from ._session import Era, EraSession, LegacySession, ModernSession, retry_version
from ._transport import ClientTransport, NoAnswer, Response

log = logging.getLogger("mcpkit.client")


def era_key(target: str | list[str]) -> str:
    """``stdio:<argv>`` or ``http:<scheme://host:port>``."""
    if isinstance(target, str):
        parts = urlsplit(target)
        return f"http:{parts.scheme}://{parts.netloc}"
    import json

    return "stdio:" + json.dumps(list(target))


class EraCache:
    """Era verdicts in memory, and optionally in a JSON file the host chooses (so a restart
    skips the probe). A verdict that stops working is dropped and the server re-probed."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._eras: dict[str, Era] = {}
        if self.path is not None:
            import json

            try:
                with open(self.path, encoding="utf-8") as f:
                    data = json.load(f)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                self._eras = {k: v for k, v in data.items() if v in ("modern", "legacy")}
            except FileNotFoundError:
                pass
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable era cache %s: %s", self.path, exc)

    def get(self, key: str) -> Era | None:
        """The era remembered for ``key`` (a server's URL or command line), or None."""
        return self._eras.get(key)

    def put(self, key: str, era: Era) -> None:
        """Remember ``era`` for ``key`` (written to the cache file, when it has one)."""
        if self._eras.get(key) != era:
            self._eras[key] = era
            self._save()

    def forget(self, key: str) -> None:
        """Forget what is remembered for ``key`` (the next connection probes again)."""
        if self._eras.pop(key, None) is not None:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        import json
        import tempfile

        try:
            d = os.path.dirname(os.path.abspath(self.path))
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".era-cache-")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self._eras, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not write the era cache %s: %s", self.path, exc)


#: The process-wide default cache (memory only).
DEFAULT_ERA_CACHE = EraCache()


# ---------------------------------------------------------------- negotiation
class Slot:
    """The one transport a Client's requests go through now (negotiation may replace it)."""

    __slots__ = ("transport",)

    def __init__(self, transport: ClientTransport) -> None:
        self.transport = transport

    def switch(self, era: Era) -> ClientTransport:
        """Use the transport suited to ``era`` from now on (HTTP: a 2025-11-25 session)."""
        self.transport = self.transport.for_era(era)
        return self.transport

    async def restart(self, era: Era) -> None:
        """Drop the connection (a stdio server: the process, at once) and open a fresh one suited to ``era``."""
        old = self.transport
        await old.abandon()
        self.transport = old.for_era(era)
        await self.transport.start()


class Link(NamedTuple):
    """What negotiation sends through, given by the Client: ``send`` (its auth layer over one
    send within the time limit), ``notify``, the transport ``slot``, and ``serve_input`` (from
    now on the server may ask for sampling, elicitation and roots)."""

    send: Callable[[OutgoingRequest], Awaitable[Response]]
    notify: Callable[[str, dict[str, Any] | None], Awaitable[None]]
    slot: Slot
    serve_input: Callable[[], None]


class Probe(NamedTuple):
    """What ``server/discover`` told: the verdict (``silent``: no answer in time, over stdio),
    for a modern server the version to speak and the DiscoverResult, and the error it answered."""

    verdict: Literal["modern", "legacy", "silent"]
    version: str | None = None
    discovered: dict[str, Any] | None = None
    error: MCPError | None = None


class Negotiation(NamedTuple):
    """One settlement of the era with one server (the Client's settings at that moment)."""

    link: Link
    mode: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any]
    probe_timeout: float
    timeout: float
    cache: EraCache
    key: str | None

    async def settle(self) -> EraSession:
        """Connect-time: the era from the mode, the cache or a probe; for a legacy server the
        ``initialize`` handshake is done when this returns."""
        caps = self.link.slot.transport.capabilities
        if caps.kind == "memory":
            return ModernSession()  # a Server object in this process speaks 2026-07-28
        if self.mode == "legacy" or caps.legacy_only:
            return await self.initialize()
        if self.mode != "auto":
            return ModernSession()
        key = self.key
        cached = self.cache.get(key) if key else None
        if cached == "legacy" and key:
            try:
                return await self.initialize()
            except (errors.MCPError, TransportError) as exc:
                log.info("cached era 'legacy' no longer works (%s); probing again", exc)
                self.cache.forget(key)
                await self.link.slot.restart("modern")
        elif cached == "modern":
            return ModernSession(unconfirmed=True)  # the first answer confirms it, or the Client re-probes
        session = await self.negotiate(await self.probe())
        if key:
            self.cache.put(key, session.era)
        return session

    async def reprobe(self) -> tuple[EraSession, bool]:
        """A remembered "modern" verdict met an answer of the other era: probe again. The new
        session, and whether the server turned out legacy (then initialized, the verdict cached)."""
        if self.key:
            self.cache.forget(self.key)
        probe = await self.probe()
        if probe.verdict == "modern":
            return ModernSession(probe.version, probe.discovered), False
        session = await self.negotiate(probe)
        if self.key:
            self.cache.put(self.key, "legacy")
        return session, True

    async def probe(self) -> Probe:
        """Send ``server/discover`` under our preferred modern version and read the era off the answer."""
        http = self.link.slot.transport.capabilities.http
        limit = min(self.probe_timeout, self.timeout)
        req = OutgoingRequest("server/discover", {}, timeout=limit)
        try:
            resp = await self.link.send(req)
        except NoAnswer:
            if http:
                raise TransportError(f"no answer to server/discover within {limit:g} s") from None
            return Probe("silent")  # a legacy server waiting for initialize, or a slow modern one
        msg = resp.message
        if http:
            status = resp.status or 200
            verdict = eras.http_probe_verdict(status, msg)
            if verdict == "error":
                if msg is None or status in (401, 403):  # a refusal: its challenge says why
                    raise resp.http_error()
                raise TransportError(f"the server answered the probe with HTTP {status}")
        else:
            verdict = eras.stdio_probe_verdict(resp.require_message())
        error = None
        if msg is not None and msg.error is not None:
            e = msg.error
            error = MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
        if verdict != "modern" or msg is None:
            return Probe("legacy", error=error)
        if msg.error is None:
            return Probe("modern", versions.pick_version(msg.result.get("supportedVersions") or []), msg.result)
        data = msg.error.get("data")
        chosen = retry_version(data)
        if chosen is None and msg.error.get("code") == errors.UNSUPPORTED_PROTOCOL_VERSION and isinstance(data, dict) \
                and any(versions.era_of(v) == "legacy" for v in data.get("supported") or [] if isinstance(v, str)):
            return Probe("legacy", error=error)  # it only speaks legacy versions: that is the initialize handshake
        return Probe("modern", chosen)

    async def negotiate(self, probe: Probe) -> EraSession:
        """The session the probe's answer leads to (legacy: after ``initialize``)."""
        if probe.verdict == "modern":
            return ModernSession(probe.version, probe.discovered)
        limit = min(self.probe_timeout, self.timeout)
        if probe.verdict == "silent":
            # That process may still answer server/discover: a fresh one gets initialize.
            await self.link.slot.restart("legacy")
            try:
                return await self.handshake()
            except MCPError as exc:  # not a legacy server: a modern one, too slow to start
                raise TransportError(f"no answer to server/discover within {limit:g} s (restarted, the server then"
                                     f" refused initialize: {exc.code} {exc.message})") from exc
            except NoAnswer:
                raise TransportError(f"no answer to server/discover within {limit:g} s, nor to initialize within"
                                     f" {self.timeout:g} s after a restart") from None
        try:
            return await self.initialize()
        except MCPError as exc:
            if probe.error is None:
                raise
            # server/discover failed and initialize is refused too: most likely a modern server
            # whose discover broke, which refuses initialize because of the probe. Its error is
            # the real one (the refusal stays attached as the cause).
            log.info("server/discover failed (%s) and initialize was refused (%s)", probe.error, exc)
            raise probe.error from exc

    async def initialize(self) -> LegacySession:
        """The 2025-11-25 handshake: initialize, then notifications/initialized."""
        try:
            return await self.handshake()
        except NoAnswer:
            raise TransportError(f"no answer to initialize within {self.timeout:g} s") from None

    async def handshake(self) -> LegacySession:
        """:meth:`initialize`, with silence raised as :class:`NoAnswer`."""
        slot = self.link.slot
        transport = slot.transport
        if transport.capabilities.http and not transport.capabilities.sessionful:
            transport = slot.switch("legacy")
        self.link.serve_input()
        params = {"protocolVersion": versions.LATEST_LEGACY, "capabilities": legacy_capabilities(self.capabilities),
                  "clientInfo": self.client_info}
        req = OutgoingRequest("initialize", params, timeout=self.timeout, stamp_meta=False)
        resp = await self.link.send(req)
        if resp.message is None or resp.message.error is not None:
            other = await transport.fallback(resp)  # HTTP 400/404/405: maybe a 2024-11-05 HTTP+SSE server
            if other is not None:
                slot.transport = other
                return await self.handshake()
        msg = resp.require_message()
        if msg.error is not None:
            e = msg.error
            raise errors.MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
        result: dict[str, Any] = msg.result if isinstance(msg.result, dict) else {}
        version = result.get("protocolVersion")
        if not isinstance(version, str) or versions.era_of(version) != "legacy":
            raise ProtocolError(f"initialize: the server chose protocol version {version!r}, which this client does not speak")
        transport.session_started(version)
        await self.link.notify("notifications/initialized", None)
        await transport.open_session_stream()
        return LegacySession(version, result)


def legacy_capabilities(caps: dict[str, Any]) -> dict[str, Any]:
    """Our capabilities as a 2025-11-25 ``initialize`` declares them.

    ``extensions`` goes too: a 2025-11-25 client declares an extension (MCP Apps, skills...)
    in ``capabilities.extensions`` of ``initialize``, and the session keeps it.
    """
    out = {k: v for k, v in caps.items() if k in ("experimental", "sampling", "elicitation", "roots", "extensions")}
    if "roots" in out:
        out["roots"] = {"listChanged": False}
    return out
