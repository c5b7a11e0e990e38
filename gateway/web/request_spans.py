"""A server span per HTTP request (added only when tracing is on): a child of the caller's trace, so the gateway's
spans join it. Which trace that is, `parent_of` decides from the request and its `traceparent` header: the sandbox
API's (gateway/web/auth.py `sandbox_parent`) keeps a header only when it names the caller's own task's trace, since
a hostile sandbox could name any; the people's API takes a person's header as sent (their agent framework's trace).
The span records the method, the path (names of tools, executions and calls; never a query or a body) and the
status. A pool sandbox's poll for its task, which has no trace yet, makes none (one every 20 s per idle sandbox)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpexec import tracing
from runtime.contract import ASSIGNMENT_PATH, TRACEPARENT_HEADER

_HEADER = TRACEPARENT_HEADER.encode()

# The traceparent a request's span continues, from the request (its ASGI scope) and its header (None: not sent).
ParentOf = Callable[[Scope, str | None], Awaitable[str | None]]


async def header_parent(_scope: Scope, traceparent: str | None) -> str | None:
    return traceparent


class RequestSpans:
    def __init__(self, app: ASGIApp, parent_of: ParentOf = header_parent) -> None:
        self.app = app
        self.parent_of = parent_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.enabled() or scope["path"] == ASSIGNMENT_PATH:
            await self.app(scope, receive, send)
            return
        header = next((value.decode("latin-1") for name, value in scope["headers"] if name == _HEADER), None)
        parent = await self.parent_of(scope, header)
        method, path = scope["method"], scope["path"]
        attributes = {"http.request.method": method, "url.path": path}
        with tracing.span(f"{method} {path}", attributes, parent=parent, kind=SpanKind.SERVER) as span:

            async def recorded(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            await self.app(scope, receive, recorded)
