"""One object per grant: :class:`AuthorizationCode` (with PKCE; the default),
:class:`ClientCredentials`, :class:`JWTBearer` (workload identity federation),
:class:`EnterpriseManaged` (token exchange for an ID-JAG, then JWT bearer) and
:class:`RefreshToken` (used by the hook to renew tokens). A grant gets a
:class:`GrantContext` and returns the token response."""

from ._base import Grant, GrantContext, TokenSource
from ._client_credentials import ClientCredentials
from ._code import AuthorizationCode
from ._enterprise import EnterpriseManaged
from ._jwt_bearer import JWTBearer
from ._refresh import RefreshToken

__all__ = ["AuthorizationCode", "ClientCredentials", "EnterpriseManaged", "Grant", "GrantContext", "JWTBearer",
           "RefreshToken", "TokenSource"]

#: The grants by their names (the ``grant=`` strings of the older spelling).
BY_NAME: dict[str, type[Grant]] = {g.name: g for g in (AuthorizationCode, ClientCredentials, JWTBearer,
                                                       EnterpriseManaged)}
