"""Change notifications, pure: what a stream acknowledges, and which notification a change
becomes for it. Shared by ``subscriptions/listen`` (2026-07-28) and legacy sessions.

Also the parsing of ``notifications/cancelled`` (the client's way to end a request).
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable
from typing import Any

from msgspec import UNSET

from .types import SubscriptionFilter

#: A change that concerns one resource (published with its URI).
RESOURCE_UPDATED = "resource_updated"

#: List kinds, and the notification that says the list changed.
LIST_CHANGED: dict[str, str] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
#: Legacy sessions follow every list (2025-11-25 has no per-stream filter).
ALL_LISTS: frozenset[str] = frozenset(LIST_CHANGED)

Notice = tuple[str, "dict[str, Any] | None"]


def acknowledge(wanted: SubscriptionFilter, capabilities: Collection[str]) -> SubscriptionFilter:
    """The part of ``wanted`` a server with ``capabilities`` honours (what it has and notifies about).

    ``taskIds`` is never acknowledged: this server sends no ``notifications/tasks``.
    """
    ack = SubscriptionFilter()
    if wanted.toolsListChanged is True and "tools" in capabilities:
        ack.toolsListChanged = True
    if wanted.promptsListChanged is True and "prompts" in capabilities:
        ack.promptsListChanged = True
    if wanted.resourcesListChanged is True and "resources" in capabilities:
        ack.resourcesListChanged = True
    if wanted.resourceSubscriptions is not UNSET and "resources" in capabilities:
        ack.resourceSubscriptions = list(dict.fromkeys(wanted.resourceSubscriptions))
    return ack


def followed_lists(ack: SubscriptionFilter) -> frozenset[str]:
    """The list kinds an acknowledged filter follows."""
    out = set()
    if ack.toolsListChanged is True:
        out.add("tools")
    if ack.promptsListChanged is True:
        out.add("prompts")
    if ack.resourcesListChanged is True:
        out.add("resources")
    return frozenset(out)


def uri_matches(uri: str, subscribed: str) -> bool:
    """Whether a subscription to ``subscribed`` covers ``uri`` (itself, or anything under it)."""
    return uri == subscribed or uri.startswith(subscribed.rstrip("/") + "/")


def notification_for(kind: str, uri: str | None, *, lists: Container[str], uris: Iterable[str],
                     meta: dict[str, Any] | None = None) -> Notice | None:
    """The notification (method, params) a stream gets for one change, or None if it is not for it.

    ``lists`` are the list kinds the stream follows, ``uris`` the resources it subscribed to.
    ``meta`` goes into the params as ``_meta``; without it a list change has no params.
    """
    if kind == RESOURCE_UPDATED:
        target = uri or ""
        if not any(uri_matches(target, u) for u in uris):
            return None
        params: dict[str, Any] = {"uri": target}
        if meta is not None:
            params["_meta"] = meta
        return "notifications/resources/updated", params
    method = LIST_CHANGED.get(kind)
    if method is None or kind not in lists:
        return None
    return method, ({"_meta": meta} if meta is not None else None)
