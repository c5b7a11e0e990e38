"""Who is calling: every `/v1` request's per-task bearer token, turned into its TaskContext (`Caller`, charged to
the task's request budget; `SessionCaller`, not yet)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from gateway.context import TaskContext
from gateway.errors import RateLimited, Unauthenticated
from gateway.telemetry.spans import task_attributes
from mcpexec import tracing

# Below the 1 s Retry-After a 429 carries, so a client that honours it waits no longer than it would anyway.
RATE_LIMITED_HOLD_SECONDS = 0.25

if TYPE_CHECKING:
    from gateway.core import GatewayCore


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, read as FastAPI's `HTTPBearer` reads it."""
    scheme, token = get_authorization_scheme_param(authorization)
    return token if scheme.lower() == "bearer" and token else None


async def authorize(request: Request, token: str | None) -> TaskContext:
    """A valid per-task token, then the task's rate limit."""
    ctx = await authenticate(request, token)
    await charge(request.app.state.core, ctx.scope)
    return ctx


async def authenticate(request: Request, token: str | None) -> TaskContext:
    """A valid per-task token (not yet counted against the task's rate limit)."""
    if not token:
        raise Unauthenticated("missing bearer token")
    core: GatewayCore = request.app.state.core
    with tracing.span("gateway.auth") as span:
        ctx = await core.authenticator.authenticate(token)
        core.admit(ctx)
        if span.is_recording():  # tracing off: the attributes are not even built (every request passes here)
            span.set_attributes(task_attributes(ctx))
    return ctx


async def charge(core: GatewayCore, scope: str) -> None:
    """One request of the task's rate limit; RateLimited (held briefly first) when it is spent."""
    try:
        await core.rate_limits.check(scope)
    except RateLimited:
        # Held before it is answered: a task looping on 429s gets a few a second per connection instead of
        # thousands, each of which would cost the gateway a request's work (make bench pii_isolation).
        await asyncio.sleep(RATE_LIMITED_HOLD_SECONDS)
        raise


_bearer = HTTPBearer(
    auto_error=False, description="Per-task token: a gateway JWT locally, a projected SA token in a cluster"
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def _caller(request: Request, credentials: Credentials) -> TaskContext:
    return await authorize(request, None if credentials is None else credentials.credentials)


Caller = Annotated[TaskContext, Depends(_caller)]


async def _session_caller(request: Request, credentials: Credentials) -> TaskContext:
    return await authenticate(request, None if credentials is None else credentials.credentials)


# A session runtime's requests that move an execution along (a poll that gets one, its output, its outcome) are each
# paired with a caller's execution, so they do not count against the task's request budget (which its code's tool
# calls spend): the handlers charge only those that do not (an empty poll, an unknown execution id).
SessionCaller = Annotated[TaskContext, Depends(_session_caller)]
