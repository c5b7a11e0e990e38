"""Every refusal of a gateway app as the contract's error body (`{"error": {code, message}}`), counted by code, and
how the OpenAPI document lists them."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.errors import ErrorBody, ErrorResponse, GatewayError
from gateway.telemetry.metrics import GatewayMetrics

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (400, 401, 403, 404, 409, 413, 422, 429, 502, 503, 504)
}
# The codes of the errors Starlette raises itself (a body that is not JSON, or not UTF-8; no route; body over the
# limit); any other is `http_error`.
_HTTP_ERROR_CODES = {400: "invalid_body", 404: "not_found", 413: "request_too_large"}


def _error(status: int, code: str, message: str, retry_after: int | None = None) -> JSONResponse:
    body = ErrorResponse(error=ErrorBody(code=code, message=message))
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def install_error_handlers(app: FastAPI, metrics: GatewayMetrics) -> None:
    """Every refusal as the contract's error body, counted by code in `metrics`."""

    @app.exception_handler(GatewayError)
    async def _gateway_error(_request: Request, exc: GatewayError) -> JSONResponse:
        metrics.errors.labels(exc.code).inc()
        return _error(exc.status, exc.code, exc.message, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.errors.labels("invalid_request").inc()
        where = "; ".join(".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in exc.errors()[:5])
        return _error(422, "invalid_request", where)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_ERROR_CODES.get(exc.status_code, "http_error")
        metrics.errors.labels(code).inc()
        return _error(exc.status_code, code, str(exc.detail))
