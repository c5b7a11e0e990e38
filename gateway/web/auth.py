"""Who is calling: every `/v1` request's per-task bearer token, turned into its TaskContext (`Caller`, charged to
the task's request budget; `SessionCaller`, not yet)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.types import Scope

from gateway.context import TaskContext
from gateway.errors import GatewayError, RateLimited, Unauthenticated
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
        ctx = await _task_of(request, token)
        core.admit(ctx)
        if span.is_recording():  # tracing off: the attributes are not even built (every request passes here)
            span.set_attributes(task_attributes(ctx))
    return ctx


# Where a request keeps its token's authentication: (the token, its task or the refusal).
_AUTHENTICATED = "mcpexec.authenticated"


async def _task_of(request: Request, token: str) -> TaskContext:
    """The token's task, resolved once a request: its span may need it (`sandbox_parent`) before its route does, and a
    refusal, never cached by the authenticator, must not cost the apiserver two TokenReviews."""
    done: tuple[str, TaskContext | GatewayError] | None = request.scope.get(_AUTHENTICATED)
    if done is None or done[0] != token:
        core: GatewayCore = request.app.state.core
        try:
            done = (token, await core.authenticator.authenticate(token))
        except GatewayError as refusal:
            done = (token, refusal)
        request.scope[_AUTHENTICATED] = done
    if isinstance(done[1], GatewayError):
        raise done[1]
    return done[1]


async def sandbox_parent(scope: Scope, traceparent: str | None) -> str | None:
    """The trace a sandbox's request joins: its task's. The runtime's header (its current span) is kept when it is in
    that trace; any other (a hostile sandbox naming another task's trace, one sent by a task that has none) gives way
    to the task's own span, or to no parent: the gateway's spans never land in a trace the caller does not own."""
    request = Request(scope)
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        return None
    try:
        ctx = await _task_of(request, token)
    except Exception:  # the route answers the refusal (or fails) itself: a span's parent never changes an answer
        return None
    own = tracing.parse(ctx.traceparent) if ctx.traceparent else None
    if own is None:
        return None
    sent = tracing.parse(traceparent) if traceparent else None
    return traceparent if sent is not None and sent[0] == own[0] else ctx.traceparent


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
