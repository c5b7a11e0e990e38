"""`GET /v1/assignment`: a SandboxPool's sandbox asks which task (or AgentSession) it is to run.

A warm sandbox starts with no task; it long-polls here until the operator claims it for one, then runs that task
as a cold sandbox runs its task.json. Only a pool sandbox's token is answered (the assigner refuses any other), and
only with the task whose claim names that very pod: a claim can be neither moved nor read by another sandbox.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from gateway.core import GatewayCore
from gateway.errors import Forbidden, Unauthenticated
from gateway.web.auth import Credentials
from gateway.web.error_responses import ERROR_RESPONSES
from mcpexec.api.agenttask import runtime_task_config
from mcpexec.api.egress import EgressPolicy

log = logging.getLogger("mcpexec.gateway.assignment")

DEFAULT_WAIT_SECONDS = 20.0
MAX_WAIT_SECONDS = 30.0


class Assignment(BaseModel):
    """The runtime's task config: exactly what a cold task's task.json holds (docs/contracts.md)."""

    model_config = ConfigDict(populate_by_name=True)

    namespace: str
    name: str
    uid: str
    mode: Literal["code", "prompt", "session"]
    code: str | None = None
    prompt: str | None = None
    model: str | None = None
    max_turns: int = Field(alias="maxTurns")
    timeout_seconds: int = Field(alias="timeoutSeconds")
    egress: EgressPolicy | None = None  # granted egress: the runtime points the task's tools at the gateway's proxy
    approval: Literal["plan"] | None = None  # the code runs as a plan (docs/approvals.md)
    traceparent: str | None = None  # the trace the runtime continues (docs/observability.md)


async def assignment(core: GatewayCore, token: str | None, wait: float) -> Assignment | None:
    """The task the caller's sandbox was claimed for, waiting up to `wait` seconds (None: not claimed yet)."""
    if not token:
        raise Unauthenticated("missing bearer token")
    if core.assigner is None:
        await core.authenticator.authenticate(token)  # a forged token is told so (401), a task's one is refused
        raise Forbidden("this gateway serves no SandboxPool sandboxes: only a pool's sandbox has an assignment")
    ctx = await core.assigner.assignment(token, min(wait, MAX_WAIT_SECONDS))
    if ctx is None:
        return None
    task = ctx.task
    log.info("sandbox assigned", extra={"task": ctx.task_id, "task_uid": ctx.uid, "session": ctx.session})
    # An AgentSession's: the runtime serves executions (runtime/session.py), it has no code of its own.
    return Assignment.model_validate(
        runtime_task_config(
            task.metadata.namespace,
            task.metadata.name,
            ctx.uid,
            task.spec,
            session=ctx.session,
            traceparent=ctx.traceparent,
        )
    )


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.get(
        "/v1/assignment",
        responses={**ERROR_RESPONSES, 204: {"description": "Not claimed yet: ask again"}},
        response_model=Assignment,
        response_model_exclude_none=True,
        response_model_by_alias=True,
    )
    async def get_assignment(
        credentials: Credentials,
        wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = DEFAULT_WAIT_SECONDS,
    ) -> Assignment | Response:
        """A SandboxPool's sandbox's task (its task.json), once the operator has claimed the sandbox for one:
        waits up to `wait` seconds for the claim, then 204. Any other caller: 403."""
        answer = await assignment(core, None if credentials is None else credentials.credentials, wait)
        return Response(status_code=204) if answer is None else answer

    return routes
