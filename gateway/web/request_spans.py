"""A server span per HTTP request (added only when tracing is on): a child of the caller's `traceparent` header
when it sends one (a sandbox's runtime continues its task's trace), so the gateway's spans join the caller's trace.
The span records the method, the path (names of tools, executions and calls; never a query or a body) and the
status. An idle pool sandbox's poll for its task, which has no trace yet, makes none (one every 20 s per sandbox)."""

from __future__ import annotations

from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpexec import tracing
from runtime.contract import ASSIGNMENT_PATH, TRACEPARENT_HEADER

_HEADER = TRACEPARENT_HEADER.encode()


class RequestSpans:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        traceparent = next((value.decode("latin-1") for name, value in scope["headers"] if name == _HEADER), None)
        method, path = scope["method"], scope["path"]
        if traceparent is None and path == ASSIGNMENT_PATH:
            await self.app(scope, receive, send)
            return
        attributes = {"http.request.method": method, "url.path": path}
        with tracing.span(f"{method} {path}", attributes, parent=traceparent, kind=SpanKind.SERVER) as span:

            async def recorded(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            await self.app(scope, receive, recorded)
