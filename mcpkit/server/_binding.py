"""Who a binding (an MRTR ``requestState``, a task) belongs to.

``ctx.principal`` is the caller's binding key (``Principal.key``) and None without OAuth
(stdio, an open HTTP server: nothing to tell callers apart, nothing is bound). An
authenticated caller whose token names neither ``sub`` nor a client has no key: binding
its state to None would share it with every such caller, so the binding is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol import errors

if TYPE_CHECKING:
    from ._context import Context


def unbindable(what: str) -> errors.MCPError:
    """The refusal for a caller with no identity to bind ``what`` to."""
    return errors.invalid_request(
        f"the access token names neither a subject (sub) nor a client (client_id), so {what} cannot be bound to "
        "its caller; use a token that identifies the caller")


def owner_key(ctx: Context, what: str) -> str | None:
    """The key ``what`` is bound to: ``ctx.principal`` (None without OAuth); raises
    :func:`unbindable` for an authenticated caller without a key."""
    principal = ctx.principal
    if principal is None and ctx.auth is not None:
        raise unbindable(what)
    return principal
