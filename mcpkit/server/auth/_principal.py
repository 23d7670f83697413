"""What a verifier produces and consumes: the caller (:class:`Principal`), the request facts
it may check (:class:`TokenRequest`), the :class:`TokenVerifier` interface, and the
exceptions that become challenges."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...errors import InvalidToken as InvalidToken

#: ``rule(granted, needed) -> bool``: whether the granted scopes cover one needed scope.
ScopeRule = Callable[[frozenset[str], str], bool]


def exact_scopes(granted: frozenset[str], needed: str) -> bool:
    """The default scope rule: a needed scope is covered only by itself."""
    return needed in granted


def hierarchical_scopes(sep: str = ":") -> ScopeRule:
    """A scope rule where ``mcp`` covers ``mcp:tools`` and ``mcp:tools:write`` (prefix at ``sep``)."""

    def rule(granted: frozenset[str], needed: str) -> bool:
        if needed in granted:
            return True
        parts = needed.split(sep)
        return any(sep.join(parts[:i]) in granted for i in range(1, len(parts)))

    return rule


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller of one request (``ctx.auth`` in handlers).

    ``key`` identifies the caller for bindings (MRTR state, tasks, legacy sessions,
    private caches): the issuer and subject, or the issuer and client id for a token
    without ``sub``; None for a token with neither (nothing can be bound to it).
    """

    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    claims: Mapping[str, Any] = field(default_factory=dict)
    issuer: str | None = None
    expires_at: float | None = None
    #: The JWK SHA-256 thumbprint the token is bound to (``cnf.jkt``, RFC 9449), if any.
    jkt: str | None = None
    #: The scope rule of the server that authenticated it (for :meth:`allows`).
    rule: ScopeRule = field(default=exact_scopes, repr=False, compare=False)
    #: Lists show everything, whatever the scopes (the server's ``list_mode="all"``).
    list_all: bool = field(default=False, repr=False, compare=False)

    @property
    def key(self) -> str | None:
        """The caller's binding key, or None when the token names neither ``sub`` nor a client.

        A JSON array ``[issuer, "sub" | "client", value]``: unambiguous whatever the claims
        hold (a ``sub`` of ``client:X`` is not client X, a missing issuer is not an empty
        one), and the issuer is part of it, so equal subjects of two issuers differ.
        """
        if self.subject is not None:
            kind, who = "sub", self.subject
        elif self.client_id is not None:
            kind, who = "client", self.client_id
        else:
            return None
        return json.dumps([self.issuer, kind, who], separators=(",", ":"))

    def allows(self, needed: Collection[str]) -> bool:
        """Whether this caller's scopes cover every scope in ``needed``."""
        granted = self.scopes
        rule = self.rule
        return all(rule(granted, s) for s in needed)

    def missing(self, needed: Collection[str]) -> list[str]:
        granted = self.scopes
        return [s for s in needed if not self.rule(granted, s)]


@dataclass(frozen=True, slots=True)
class TokenRequest:
    """The facts about one HTTP request that a verifier may check."""

    #: The HTTP method (``POST``...).
    method: str
    #: The canonical resource URL (the MCP endpoint, including its mount path): the audience
    #: a token must name, and the ``htu`` a DPoP proof must name.
    resource: str
    #: The authorization scheme the token came with (``Bearer`` or ``DPoP``), as sent.
    scheme: str
    #: Request headers, lower-cased names (``dpop`` included when sent).
    headers: Mapping[str, str]


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns an access token into a :class:`Principal`.

    Return None (or raise :class:`InvalidToken`) when the token is not acceptable. The
    verifier checks the audience against ``request.resource`` unless configured otherwise.
    """

    async def verify(self, token: str, request: TokenRequest) -> Principal | None: ...
