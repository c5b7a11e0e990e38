"""Tools as a task sees them: the tool call, the hot path, served by LeanRoute; `/v1/servers`, `/v1/tools` (search,
one tool, its wrappers)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from gateway.core import GatewayCore
from gateway.tools import wrapper_source
from gateway.tools.calls import CallRequest, CallResult
from gateway.tools.catalog import Detail, ServersAnswer, ToolFull, ToolsAnswer
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES
from gateway.web.lean_route import LeanRoute


class WrapperModule(BaseModel):
    server: str
    module: str


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    async def call_tool(ctx: Caller, server: str, tool: str, request: CallRequest) -> CallResult:
        return await core.caller.call(ctx, server, tool, request)

    # The hot path: served by LeanRoute, documented by FastAPI like the others. First of the area's routes, as a
    # request is matched against the app's routes in order (about 2.5 us each); no other route here matches its path.
    routes.add_api_route(
        "/v1/tools/{server}/{tool}/call",
        call_tool,
        methods=["POST"],
        responses=ERROR_RESPONSES,
        response_model_exclude_none=True,
        route_class_override=LeanRoute,
    )

    @routes.get("/v1/servers", responses=ERROR_RESPONSES)
    async def list_servers(ctx: Caller) -> ServersAnswer:
        return await core.catalog.servers(ctx)

    @routes.get("/v1/tools", responses=ERROR_RESPONSES, response_model_exclude_none=True, response_model_by_alias=True)
    async def search_tools(
        ctx: Caller,
        query: Annotated[str, Query(max_length=500)] = "",
        detail: Detail = "name",
        server: str | None = None,
    ) -> ToolsAnswer:
        return await core.catalog.search(ctx, query, detail, server)

    @routes.get("/v1/tools/{server}/{tool}", responses=ERROR_RESPONSES, response_model_exclude_none=True)
    async def get_tool(ctx: Caller, server: str, tool: str) -> ToolFull:
        return await core.catalog.tool_details(ctx, server, tool)

    @routes.get("/v1/servers/{server}/wrappers", responses=ERROR_RESPONSES)
    async def get_wrappers(ctx: Caller, server: str) -> WrapperModule:
        tools = await core.catalog.allowed_tools(ctx, server)
        return WrapperModule(server=server, module=wrapper_source.wrapper_module(server, tools))

    return routes
