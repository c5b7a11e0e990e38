"""Every answer of a gateway app counted by route and HTTP status (`mcpexec_gateway_http_responses_total`), what the
5xx alert reads: the error codes count only the refusals the gateway chose, not a bare 500 (an exception nothing
answered, answered by the server's own last resort).

Bounded: the route is the matched route's template (`/v1/tools/{server}/{tool}/call`), never the raw path, and one
label for every path no route matched; the status is one of the few the gateway answers. A pure ASGI middleware,
outermost, so the answers of the other middleware count too; each (route, status) series is looked up once and kept,
so a request costs a dict lookup and an increment.
"""

from __future__ import annotations

from prometheus_client import Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The route label of answers no route gave: a path no route matched, or a refusal before routing.
NO_ROUTE = "(none)"


class HttpResponses:
    def __init__(self, app: ASGIApp, counter: Counter) -> None:
        """`counter`: labelled (route, code)."""
        self.app = app
        self._counter = counter
        self._series: dict[tuple[str, int], Counter] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the server answers an exception that escapes before an answer started

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        except Exception:
            self._count(scope, status)
            raise
        self._count(scope, status)

    def _count(self, scope: Scope, status: int) -> None:
        route = scope.get("route")  # set by the router when a route matched (the template, not the path)
        key = (NO_ROUTE if route is None else route.path_format, status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = self._counter.labels(key[0], str(status))
        series.inc()
