"""The answers' count by route template and status (gateway/web/http_responses.py), around a real Starlette app: an
exception nothing answered counts as the server's bare 500, a path no route matched under one label."""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client import CollectorRegistry, Counter
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway.web.http_responses import NO_ROUTE, HttpResponses


async def _ok(request: Request) -> PlainTextResponse:
    return PlainTextResponse(request.path_params["name"])


async def _boom(_request: Request) -> PlainTextResponse:
    raise RuntimeError("not answered")


def test_answers_count_by_route_template_and_status() -> None:
    registry = CollectorRegistry()
    counter = Counter("answers", "", ["route", "code"], registry=registry)
    routes = [Route("/items/{name}", _ok), Route("/boom/{name}", _boom)]
    app = Starlette(routes=routes, middleware=[Middleware(HttpResponses, counter=counter)])

    async def send() -> list[int]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            paths = ["/items/a", "/items/b", "/boom/x", "/nowhere/1", "/nowhere/2"]
            return [(await client.get(path)).status_code for path in paths]

    assert asyncio.run(send()) == [200, 200, 500, 404, 404]
    samples = {
        (s.labels["route"], s.labels["code"]): s.value
        for family in registry.collect()
        for s in family.samples
        if s.name == "answers_total"
    }
    assert samples == {("/items/{name}", "200"): 2, ("/boom/{name}", "500"): 1, (NO_ROUTE, "404"): 2}
