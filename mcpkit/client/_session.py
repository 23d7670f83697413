"""The era a connected Client speaks, as an object: what differs between 2026-07-28 and
2025-11-25 once negotiation (:mod:`._era`) has settled it.

=================  ========================================  ======================================
                   :class:`ModernSession` (2026-07-28)       :class:`LegacySession` (2025-11-25)
=================  ========================================  ======================================
each request       ``_meta``: version, capabilities, info    only a progress token
-32022             re-send with a version from ``supported``  (not a 2025-11-25 error)
a stale verdict    an answer of the other era: re-negotiate  (settled by initialize)
the card           the probe's DiscoverResult, once           built from the initialize result
tasks              declared per request (the extension)      ``params.task`` (2025-11-25 tasks)
change streams     ``subscriptions/listen``                   the notifications the session pushes
=================  ========================================  ======================================

The Client holds one (none before it connects) and asks it; it never tests the era by name.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, ClassVar, Literal, NamedTuple

from ..errors import MCPError
from ..protocol import errors, versions
from ..protocol import meta as M
from ._listen import Hub, Notification, legacy_stream, modern_stream, subscription_filter
from ._signals import EraStale
from ._transport import OnNote, Response

Era = Literal["modern", "legacy"]


class Hello(NamedTuple):
    """Who the client is, as each 2026-07-28 request says it (read from the Client per request)."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None


class ChangeFeeds(NamedTuple):
    """What a change stream is made from: the legacy session's pushed notifications (``hub``,
    ``request`` for ``resources/subscribe``) or a ``subscriptions/listen`` request (``listen``)."""

    hub: Hub
    request: Callable[[str, dict[str, Any]], Awaitable[Any]]
    listen: Callable[[dict[str, Any], OnNote], Awaitable[dict[str, Any]]]
    publish: OnNote
    acknowledge: Callable[[dict[str, Any]], None]


class EraSession(abc.ABC):
    """One era's send rules for a connected Client."""

    era: ClassVar[Era]
    #: The 2026-07-28 version negotiation settled on (None: the client's preferred one stands).
    version: str | None = None
    #: The 2025-11-25 version initialize settled on (legacy only).
    legacy_version: str | None = None
    #: The initialize result (legacy only).
    initialize_result: dict[str, Any] | None = None

    @abc.abstractmethod
    def stamp(self, body: dict[str, Any], progress_token: Any, log_level: str | None, hello: Hello) -> None:
        """Put this era's ``_meta`` on a request's params (in place)."""

    def retry_version(self, error: dict[str, Any]) -> str | None:
        """The version to re-send with after a -32022 ``error``, or None."""
        return None

    def vet(self, response: Response) -> None:
        """Check an answer against the era; raise :class:`EraStale` when it does not fit."""
        return None

    @abc.abstractmethod
    def take_card(self, reuse: bool) -> dict[str, Any] | None:
        """A DiscoverResult known without asking (``reuse``: the probe's may be used), or None."""

    def peek_card(self) -> dict[str, Any] | None:
        """The DiscoverResult :meth:`take_card` would hand out, left in place (or None)."""
        return None

    def for_task(self, params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``'s params when the caller asks for a task."""
        return params

    @abc.abstractmethod
    def changes(self, feeds: ChangeFeeds, tools: bool, prompts: bool, resources_list: bool,
                resources: Sequence[str]) -> AsyncGenerator[Notification, None]:
        """The change notifications ``listen()`` yields."""


class ModernSession(EraSession):
    """2026-07-28: every request carries the version and the client's capabilities."""

    era: ClassVar[Era] = "modern"

    def __init__(self, version: str | None = None, discovered: dict[str, Any] | None = None, *,
                 unconfirmed: bool = False) -> None:
        #: The version the probe settled on (None: keep the client's preferred one).
        self.version = version
        self.discovered = discovered
        #: A remembered verdict not yet confirmed by an answer: an answer of the other era re-negotiates.
        self.unconfirmed = unconfirmed

    def stamp(self, body: dict[str, Any], progress_token: Any, log_level: str | None, hello: Hello) -> None:
        given = body.get("_meta", {})
        meta: dict[str, Any] = {**given, M.PROTOCOL_VERSION: hello.version, M.CLIENT_CAPABILITIES: hello.capabilities}
        if hello.client_info is not None:
            meta[M.CLIENT_INFO] = hello.client_info
        if progress_token is not None:
            meta[M.PROGRESS_TOKEN] = progress_token
        if log_level is not None:
            meta[M.LOG_LEVEL] = log_level
        if M.CLIENT_CAPABILITIES in given:  # declared for this request only (e.g. the tasks extension)
            meta[M.CLIENT_CAPABILITIES] = given[M.CLIENT_CAPABILITIES]
        body["_meta"] = meta

    def retry_version(self, error: dict[str, Any]) -> str | None:
        return retry_version(error.get("data"))

    def vet(self, response: Response) -> None:
        if not self.unconfirmed:
            return
        msg = response.message
        if msg is None:
            status = response.status
            if status is not None and 400 <= status < 500 and status not in (401, 403):
                raise EraStale(None)
            return
        if msg.error is None:
            if isinstance(msg.result, dict):
                self.unconfirmed = False
            return
        if msg.error.get("code") not in errors.MODERN_ERROR_CODES:
            e = msg.error
            raise EraStale(MCPError(e.get("code", 0), e.get("message", ""), e.get("data")))

    def take_card(self, reuse: bool) -> dict[str, Any] | None:
        if not reuse or self.discovered is None:
            return None
        found, self.discovered = self.discovered, None  # the probe already asked
        return found

    def peek_card(self) -> dict[str, Any] | None:
        return self.discovered

    def for_task(self, params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
        from ._tasks import declare_in

        return declare_in(params, capabilities)

    def changes(self, feeds: ChangeFeeds, tools: bool, prompts: bool, resources_list: bool,
                resources: Sequence[str]) -> AsyncGenerator[Notification, None]:
        params = {"notifications": subscription_filter(tools, prompts, resources_list, resources)}

        def send(on_note: OnNote) -> Awaitable[dict[str, Any]]:
            return feeds.listen(params, on_note)

        return modern_stream(send, feeds.publish, feeds.acknowledge)


class LegacySession(EraSession):
    """2025-11-25: ``initialize`` settled the version and the capabilities for the session."""

    era: ClassVar[Era] = "legacy"

    def __init__(self, version: str, initialize_result: dict[str, Any]) -> None:
        self.legacy_version = version
        self.initialize_result = initialize_result

    def stamp(self, body: dict[str, Any], progress_token: Any, log_level: str | None, hello: Hello) -> None:
        if progress_token is not None:
            body["_meta"] = {**body.get("_meta", {}), M.PROGRESS_TOKEN: progress_token}

    def take_card(self, reuse: bool) -> dict[str, Any] | None:
        return discover_from_initialize(self.legacy_version, self.initialize_result)

    def for_task(self, params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
        from ._tasks_legacy import augment

        return augment(params, self.initialize_result)  # 2025-11-25 tasks: params.task

    def changes(self, feeds: ChangeFeeds, tools: bool, prompts: bool, resources_list: bool,
                resources: Sequence[str]) -> AsyncGenerator[Notification, None]:
        return legacy_stream(feeds.hub, feeds.request, tools, prompts, resources_list, resources)


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
