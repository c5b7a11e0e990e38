"""The FastAPI app: the v1 HTTP API of docs/contracts.md over a `GatewayCore`: what sandboxes reach, and nothing
else (health, metrics and the API's documentation are on the ops port: gateway/web/ops.py)."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI
from starlette.middleware import Middleware

from gateway.core import GatewayCore
from gateway.web.auth import sandbox_parent
from gateway.web.body_limit import BodyLimit
from gateway.web.error_responses import install_error_handlers
from gateway.web.http_responses import HttpResponses
from gateway.web.request_spans import ParentOf, RequestSpans, header_parent
from gateway.web.routes import approvals, assignment, llm, session_runtime, skills, task_result, tools, traces
from gateway.web.vault_marks import VaultMarks
from mcpexec import tracing


def gateway_app(
    core: GatewayCore,
    title: str,
    description: str,
    middleware: Sequence[Middleware] = (),
    parent_of: ParentOf = header_parent,
) -> FastAPI:
    """A FastAPI app of the gateway's: its request limit, its error bodies, its answers counted, no native telemetry,
    no docs of its own. `middleware`: the app's own, outermost first, between the count and the request limit;
    `parent_of`: the trace a request's span joins (gateway/web/request_spans.py)."""
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
    app.user_middleware[:0] = middleware
    if tracing.enabled():  # off: not even a check per request
        app.add_middleware(RequestSpans, parent_of=parent_of)
    app.add_middleware(HttpResponses, counter=core.metrics.http_responses)
    install_error_handlers(app, core.metrics)
    return app


def create_app(core: GatewayCore) -> FastAPI:
    """The API's areas, in the order of the OpenAPI document: assignment, session runtime, tools, approvals, skills,
    LLM, the task's result, its spans."""
    vault_marks = Middleware(VaultMarks, count_error=lambda code: core.metrics.errors.labels(code).inc())
    app = gateway_app(
        core,
        "mcpexec gateway",
        "The only door from an mcpexec sandbox to MCP tools and models.",
        [vault_marks],
        parent_of=sandbox_parent,
    )
    for area in (assignment, session_runtime, tools, approvals, skills, llm, task_result, traces):
        # The routes themselves, not `include_router`: FastAPI 0.165 serves an included router's routes through a
        # matching layer of its own, about 25 us a request, a tenth of what LeanRoute saves the tool call.
        app.router.routes.extend(area.router(core).routes)
    return app
