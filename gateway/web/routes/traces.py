"""`POST /v1/traces`: a sandbox's runtime hands over its finished spans (the sandbox has no other way out), and the
gateway exports them with its own, checked and bounded as gateway/telemetry/spans.py says. The post counts against
the task's request budget like any other request."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.core import GatewayCore
from gateway.telemetry.spans import SandboxSpans, SpansTaken, sandbox_spans
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES
from mcpexec import tracing
from runtime.contract import TRACES_PATH


def router(_core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.post(TRACES_PATH, responses=ERROR_RESPONSES, status_code=202, response_model=SpansTaken)
    async def post_spans(ctx: Caller, posted: SandboxSpans) -> SpansTaken:
        """The sandbox's spans, exported in its task's trace: 202 with how many were taken and dropped (all of them
        where tracing is off or the task has no trace)."""
        spans = sandbox_spans(ctx, posted) if tracing.enabled() else []
        tracing.export(spans)
        return SpansTaken(accepted=len(spans), dropped=len(posted.spans) - len(spans))

    return routes
