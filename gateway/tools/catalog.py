"""Progressive disclosure: tool listings at three detail levels, keyword search, and their token cost.

The catalog connection lists each server's tools once per (re)connect; the task's policy filters every answer.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from functools import cache
from typing import Any, Literal

import bpe_openai
import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field

from gateway.context import TaskContext
from gateway.errors import Forbidden, NotFound, ServerUnavailable
from gateway.tools import policy, wrapper_source
from gateway.upstreams.pool import UpstreamPool
from mcpexec.api.mcpserver import MCPServerSpec

log = logging.getLogger("mcpexec.gateway.catalog")

# "signature": one call signature per tool (gateway/tools/wrapper_source.py: signature), enough to call it.
Detail = Literal["name", "description", "signature", "full"]
ServerKey = Callable[[TaskContext, str], str]


def local_server_key(_ctx: TaskContext, server: str) -> str:
    """Local mode: one set of servers for every task."""
    return server


def namespaced_server_key(ctx: TaskContext, server: str) -> str:
    """Cluster mode: a task sees the MCPServer resources of its own namespace."""
    return f"{ctx.task.metadata.namespace}/{server}"


class ToolDescription(BaseModel):
    name: str
    description: str


class ToolFull(BaseModel):
    """One tool as `GET /v1/tools/{server}/{tool}` answers; `name` is the bare tool name there."""

    model_config = ConfigDict(populate_by_name=True)

    server: str
    name: str
    description: str
    input_schema: dict[str, Any] = Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")


class ToolsAnswer(BaseModel):
    """`GET /v1/tools`: `tools` is a list of `server/tool` names, call signatures (text), name+description objects,
    or full tools."""

    detail: Detail
    tools: list[str] | list[ToolDescription] | list[ToolFull]
    tokens: int


class ServerSummary(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str
    description: str
    tool_count: int = Field(alias="toolCount")
    connected: bool


class ServersAnswer(BaseModel):
    servers: list[ServerSummary]


@cache
def _encoding() -> bpe_openai.Encoding:
    return bpe_openai.get_encoding("o200k_base")


def count_text_tokens(text: str) -> int:
    """o200k_base tokens of `text` as it is."""
    return len(_encoding().encode(text))


def count_tokens(value: Any) -> int:
    """o200k_base tokens of the compact JSON a model would be shown."""
    return count_text_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _full(server: str, tool: types.Tool) -> ToolFull:
    return ToolFull(
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
    )


def _score(terms: list[str], server: str, tool: types.Tool) -> int:
    """Name hits weigh more than description hits; every term must hit somewhere."""
    name = f"{server}/{tool.name}".lower()
    description = (tool.description or "").lower()
    score = 0
    for term in terms:
        hit = 3 * (term in name) + (term in description)
        if not hit:
            return 0
        score += hit
    return score


class Catalog:
    """Tool listings per server, cached per connection generation."""

    def __init__(self, upstreams: UpstreamPool, server_key: ServerKey = local_server_key, wait: float = 10.0) -> None:
        self._upstreams = upstreams
        self.server_key = server_key
        self._wait = wait
        self._cache: dict[str, tuple[int, list[types.Tool]]] = {}

    async def tools_of(self, key: str) -> list[types.Tool]:
        """Every tool of the server configured under `key` (no policy applied)."""
        connection = self._upstreams.catalog(key)
        cached = self._cache.get(key)
        if cached is not None and (cached[0] == connection.generation or not connection.connected):
            return cached[1]
        return await self.probe(key)

    async def probe(self, key: str) -> list[types.Tool]:
        """List the server's tools now (a real request, not the cache), refreshing the cache: for status."""
        connection = self._upstreams.catalog(key)
        tools = await connection.list_tools(wait=0 if connection.failing else self._wait)
        self._cache[key] = (connection.generation, tools)
        return tools

    def spec(self, ctx: TaskContext, server: str) -> MCPServerSpec | None:
        """The server as this task may see it; None if it is not in its policy or not configured."""
        if not policy.server_visible(ctx, server):
            return None
        return self._upstreams.servers().get(self.server_key(ctx, server))

    def _visible_servers(self, ctx: TaskContext) -> list[str]:
        return [s for s in ctx.task.spec.mcp_servers if self.spec(ctx, s) is not None]

    async def _allowed_tools(self, ctx: TaskContext, server: str) -> list[types.Tool]:
        spec = self.spec(ctx, server)
        if spec is None:
            return []
        tools = await self.tools_of(self.server_key(ctx, server))
        return [t for t in tools if policy.tool_allowed(ctx, server, t.name, spec)]

    async def servers(self, ctx: TaskContext) -> ServersAnswer:
        summaries = []
        for server in self._visible_servers(ctx):
            spec = self.spec(ctx, server)
            assert spec is not None
            try:
                count = len(await self._allowed_tools(ctx, server))
            except ServerUnavailable:
                count = 0
            summaries.append(
                ServerSummary(
                    name=server,
                    description=spec.description,
                    tool_count=count,
                    connected=self._upstreams.catalog(self.server_key(ctx, server)).connected,
                )
            )
        return ServersAnswer(servers=summaries)

    async def search(self, ctx: TaskContext, query: str, detail: Detail, server: str | None) -> ToolsAnswer:
        if server is not None and self.spec(ctx, server) is None:
            raise NotFound(f"no MCP server {server!r} for this task")
        terms = [t for t in re.split(r"[\s/_\-.]+", query.lower()) if t]
        hits: list[tuple[int, str, types.Tool]] = []
        for name in [server] if server else self._visible_servers(ctx):
            try:
                allowed = await self._allowed_tools(ctx, name)
            except ServerUnavailable:
                log.warning("server skipped in search: not connected", extra={"server": name})
                continue
            for tool in allowed:
                score = _score(terms, name, tool) if terms else 1
                if score:
                    hits.append((score, name, tool))
        hits.sort(key=lambda hit: (-hit[0], hit[1], hit[2].name))
        tools: list[str] | list[ToolDescription] | list[ToolFull]
        if detail == "name":
            tools = [f"{s}/{t.name}" for _score_, s, t in hits]
        elif detail == "signature":
            tools = [wrapper_source.signature(s, t) for _sc, s, t in hits]
        elif detail == "description":
            tools = [ToolDescription(name=f"{s}/{t.name}", description=t.description or "") for _sc, s, t in hits]
        else:
            tools = [_full(s, t) for _sc, s, t in hits]
        dumped = [t if isinstance(t, str) else t.model_dump(by_alias=True, exclude_none=True) for t in tools]
        return ToolsAnswer(detail=detail, tools=tools, tokens=count_tokens(dumped))

    async def tool(self, ctx: TaskContext, server: str, name: str) -> types.Tool:
        """The tool if this task may use it: 404 for servers it cannot see or tools that do not exist."""
        spec = self.spec(ctx, server)
        if spec is None:
            raise NotFound(f"no MCP server {server!r} for this task")
        tool = next((t for t in await self.tools_of(self.server_key(ctx, server)) if t.name == name), None)
        if tool is None:
            raise NotFound(f"no tool {server}/{name}")
        if not policy.tool_allowed(ctx, server, name, spec):
            raise Forbidden(
                f"{server}/{name} is not allowed by this task's policy, its server's owner or its pool's template"
            )
        return tool

    async def tool_details(self, ctx: TaskContext, server: str, name: str) -> ToolFull:
        return _full(server, await self.tool(ctx, server, name))

    async def allowed_tools(self, ctx: TaskContext, server: str) -> list[types.Tool]:
        if self.spec(ctx, server) is None:
            raise NotFound(f"no MCP server {server!r} for this task")
        return await self._allowed_tools(ctx, server)
