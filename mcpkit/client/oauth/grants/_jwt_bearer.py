"""The JWT bearer grant (RFC 7523 §2.1) for workload identity federation: the platform's
token (Kubernetes, a cloud's metadata service, a CI system) is the assertion."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import OAuthError
from ._base import Grant, GrantContext, TokenSource, resolve, scoped

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .._options import Network, Registration

GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


async def jwt_bearer(ctx: GrantContext, assertion: str, client: Mapping[str, Any]) -> dict[str, Any]:
    """One RFC 7523 token request with ``assertion`` (also the second step of the
    enterprise-managed grant)."""
    form = scoped({"grant_type": GRANT_JWT_BEARER, "assertion": assertion}, ctx.scopes, ctx.resource)
    return await ctx.token(form, client)


@dataclass(eq=False)
class JWTBearer(Grant):
    """The assertion comes from ``assertion`` (a string, or a sync or async callable asked
    each time), ``assertion_file`` (read each time: platforms rotate it) or
    ``assertion_env`` (an environment variable); the first one given."""

    assertion: TokenSource | None = field(default=None, repr=False)
    assertion_file: str | os.PathLike[str] | None = None
    assertion_env: str | None = None

    name = "jwt_bearer"

    def validate(self, registration: Registration, network: Network) -> None:
        if self.assertion is None and self.assertion_file is None and self.assertion_env is None:
            raise ValueError("the jwt_bearer grant needs assertion, assertion_file or assertion_env")

    async def workload_token(self) -> str:
        """The platform's token, from the first source given (read afresh each time)."""
        if self.assertion is not None:
            return await resolve(self.assertion)
        if self.assertion_file is not None:
            try:
                return await resolve(Path(self.assertion_file).read_text("utf-8"))
            except OSError as exc:
                raise OAuthError(f"cannot read the workload token file: {exc.strerror}",
                                 error="invalid_assertion") from None
        value = os.environ.get(self.assertion_env or "")
        if not value:
            raise OAuthError(f"the environment variable {self.assertion_env} holds no workload token",
                             error="invalid_assertion")
        return await resolve(value)

    async def obtain(self, ctx: GrantContext) -> dict[str, Any]:
        assertion = await self.workload_token()
        return await jwt_bearer(ctx, assertion, ctx.client())
