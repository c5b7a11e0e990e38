"""The gateway's door for people: the execute API, the approval API and the MCP front door, on a port of its own.

Sandboxes reach the gateway's sandbox port only (their NetworkPolicy allows nothing else), so nothing here is a way
around a sandbox's own policy: a sandbox holds no user's token, and cannot reach this listener. The chart's
NetworkPolicy for the gateway admits this port from anywhere but sandbox pods.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.cluster.people.approvals import ClusterApprovals
from gateway.cluster.people.front_door import PREFIX, ClusterFrontDoor
from gateway.cluster.people.sessions import ClusterSessions
from gateway.executions.errors import ExecutionError, ExecutionPending
from gateway.executions.models import (
    MAX_CHUNKS,
    ExecuteRequest,
    ExecutionErrorResponse,
    ExecutionResult,
    ExecutionStatus,
)
from gateway.web.app import gateway_app
from gateway.web.auth import Credentials
from gateway.web.error_responses import ERROR_RESPONSES
from mcpexec.api.approval import DIGEST_PATTERN, Decision, DecisionAnswer, PendingAnswer

NDJSON = "application/x-ndjson"
# The execution's id, on every answer about one: to re-attach to it (GET EXECUTION_PATH), or, sent by the caller, the
# id it chose for it (an execution sent again with the same id and code is the same one: never run twice).
EXECUTION_ID_HEADER = "Mcpexec-Execution-Id"
EXECUTION_PATH = "/v1/sessions/{namespace}/{name}/executions/{execution_id}"
APPROVALS_PATH = "/v1/approvals/{namespace}/{kind}/{name}"
_EXECUTION_RESPONSES = {
    **ERROR_RESPONSES,
    202: {"model": ExecutionStatus, "description": "No outcome for this caller yet: the execution's state"},
    409: {"model": ExecutionErrorResponse},
    410: {"model": ExecutionErrorResponse},
}


def _headers(execution_id: str) -> dict[str, str]:
    return {EXECUTION_ID_HEADER: execution_id}


def _status(status: ExecutionStatus, code: int, headers: dict[str, str]) -> JSONResponse:
    """An execution's state as answered: its fields that have a value (an outcome's are all there)."""
    body = {key: value for key, value in status.model_dump(by_alias=True).items() if value is not None}
    return JSONResponse(body, status_code=code, headers=headers)


def create_sessions_app(sessions: ClusterSessions, approvals: ClusterApprovals) -> FastAPI:
    app = gateway_app(
        sessions.core, "mcpexec sessions", "For people: the execute API over AgentSessions, the approval API."
    )

    @app.exception_handler(ExecutionError)
    async def _execution_error(request: Request, exc: ExecutionError) -> JSONResponse:
        """An execution's failure, with its id (header and body) and its state; a wait that ended with no outcome
        while it may still run is a 202 with its state, to re-attach to (`Location`)."""
        sessions.core.metrics.errors.labels(exc.code).inc()
        headers = _headers(exc.execution_id)
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
        if isinstance(exc, ExecutionPending):
            headers["Location"] = EXECUTION_PATH.format(**request.path_params, execution_id=exc.execution_id)
            return _status(exc.status_body(), exc.status, headers)
        return JSONResponse(exc.answer().model_dump(by_alias=True), status_code=exc.status, headers=headers)

    @app.post(
        "/v1/sessions/{namespace}/{name}/execute",
        responses=_EXECUTION_RESPONSES,
        response_model=ExecutionResult,
        response_model_by_alias=True,
    )
    async def execute(
        namespace: str,
        name: str,
        request: ExecuteRequest,
        credentials: Credentials,
        stream: Annotated[bool, Query(description="JSON lines as the code prints (application/x-ndjson)")] = False,
        execution_id: Annotated[
            str | None, Header(alias=EXECUTION_ID_HEADER, description="the caller's own id for this execution")
        ] = None,
    ) -> Response:
        """Run code in an AgentSession, as the caller (their own Kubernetes token; `create` on
        `agentsessions/exec`): its stdout, stderr (bounded head and tail), error, duration and execution id (also in
        the `Mcpexec-Execution-Id` header). Variables persist. With `stream=true`: one JSON object a line, first
        `{"kind": "execution", "executionId"}`, then `{"kind": "output", "seq", "stream", "text"}` as the code prints
        (`{"kind": "gap", ...}` where output was lost), then `{"kind": "outcome", "outcome"}`, or `{"kind": "error",
        "error": {"code", "message", "executionId", "state"}}`; a refusal before the code is queued is an HTTP
        error as without `stream`. A caller's `Mcpexec-Execution-Id` names the execution: sent again with the same
        code, it is the same execution (never run twice)."""
        token = None if credentials is None else credentials.credentials
        if stream:
            chosen, lines = await sessions.stream(token, namespace, name, request, execution_id)
            return StreamingResponse(lines, media_type=NDJSON, headers=_headers(chosen))
        result = await sessions.execute(token, namespace, name, request, execution_id)
        return JSONResponse(result.model_dump(by_alias=True), headers=_headers(result.execution_id))

    @app.get(
        EXECUTION_PATH,
        responses={**_EXECUTION_RESPONSES, 200: {"model": ExecutionStatus}},
        response_model=ExecutionStatus,
        response_model_by_alias=True,
    )
    async def execution(
        namespace: str,
        name: str,
        execution_id: str,
        credentials: Credentials,
        stream: Annotated[bool, Query(description="the rest of its stream as JSON lines")] = False,
        after: Annotated[int, Query(ge=0, le=MAX_CHUNKS, description="with stream: past this chunk (`seq`)")] = 0,
    ) -> Response:
        """What became of one of the session's executions (authorized as `execute`, from any replica): 200 with its
        outcome once `finished`, or its end (`not_taken`, `interrupted`); 202 while `waiting` or `running`; 404
        for an id that is not this session's (or whose record is gone: kept 300 s after it ends). With
        `stream=true`: the rest of its stream as `execute?stream=true` gives it, past chunk `after`, last its
        outcome (always)."""
        token = None if credentials is None else credentials.credentials
        if stream:
            lines = await sessions.follow(token, namespace, name, execution_id, after)
            return StreamingResponse(lines, media_type=NDJSON, headers=_headers(execution_id))
        status = await sessions.status(token, namespace, name, execution_id)
        return _status(status, 202 if status.state in ("waiting", "running") else 200, _headers(execution_id))

    @app.get(APPROVALS_PATH, responses=ERROR_RESPONSES)
    async def pending(
        kind: Literal["agenttasks", "agentsessions"], namespace: str, name: str, credentials: Credentials
    ) -> PendingAnswer:
        """The calls of an AgentTask or AgentSession held for a person's approval, their arguments tokenized (as
        the caller: `get` on the resource)."""
        token = None if credentials is None else credentials.credentials
        return await approvals.pending(token, kind, namespace, name)

    @app.post(f"{APPROVALS_PATH}/{{digest}}", responses=ERROR_RESPONSES)
    async def decide(
        kind: Literal["agenttasks", "agentsessions"],
        namespace: str,
        name: str,
        digest: Annotated[str, Path(pattern=DIGEST_PATTERN)],
        decision: Decision,
        credentials: Credentials,
    ) -> DecisionAnswer:
        """Approve or deny one held call, named by its digest (as the caller: `create` on `<kind>/approve` for
        that name): approved, it runs once; denied, never. 404: no such held call of that resource; 409
        `already_decided`: it was decided (or expired) before."""
        token = None if credentials is None else credentials.credentials
        return await approvals.decide(token, kind, namespace, name, digest, decision)

    return app


class SessionsServer:
    """The execute API, the approval API and the MCP front door as one ASGI app (the front door's lifespan runs the
    SDK's MCP-session manager and the registry's reaper)."""

    def __init__(self, sessions: ClusterSessions) -> None:
        self.front_door = ClusterFrontDoor(sessions)
        approvals = ClusterApprovals(sessions.core.approvals, sessions.directory, sessions.users)
        self._api = create_sessions_app(sessions, approvals)
        self._mcp = self.front_door.app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or str(scope.get("path", "")).startswith(PREFIX):
            await self._mcp(scope, receive, send)
        else:
            await self._api(scope, receive, send)
