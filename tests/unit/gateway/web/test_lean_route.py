"""LeanRoute refuses, when the route is added, an endpoint whose parameters it cannot serve (the route it serves,
against the real gateway: tests/integration/gateway/test_lean_route.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI

from gateway.tools.calls import CallRequest, CallResult
from gateway.web.auth import Caller
from gateway.web.lean_route import LeanRoute


def test_an_endpoint_it_cannot_serve_fails_when_added() -> None:
    async def with_a_query(ctx: Caller, server: str, request: CallRequest, limit: int = 5) -> CallResult:
        raise AssertionError("never called")

    async def without_a_body(ctx: Caller, server: str) -> CallResult:
        raise AssertionError("never called")

    for endpoint in (with_a_query, without_a_body):
        app = FastAPI()
        kwargs: dict[str, Any] = {"methods": ["POST"], "route_class_override": LeanRoute}
        with pytest.raises(TypeError, match=re.escape("LeanRoute cannot serve /x/{server}")):
            app.router.add_api_route("/x/{server}", endpoint, **kwargs)
