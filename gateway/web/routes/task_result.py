"""`POST /v1/task/result`: a task's sandbox reports its result ahead of its termination message (docs/contracts.md).

The termination message reaches the operator only once the pod has exited and its kubelet has said so; a report is
recorded in the AgentTask's status (`status.report`) at once, and the operator finishes the task from it
(controller/reports.py). The task is the caller's, as its token says (a claimed pool sandbox's: the task that claimed
it), so a sandbox reports for its own task only, and says no more than its termination message could: the same
document, within the same bound. Its text passes as it came, as the termination message's does: the sandbox only
ever saw personal data as the vault's tokens.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request

from gateway.core import GatewayCore
from gateway.errors import Forbidden, NotFound, ReportTooLarge
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES
from mcpexec.api.result import RuntimeResult
from runtime.contract import RESULT_LIMIT, RESULT_REPORT_PATH

log = logging.getLogger("mcpexec.gateway.task_result")


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.post(RESULT_REPORT_PATH, responses=ERROR_RESPONSES, status_code=204)
    async def report_result(request: Request, ctx: Caller, report: RuntimeResult) -> None:
        """The task's result, the document its runtime writes as its termination message, recorded in its status:
        204 once taken, and 204 again for a report that changes nothing (the task has one, the first stands, or has
        finished). 413 past the termination message's 4096 bytes; 403 for an interactive session's sandbox (a
        session is no task); 404 where no report is taken (local mode: the host reads the result file); 503 when
        the API server did not take it."""
        if ctx.session:
            raise Forbidden("an interactive session's sandbox has no task result to report: the session is no task")
        if core.task_reports is None:
            raise NotFound("this gateway takes no task results: the sandbox's host reads its result file")
        if len(await request.body()) > RESULT_LIMIT:
            raise ReportTooLarge(f"a task result is at most {RESULT_LIMIT} bytes of JSON, as its termination message")
        recorded = await core.task_reports.record(ctx, report)
        log.info(
            "task result reported",
            extra={"task": ctx.task_id, "task_uid": ctx.uid, "phase": report.phase.value, "recorded": recorded},
        )

    return routes
