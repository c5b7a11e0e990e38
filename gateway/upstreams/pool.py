"""Upstream MCP servers: one long-lived connection per (owner, server), each in its own task, reconnecting with
backoff.

An owner is a task scope (its calls never share a server process or HTTP connection with another task's) or
the gateway's own catalog, which only lists tools. A server that is down is retried in the background and
reported as not connected; it never blocks or breaks the other servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from gateway.errors import ResultTooLarge, ServerConnectionLost, ServerUnavailable, ToolTimeout, UpstreamError
from gateway.upstreams.http_limits import bound_json_answers, dropped_for_size
from gateway.upstreams.keepalive import reuse_connections
from gateway.upstreams.stdio import bounded_stdio
from gateway.upstreams.trace_context import send_trace_headers, trace_meta
from mcpexec import tracing
from mcpexec.api.mcpserver import MCPServerSpec

log = logging.getLogger("mcpexec.gateway.upstreams")

CATALOG_OWNER = "gateway-catalog"
_CONNECTION_LOST = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError)


def mcp_client(spec: MCPServerSpec, max_message_bytes: int, headers: dict[str, str]) -> Client:
    """The gateway's client for one server (not yet entered), every answer bounded by `max_message_bytes`;
    `headers` go with every request to an HTTP server."""
    if spec.transport == "stdio":
        assert spec.command
        params = StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=spec.env)
        return Client(bounded_stdio(params, max_message_bytes), mode="legacy", cache=None)
    assert spec.url
    http = create_mcp_http_client(headers=headers)
    bound_json_answers(http, max_message_bytes)
    reuse_connections(http)
    if tracing.enabled():
        send_trace_headers(http)
    # The SDK's default limit on one event is 1 MiB: larger results would fail over HTTP and not over stdio.
    transport = streamable_http_client(spec.url, http_client=http, max_sse_event_size=max_message_bytes)
    return Client(transport, mode="legacy", cache=None)


class MCPConnection:
    """One connection to an upstream MCP server, kept open by a background task; callers use it from any task."""

    def __init__(
        self,
        server: str,
        spec: MCPServerSpec,
        owner: str,
        max_message_bytes: int,
        headers: dict[str, str] | None = None,
        backoff: tuple[float, float] = (0.5, 30.0),
    ) -> None:
        self.server = server
        self._max_message_bytes = max_message_bytes
        self.spec = spec
        self.owner = owner
        self.generation = 0
        self.failing = False
        self._headers = {**spec.headers, **(headers or {})}
        self._backoff = backoff
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._broken = asyncio.Event()
        self._closing = False
        self._runner: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self._client is not None

    def start(self) -> None:
        self._runner = asyncio.create_task(self._run(), name=f"mcp:{self.owner}:{self.server}")

    async def _run(self) -> None:
        delay, ceiling = self._backoff
        while not self._closing:
            try:
                async with mcp_client(self.spec, self._max_message_bytes, self._headers) as client:
                    self._client = client
                    self.generation += 1
                    self.failing = False
                    self._ready.set()
                    delay = self._backoff[0]
                    log.info("mcp connected", extra={"server": self.server, "owner": self.owner})
                    await self._broken.wait()
            except Exception as exc:  # any failure to connect or stay connected means: retry later
                self.failing = True
                log.warning(
                    "mcp connection failed",
                    extra={"server": self.server, "owner": self.owner, "error": repr(exc), "retry_in": delay},
                )
            finally:
                self._client = None
                self._ready.clear()
                self._broken.clear()
            if not self._closing:
                await asyncio.sleep(delay)
                delay = min(delay * 2, ceiling)

    async def _connected(self, wait: float) -> Client:
        if self._client is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._ready.wait()
        if self._client is None:
            raise ServerUnavailable(f"MCP server {self.server!r} is not connected")
        return self._client

    def _drop(self, client: Client) -> None:
        """`client`'s connection is dead: hand it out no more (callers wait for the reconnect) and wake the runner.
        Only if it is still the current one: a late failure of an old connection never breaks its successor."""
        if self._client is client:
            self._client = None
            self._ready.clear()
            self._broken.set()

    def _listing_lost(self, client: Client) -> ServerUnavailable:
        self._drop(client)  # a listing has no effects: asking again is safe
        return ServerUnavailable(f"connection to MCP server {self.server!r} was lost while listing tools")

    def _call_lost(self, client: Client, tool: str) -> ServerConnectionLost:
        self._drop(client)
        return ServerConnectionLost(f"connection to MCP server {self.server!r} was lost during {tool}; it may have run")

    async def list_tools(self, wait: float) -> list[types.Tool]:
        client = await self._connected(wait)
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools
        except _CONNECTION_LOST:
            raise self._listing_lost(client) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise self._listing_lost(client) from None
            raise UpstreamError(f"{self.server}: tools/list failed: {exc.message}") from None

    async def call_tool(self, tool: str, arguments: dict[str, Any], wait: float) -> types.CallToolResult:
        client = await self._connected(wait)
        timeout = self.spec.call_timeout_seconds
        try:
            # One deadline over sending and answering (the SDK's own read timeout on top cost 0.07 ms a call).
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, arguments, meta=trace_meta())
        except TimeoutError:
            raise ToolTimeout(f"{self.server}/{tool} did not answer within {timeout:g}s") from None
        except _CONNECTION_LOST:
            raise self._call_lost(client, tool) from None
        except MCPError as exc:
            if dropped_for_size(exc):
                raise ResultTooLarge(
                    f"{self.server}/{tool} answered more than the gateway's limit of {self._max_message_bytes} "
                    "bytes; ask the tool for less (a range, a page, a filter)"
                ) from None
            if exc.code == types.CONNECTION_CLOSED:
                raise self._call_lost(client, tool) from None
            raise UpstreamError(f"{self.server}/{tool}: {exc.message}") from None

    async def close(self) -> None:
        self._closing = True
        self._broken.set()
        if self._runner is None:
            return
        done, _pending = await asyncio.wait({self._runner}, timeout=5)
        if not done:  # stuck connecting or sleeping in backoff
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner


class UpstreamPool:
    """All open upstream connections, keyed by (owner, server); `specs` says which servers exist right now."""

    def __init__(
        self,
        specs: Callable[[], dict[str, MCPServerSpec]],
        max_message_bytes: int,
        headers: Callable[[str], dict[str, str]] | None = None,
        connect_wait: float = 15.0,
    ) -> None:
        self._max_message_bytes = max_message_bytes
        self._specs = specs
        self._headers = headers or (lambda _server: {})
        self.connect_wait = connect_wait
        self._connections: dict[tuple[str, str], MCPConnection] = {}

    def servers(self) -> dict[str, MCPServerSpec]:
        return self._specs()

    def connection(self, owner: str, server: str) -> MCPConnection:
        """The owner's connection to `server`, opened on first use."""
        spec = self._specs().get(server)
        if spec is None:
            raise ServerUnavailable(f"MCP server {server!r} is not configured")
        key = (owner, server)
        existing = self._connections.get(key)
        if existing is not None and (existing.spec is spec or existing.spec == spec):  # `is`: no field by field
            return existing
        if existing is not None:
            asyncio.get_running_loop().create_task(existing.close())
        connection = MCPConnection(server, spec, owner, self._max_message_bytes, self._headers(server))
        connection.start()
        self._connections[key] = connection
        return connection

    def catalog(self, server: str) -> MCPConnection:
        return self.connection(CATALOG_OWNER, server)

    def start_catalog(self) -> None:
        """Connect the catalog to every configured server now, so discovery is ready before the first task."""
        for server in self._specs():
            self.catalog(server)

    async def release(self, owner: str) -> None:
        """Close every connection the owner holds (its task finished or expired)."""
        keys = [key for key in self._connections if key[0] == owner]
        await asyncio.gather(*(self._connections.pop(key).close() for key in keys))

    def owners(self) -> set[str]:
        return {owner for owner, _server in self._connections} - {CATALOG_OWNER}

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in connections))
