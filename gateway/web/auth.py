"""Who is calling: every `/v1` request's per-task bearer token, turned into its TaskContext."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.security.utils import get_authorization_scheme_param

from gateway.context import TaskContext
from gateway.errors import Unauthenticated

if TYPE_CHECKING:
    from gateway.core import GatewayCore


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, read as FastAPI's `HTTPBearer` reads it."""
    scheme, token = get_authorization_scheme_param(authorization)
    return token if scheme.lower() == "bearer" and token else None


async def authorize(request: Request, token: str | None) -> TaskContext:
    """A valid per-task token, then the task's rate limit."""
    if not token:
        raise Unauthenticated("missing bearer token")
    core: GatewayCore = request.app.state.core
    ctx = await core.authenticator.authenticate(token)
    core.admit(ctx)
    await core.rate_limits.check(ctx.scope)
    return ctx
