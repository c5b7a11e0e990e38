"""The ops port: liveness, readiness, Prometheus metrics and the v1 API's OpenAPI document and docs page.

Apart from the API so that a NetworkPolicy can give it to the probes and scrapers only: a task pod reaches the
API port, never this one (metrics name tools and count errors of every task; the docs are not the sandbox's).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from gateway.core import GatewayCore
from gateway.errors import ErrorResponse, GatewayError


class Health(BaseModel):
    status: str


def create_ops_app(core: GatewayCore, api: FastAPI) -> FastAPI:
    ops = FastAPI(title="mcpexec gateway ops", version="1", openapi_url=None, docs_url=None, redoc_url=None)

    @ops.exception_handler(GatewayError)
    async def _gateway_error(_request: Any, exc: GatewayError) -> JSONResponse:
        return JSONResponse(exc.response().model_dump(), status_code=exc.status)

    @ops.get("/healthz")
    async def healthz() -> Health:
        return Health(status="ok")

    @ops.get("/readyz", responses={503: {"model": ErrorResponse}})
    async def readyz() -> Health:
        await core.vault.ping()
        return Health(status="ready")

    @ops.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(core.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @ops.get("/openapi.json")
    async def openapi() -> JSONResponse:
        return JSONResponse(api.openapi())

    @ops.get("/docs", response_class=HTMLResponse)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="openapi.json", title="mcpexec gateway API")

    return ops
