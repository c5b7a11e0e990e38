"""`mcpexec serve`: code execution with MCP for any MCP client, on this machine.

An MCP server (gateway/web/mcp_front_door.py: `execute_code`, `search_tools`) whose sessions each get a local sandbox
of their own (sessions.py), on stdio or on streamable HTTP on loopback.

- stdio: the process is one MCP session: its sandbox is claimed when the server starts and ends at stdin's EOF.
- A call held for approval while the client's code runs is asked of the client's user through elicitation, unless
  `--approve`/`--approve-all` approve it (mcpexec/local/approvals.py).
- HTTP: one sandbox per MCP session (its `Mcp-Session-Id`), claimed on its first tool call, ended when the client
  deletes the MCP session, when it has been idle for IDLE_SECONDS, or when the server stops; a stateless (2026-07-28)
  request is refused, as on every front door (gateway/web/mcp_session_registry.py).
"""

from __future__ import annotations

import asyncio
import logging

from mcp.server.mcpserver import Context

from gateway.context import TaskContext
from gateway.web.mcp_front_door import front_door
from gateway.web.mcp_session_registry import IDLE_SECONDS, McpSessionRegistry, mcp_session_request
from gateway.web.serving import BackgroundServer
from mcpexec.local.approvals import serve_asking
from mcpexec.local.sessions import LocalSession, LocalSessions

log = logging.getLogger("mcpexec.serve")


async def serve_stdio(sessions: LocalSessions, approved: tuple[str, ...] = ()) -> None:
    """Until stdin's EOF; the one session's sandbox starts with the server, while the client initializes."""
    session = await sessions.claim()

    async def session_of(_ctx: Context) -> TaskContext:
        return session.context

    try:
        await front_door(sessions.core, session_of, serve_asking(approved)).run_stdio_async()
    finally:
        await sessions.end(session, "the MCP client closed stdio")


async def serve_http(sessions: LocalSessions, port: int, approved: tuple[str, ...] = ()) -> None:
    """On 127.0.0.1:`port` until cancelled (the CLI cancels on SIGINT and SIGTERM)."""
    registry: McpSessionRegistry[LocalSession] = McpSessionRegistry(sessions.end)

    async def session_of(ctx: Context) -> TaskContext:
        _request, key = mcp_session_request(ctx)
        return (await registry.session(key, sessions.claim)).context

    inner = front_door(sessions.core, session_of, serve_asking(approved)).streamable_http_app(
        session_idle_timeout=IDLE_SECONDS
    )
    # lifespan "on": the SDK app's own (its MCP-session manager) runs, and with it the registry's reaper.
    server = BackgroundServer(registry.app(inner), port=port, lifespan="on")
    await server.start()
    log.info("serving MCP over streamable HTTP", extra={"url": f"http://127.0.0.1:{server.port}/mcp"})
    try:
        await asyncio.Event().wait()  # until cancelled
    finally:
        await server.stop()
