"""`/v1/approvals/{callId}`: a sandbox waits for the decision on a call of its own held for approval (any replica
answers: the held calls are shared), then sends the call again under the same call id; `/v1/approvals/plans/{planId}`:
a plan's dry run is over, its recorded calls are held as one for a person to approve, waited for as its call id
(docs/approvals.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel

from gateway.core import GatewayCore
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES
from gateway.web.routes.assignment import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS


class ApprovalDecision(BaseModel):
    """`approved`: send the call again with the same callId, it runs once; `denied` (`reason`: the person's, tokenized),
    `expired`: it never runs; `ran`: it was taken to run already."""

    state: Literal["approved", "denied", "expired", "ran"]
    tool: str
    digest: str
    reason: str


class PlanSubmitted(BaseModel):
    state: Literal["pending", "empty"]
    digest: str | None = None


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.get(
        "/v1/approvals/{call_id}",
        responses={**ERROR_RESPONSES, 204: {"description": "Not decided yet: ask again"}},
        response_model=ApprovalDecision,
    )
    async def approval(
        ctx: Caller,
        call_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{8,64}$")],
        wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = DEFAULT_WAIT_SECONDS,
    ) -> ApprovalDecision | Response:
        """The decision on this task's held call `call_id`: waits up to `wait` seconds for it, then 204; 404 when
        this task has no held call of that id."""
        answer = await core.approvals.wait(ctx, call_id, wait)
        if answer is None:
            return Response(status_code=204)
        return ApprovalDecision(state=answer.state, tool=answer.tool, digest=answer.digest, reason=answer.reason)

    @routes.post("/v1/approvals/plans/{plan_id}", responses=ERROR_RESPONSES, response_model=PlanSubmitted)
    async def submit(ctx: Caller, plan_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{8,64}$")]) -> PlanSubmitted:
        """The plan's dry run is over: `pending` (its calls are held as one, `digest`: wait for the decision at
        `/v1/approvals/{planId}`), or `empty` (it recorded no call: nothing to approve, the dry run was the run)."""
        plan = await core.approvals.submit(ctx, plan_id)
        return PlanSubmitted(state="empty") if plan is None else PlanSubmitted(state="pending", digest=plan.digest)

    return routes
