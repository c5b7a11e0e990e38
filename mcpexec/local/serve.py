"""`mcpexec serve`: code execution with MCP for any MCP client, on this machine.

An MCP server (gateway/web/mcp_front_door.py: `execute_code`, `search_tools`) whose sessions each get a local sandbox
of their own (sessions.py), on stdio or on streamable HTTP on loopback.

- stdio: the process is one MCP session: its sandbox is claimed when the server starts and ends at stdin's EOF.
- HTTP: one sandbox per MCP session (its `Mcp-Session-Id`), claimed on its first tool call, ended when the client
  deletes the session, when it has been idle for IDLE_SECONDS, or when the server stops. Only the handshake era of the
  protocol has sessions: a stateless (2026-07-28) request is refused, so a client that tries that era first falls
  back to the `initialize` handshake.
"""

from __future__ import annotations

import asyncio
import logging
import time

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.context import TaskContext
from gateway.executions.models import MAX_TIMEOUT_SECONDS
from gateway.web.mcp_front_door import front_door
from gateway.web.serving import BackgroundServer
from mcpexec.local.sessions import LocalSession, LocalSessions

log = logging.getLogger("mcpexec.serve")

SESSION_HEADER = "mcp-session-id"
PROTOCOL_HEADER = "mcp-protocol-version"
# An HTTP session no request has used for this long is ended (the SDK forgets it at the same age): longer than the
# longest execution, which is one request.
IDLE_SECONDS = MAX_TIMEOUT_SECONDS + 600
REAP_EVERY_SECONDS = 30.0
INVALID_REQUEST = -32600


async def serve_stdio(sessions: LocalSessions) -> None:
    """Until stdin's EOF; the one session's sandbox starts with the server, while the client initializes."""
    session = await sessions.claim()

    async def session_of(_ctx: Context) -> TaskContext:
        return session.context

    try:
        await front_door(sessions.core, session_of).run_stdio_async()
    finally:
        await sessions.end(session, "the MCP client closed stdio")


class HttpSessions:
    """The local session of each MCP session over HTTP, by its `Mcp-Session-Id`."""

    def __init__(self, sessions: LocalSessions) -> None:
        self._sessions = sessions
        self._claims: dict[str, asyncio.Task[LocalSession]] = {}
        self._used: dict[str, float] = {}

    async def session_of(self, ctx: Context) -> TaskContext:
        request = ctx.request_context.request
        key = request.headers.get(SESSION_HEADER) if isinstance(request, Request) else None
        if not key:
            raise ToolError("no MCP session: connect with the initialize handshake, which gives one")
        self._used[key] = time.monotonic()
        claim = self._claims.get(key)
        if claim is None:  # concurrent first calls of one session share its claim
            claim = self._claims[key] = asyncio.ensure_future(self._sessions.claim())
        return (await claim).context

    async def end(self, key: str, reason: str) -> None:
        claim = self._claims.pop(key, None)
        self._used.pop(key, None)
        if claim is not None:
            await self._sessions.end(await claim, reason)

    async def reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_SECONDS)
            idle = [key for key, used in self._used.items() if time.monotonic() - used > IDLE_SECONDS]
            for key in idle:
                await self.end(key, f"the MCP session was idle for {IDLE_SECONDS:g} s")

    def app(self, inner: ASGIApp) -> ASGIApp:
        """`inner` (the SDK's streamable HTTP app) behind two checks: a stateless request is refused, a deleted
        session's sandbox is ended."""

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
            version = headers.get(PROTOCOL_HEADER)
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                refusal = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": INVALID_REQUEST,
                        "message": "this server keeps a sandbox per MCP session: use the initialize handshake "
                        f"(protocol {HANDSHAKE_PROTOCOL_VERSIONS[-1]}), not stateless {version} requests",
                    },
                }
                await JSONResponse(refusal, status_code=400)(scope, receive, send)
                return
            await inner(scope, receive, send)
            key = headers.get(SESSION_HEADER)
            if scope["method"] == "DELETE" and key:
                await self.end(key, "the MCP client deleted the session")

        return app


async def serve_http(sessions: LocalSessions, port: int) -> None:
    """On 127.0.0.1:`port` until cancelled (the CLI cancels on SIGINT and SIGTERM)."""
    http = HttpSessions(sessions)
    inner = front_door(sessions.core, http.session_of).streamable_http_app(session_idle_timeout=IDLE_SECONDS)
    # lifespan "on": the SDK app's own (its session manager) runs, passed through by `http.app`.
    server = BackgroundServer(http.app(inner), port=port, lifespan="on")
    await server.start()
    log.info("serving MCP over streamable HTTP", extra={"url": f"http://127.0.0.1:{server.port}/mcp"})
    try:
        await http.reap_forever()
    finally:
        await server.stop()
