"""`/v1/session/*`: an interactive session's runtime polls for its executions and posts what they print and their
outcomes (docs/contracts.md). Both posts are idempotent (output chunks are numbered, a second outcome is taken as a
duplicate), so the runtime sends them again through a gateway or session store outage."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Query, Response

from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import GatewayError
from gateway.executions.models import Execution, OutcomePost, OutputPost
from gateway.web.auth import SessionCaller, charge
from gateway.web.error_responses import ERROR_RESPONSES
from gateway.web.routes.assignment import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS

T = TypeVar("T")
# How long past a session runtime's poll its broker session is kept for the next one (polls follow each other at once).
SESSION_POLL_SLACK_SECONDS = 60.0


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.get(
        "/v1/session/next",
        responses={**ERROR_RESPONSES, 204: {"description": "Nothing to run yet: ask again"}},
        response_model=Execution,
        response_model_by_alias=True,
    )
    async def next_execution(
        ctx: SessionCaller, wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = DEFAULT_WAIT_SECONDS
    ) -> Execution | Response:
        """An interactive session's runtime asks for its next execution: waits up to `wait` seconds, then 204;
        403 `no_session` once the session is over (or for a task that has none)."""
        if ctx.session:  # an AgentSession's sandbox: its broker session opens with its first poll (or execution)
            core.executions.open(ctx.scope)
            # ...and lasts while it polls, whatever its token's cache says: the reaper would end the session.
            core.keep(ctx.scope, time.time() + wait + SESSION_POLL_SLACK_SECONDS)
        execution = await _charged_if_refused(core, ctx, core.executions.next(ctx.scope, wait))
        if execution is None:
            await charge(core, ctx.scope)
            return Response(status_code=204)
        return execution

    @routes.post("/v1/session/executions/{execution_id}", responses=ERROR_RESPONSES, status_code=204)
    async def complete_execution(ctx: SessionCaller, execution_id: str, outcome: OutcomePost) -> None:
        """The runtime's outcome of an execution it was given (the gateway bounds each stream again), after `chunks`
        numbered chunks of output; the same outcome sent again is taken once (204 again). 404 when that execution is
        not running in this session (its session ended, or the session store lost it)."""
        step = core.executions.complete(ctx.scope, execution_id, outcome, outcome.chunks)
        await _charged_if_refused(core, ctx, step)

    @routes.post("/v1/session/executions/{execution_id}/output", responses=ERROR_RESPONSES, status_code=204)
    async def execution_output(ctx: SessionCaller, execution_id: str, post: OutputPost) -> None:
        """What a streaming execution printed since the runtime's last post, in numbered chunks (one taken before is
        skipped, one past the next expected leaves a gap its readers are told of); 404 when that execution is not
        running in this session (it finished or ended). Past about a million characters in all, the rest is dropped
        (its outcome still has the head and tail)."""
        await _charged_if_refused(core, ctx, core.executions.output(ctx.scope, execution_id, post.chunks))

    return routes


async def _charged_if_refused(core: GatewayCore, ctx: TaskContext, step: Awaitable[T]) -> T:
    """A session runtime's request: free if it moves an execution along, charged to the task's request budget
    before its refusal otherwise (a sandbox polling with no session, or posting for ids it was never given, gets
    rate limited as any other flood)."""
    try:
        return await step
    except GatewayError:
        await charge(core, ctx.scope)
        raise
