"""Which era a server speaks: the probe (``server/discover``), the 2025-11-25 ``initialize``
handshake, the re-probe when a remembered verdict goes stale, and the cache of verdicts per
stdio command line or per HTTP origin.

The negotiation functions take the :class:`~mcpkit.client.Client` and set its era state
(``era``, ``legacy_version``, ``initialize_result``, ``protocol_version``); their requests go
through the client's auth layer and single send, never its retries.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..errors import ProtocolError, TransportError
from ..protocol import eras, errors, versions
from ..protocol import meta as M
from ._auth import OutgoingRequest
from ._transport import NoAnswer

if TYPE_CHECKING:
    from ._client import Client

log = logging.getLogger("mcpkit.client")

Era = Literal["modern", "legacy"]


def era_key(target: str | list[str]) -> str:
    """``stdio:<argv>`` or ``http:<scheme://host:port>``."""
    if isinstance(target, str):
        parts = urlsplit(target)
        return f"http:{parts.scheme}://{parts.netloc}"
    return "stdio:" + json.dumps(list(target))


class EraCache:
    """Era verdicts in memory, and optionally in a JSON file the host chooses (so a restart
    skips the probe). A verdict that stops working is dropped and the server re-probed."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._eras: dict[str, Era] = {}
        if self.path is not None:
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
        return self._eras.get(key)

    def put(self, key: str, era: Era) -> None:
        if self._eras.get(key) != era:
            self._eras[key] = era
            self._save()

    def forget(self, key: str) -> None:
        if self._eras.pop(key, None) is not None:
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
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
async def settle(client: Client) -> None:
    """Connect-time: decide the era (from the mode, the cache or a probe); legacy means the
    ``initialize`` handshake is done when this returns."""
    if client.transport.capabilities.kind == "memory":
        client.era = "modern"  # a Server object in this process speaks 2026-07-28
        return
    if client.mode == "legacy":
        await initialize(client)
        return
    if client.mode != "auto":
        client.era = "modern"
        return
    key = client._era_key
    cached = client.era_cache.get(key) if key else None
    if cached == "legacy" and key:
        try:
            await initialize(client)
            return
        except (errors.MCPError, TransportError) as exc:
            log.info("cached era 'legacy' no longer works (%s); probing again", exc)
            client.era_cache.forget(key)
            await restart_transport(client, "modern")
    elif cached == "modern":
        client.era = "modern"
        client._era_unconfirmed = True  # the first answer confirms it, or sends us to reprobe()
        return
    if await probe(client) == "legacy":
        await initialize(client)
    else:
        client.era = "modern"
    if key and client.era is not None:
        client.era_cache.put(key, client.era)


async def probe(client: Client) -> eras.Verdict:
    """Send ``server/discover`` under our preferred modern version and read the era off the
    answer. A modern answer also settles ``protocol_version`` (and keeps the DiscoverResult)."""
    http = client.transport.capabilities.http
    limit = min(client.probe_timeout, client.timeout)
    req = OutgoingRequest("server/discover", {}, timeout=limit)
    try:
        resp = await client._send_handling_auth(req, client._send_single_request)
    except NoAnswer:
        if http:
            raise TransportError(f"no answer to server/discover within {limit:g} s") from None
        return "legacy"  # silence on stdio: a legacy server waiting for initialize
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
    if verdict != "modern" or msg is None:
        return verdict
    if msg.error is None:
        client._discovered = msg.result
        chosen = versions.pick_version(msg.result.get("supportedVersions") or [])
        if chosen is not None:
            client.protocol_version = chosen
        return "modern"
    data = msg.error.get("data")
    chosen = retry_version(data)
    if chosen is not None:
        client.protocol_version = chosen
    elif msg.error.get("code") == errors.UNSUPPORTED_PROTOCOL_VERSION and isinstance(data, dict) and any(
            versions.era_of(v) == "legacy" for v in data.get("supported") or [] if isinstance(v, str)):
        return "legacy"  # it only speaks legacy versions: that is the initialize handshake
    return "modern"


async def initialize(client: Client) -> None:
    """The 2025-11-25 handshake: initialize, then notifications/initialized."""
    transport = client.transport
    if transport.capabilities.http and not transport.capabilities.sessionful:
        client.transport = transport = transport.for_era("legacy")
    client._input.serving = True  # the server may now ask for sampling, elicitation, roots
    params = {"protocolVersion": versions.LATEST_LEGACY, "capabilities": legacy_capabilities(client.capabilities),
              "clientInfo": client.client_info}
    req = OutgoingRequest("initialize", params, timeout=client.timeout, stamp_meta=False)
    try:
        resp = await client._send_handling_auth(req, client._send_single_request)
    except NoAnswer:
        raise TransportError(f"no answer to initialize within {client.timeout:g} s") from None
    msg = resp.require_message()
    if msg.error is not None:
        e = msg.error
        raise errors.MCPError(e.get("code", 0), e.get("message", ""), e.get("data"))
    result: dict[str, Any] = msg.result if isinstance(msg.result, dict) else {}
    version = result.get("protocolVersion")
    if not isinstance(version, str) or versions.era_of(version) != "legacy":
        raise ProtocolError(f"initialize: the server chose protocol version {version!r}, which this client does not speak")
    client.era = "legacy"
    client.legacy_version = version
    client.initialize_result = result
    transport.session_started(version)
    await client._notify("notifications/initialized", None)
    await transport.open_session_stream()


async def reprobe(client: Client) -> bool:
    """A cached "modern" verdict met a legacy-looking answer: probe again. True when the
    server turned out legacy (the session is then initialized and the verdict cached)."""
    client._era_unconfirmed = False
    key = client._era_key
    if key:
        client.era_cache.forget(key)
    if await probe(client) != "legacy":
        return False
    await initialize(client)
    if key:
        client.era_cache.put(key, "legacy")
    return True


async def restart_transport(client: Client, era: Era) -> None:
    """Close the connection and open a fresh one suited to ``era``."""
    old = client.transport
    await old.close()
    client.transport = old.for_era(era)
    client.era = None
    await client.transport.start()


def legacy_capabilities(caps: dict[str, Any]) -> dict[str, Any]:
    """Our capabilities as a 2025-11-25 ``initialize`` declares them."""
    out = {k: v for k, v in caps.items() if k in ("experimental", "sampling", "elicitation", "roots")}
    if "roots" in out:
        out["roots"] = {"listChanged": False}
    return out


def discover_from_initialize(version: str | None, init: dict[str, Any] | None) -> dict[str, Any]:
    """A DiscoverResult built from a legacy server's initialize result."""
    init = init or {}
    out: dict[str, Any] = {
        "resultType": "complete",
        "supportedVersions": [version],
        "capabilities": init.get("capabilities") or {},
        "ttlMs": 0,
        "cacheScope": "private",
    }
    if init.get("instructions") is not None:
        out["instructions"] = init["instructions"]
    if isinstance(init.get("serverInfo"), dict):
        out["_meta"] = {M.SERVER_INFO: init["serverInfo"]}
    return out


def retry_version(data: Any) -> str | None:
    """The version to re-send with after -32022, from the error's ``data.supported``.

    That may be the current one again: a server that rejected it while listing it (e.g. a
    mixed-version deployment mid-rollout) gets one more try with it. Callers retry once.
    """
    supported = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(supported, list):
        return None
    return versions.pick_version([v for v in supported if isinstance(v, str)])
