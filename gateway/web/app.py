"""The FastAPI app: the v1 HTTP API of docs/contracts.md over a `GatewayCore`: what sandboxes reach, and nothing
else (health, metrics and the API's documentation are on the ops port: gateway/web/ops.py)."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import ErrorBody, ErrorResponse, GatewayError
from gateway.executions.models import Execution, ExecutionOutcome, OutputPost
from gateway.llm import stream
from gateway.llm.proxy import ChatCompletionRequest, ChatCompletionResponse
from gateway.tools import wrapper_source
from gateway.tools.calls import CallRequest, CallResult
from gateway.tools.catalog import Detail, ServersAnswer, ToolFull, ToolsAnswer
from gateway.tools.skill_seals import Seal, SealedSkill, SkillCode
from gateway.web.assignment import DEFAULT_WAIT_SECONDS, MAX_WAIT_SECONDS, Assignment, assignment
from gateway.web.auth import authenticate, authorize, charge
from gateway.web.body_limit import BodyLimit
from gateway.web.lean_route import LeanRoute
from gateway.web.vault_marks import VaultMarks

T = TypeVar("T")
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (400, 401, 403, 404, 409, 413, 422, 429, 502, 503, 504)
}
# The codes of the errors Starlette raises itself (a body that is not JSON, or not UTF-8; no route; body over the
# limit); any other is `http_error`.
_HTTP_ERROR_CODES = {400: "invalid_body", 404: "not_found", 413: "request_too_large"}
_EVENT_STREAM_TYPE = "text/event-stream"
# The 200 of a `stream: true` request, next to the JSON answer FastAPI documents from the response model.
_EVENT_STREAM: dict[str, Any] = {
    "description": "A chat completion; with `stream: true`, `data: {chat.completion.chunk}` events, then "
    "`data: [DONE]`",
    "content": {_EVENT_STREAM_TYPE: {"schema": {"type": "string"}}},
}
# How long past a session runtime's poll its broker session is kept for the next one (polls follow each other at once).
SESSION_POLL_SLACK_SECONDS = 60.0
_bearer = HTTPBearer(
    auto_error=False, description="Per-task token: a gateway JWT locally, a projected SA token in a cluster"
)


class WrapperModule(BaseModel):
    server: str
    module: str


def _error(status: int, code: str, message: str, retry_after: int | None = None) -> JSONResponse:
    body = ErrorResponse(error=ErrorBody(code=code, message=message))
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


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


def install_error_handlers(app: FastAPI, core: GatewayCore) -> None:
    """Every refusal as the contract's error body (`{"error": {code, message}}`), counted by code."""

    @app.exception_handler(GatewayError)
    async def _gateway_error(_request: Request, exc: GatewayError) -> JSONResponse:
        core.metrics.errors.labels(exc.code).inc()
        return _error(exc.status, exc.code, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        core.metrics.errors.labels("invalid_request").inc()
        where = "; ".join(".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in exc.errors()[:5])
        return _error(422, "invalid_request", where)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_ERROR_CODES.get(exc.status_code, "http_error")
        core.metrics.errors.labels(code).inc()
        return _error(exc.status_code, code, str(exc.detail))


def gateway_app(core: GatewayCore, title: str, description: str) -> FastAPI:
    """A FastAPI app of the gateway's: its request limit, its error bodies, no native telemetry, no docs of its own."""
    app = FastAPI(
        title=title,
        version="1",
        description=description,
        # FastAPI's native OpenTelemetry is off: it would record failed requests with their input values, and the
        # gateway's observability (audit log, Prometheus) never carries payloads. It also costs a check per request.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
        # The sandbox API's are served on the ops port, which task pods cannot reach (gateway/web/ops.py).
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.core = core
    app.add_middleware(BodyLimit, max_bytes=core.limits.max_request_bytes)
    install_error_handlers(app, core)
    return app


def create_app(core: GatewayCore) -> FastAPI:
    app = gateway_app(core, "mcpexec gateway", "The only door from an mcpexec sandbox to MCP tools and models.")
    app.add_middleware(VaultMarks, count_error=lambda code: core.metrics.errors.labels(code).inc())

    @app.get(
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

    @app.get(
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

    @app.post("/v1/session/executions/{execution_id}", responses=ERROR_RESPONSES, status_code=204)
    async def complete_execution(ctx: SessionCaller, execution_id: str, outcome: ExecutionOutcome) -> None:
        """The runtime's outcome of an execution it was given (the gateway bounds each stream again); 404 when its
        caller gave up on it."""
        await _charged_if_refused(core, ctx, core.executions.complete(ctx.scope, execution_id, outcome))

    @app.post("/v1/session/executions/{execution_id}/output", responses=ERROR_RESPONSES, status_code=204)
    async def execution_output(ctx: SessionCaller, execution_id: str, post: OutputPost) -> None:
        """What a streaming execution printed since the runtime's last post, in order; 404 when that execution is not
        running in this session (its caller gave up, or it finished). Past about a million characters in all, the
        rest is dropped (its outcome still has the head and tail)."""
        await _charged_if_refused(core, ctx, core.executions.output(ctx.scope, execution_id, post.chunks))

    @app.get("/v1/servers", responses=ERROR_RESPONSES)
    async def list_servers(ctx: Caller) -> ServersAnswer:
        return await core.catalog.servers(ctx)

    @app.get("/v1/tools", responses=ERROR_RESPONSES, response_model_exclude_none=True, response_model_by_alias=True)
    async def search_tools(
        ctx: Caller,
        query: Annotated[str, Query(max_length=500)] = "",
        detail: Detail = "name",
        server: str | None = None,
    ) -> ToolsAnswer:
        return await core.catalog.search(ctx, query, detail, server)

    @app.get("/v1/tools/{server}/{tool}", responses=ERROR_RESPONSES, response_model_exclude_none=True)
    async def get_tool(ctx: Caller, server: str, tool: str) -> ToolFull:
        return await core.catalog.tool_details(ctx, server, tool)

    @app.get("/v1/servers/{server}/wrappers", responses=ERROR_RESPONSES)
    async def get_wrappers(ctx: Caller, server: str) -> WrapperModule:
        tools = await core.catalog.allowed_tools(ctx, server)
        return WrapperModule(server=server, module=wrapper_source.wrapper_module(server, tools))

    async def call_tool(ctx: Caller, server: str, tool: str, request: CallRequest) -> CallResult:
        return await core.caller.call(ctx, server, tool, request)

    # The hot path: served by LeanRoute, documented by FastAPI like the others.
    app.router.add_api_route(
        "/v1/tools/{server}/{tool}/call",
        call_tool,
        methods=["POST"],
        responses=ERROR_RESPONSES,
        response_model_exclude_none=True,
        route_class_override=LeanRoute,
    )

    @app.post("/v1/skills/seal", responses=ERROR_RESPONSES)
    async def seal_skill(ctx: Caller, skill: SkillCode) -> Seal:
        """The seal a skill is saved with: the tools this task may call now, signed with the code (docs/security.md)."""
        return await core.skill_seals.seal(ctx, skill)

    @app.post("/v1/skills/check", responses=ERROR_RESPONSES, status_code=204)
    async def check_skill(ctx: Caller, skill: SealedSkill) -> None:
        """204 if this task may run the skill's code: its seal is intact and its writer could call every tool this
        task can; 403 `skill_refused` otherwise."""
        await core.skill_seals.check(ctx, skill)

    @app.post(
        "/v1/llm/chat/completions",
        responses={**ERROR_RESPONSES, 200: _EVENT_STREAM},
        response_model=ChatCompletionResponse,
        response_model_exclude_none=True,
    )
    async def chat_completions(
        ctx: Caller, request: ChatCompletionRequest
    ) -> ChatCompletionResponse | StreamingResponse:
        answer = await core.llm.complete(ctx, request)
        if not request.stream:
            return answer
        include_usage = request.stream_options is not None and request.stream_options.include_usage
        return StreamingResponse(stream.replay(stream.events(answer, include_usage)), media_type=_EVENT_STREAM_TYPE)

    return app


async def _charged_if_refused(core: GatewayCore, ctx: TaskContext, step: Awaitable[T]) -> T:
    """A session runtime's request: free if it moves an execution along, charged to the task's request budget
    before its refusal otherwise (a sandbox polling with no session, or posting for ids it was never given, gets
    rate limited as any other flood)."""
    try:
        return await step
    except GatewayError:
        await charge(core, ctx.scope)
        raise
