"""The gateway's door for people: the execute API and the MCP front door, on a port of its own.

Sandboxes reach the gateway's sandbox port only (their NetworkPolicy allows nothing else), so nothing here is a way
around a sandbox's own policy: a sandbox holds no user's token, and cannot reach this listener. The chart's
NetworkPolicy for the gateway admits this port from anywhere but sandbox pods.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.cluster.people.front_door import PREFIX, ClusterFrontDoor
from gateway.cluster.people.sessions import ClusterSessions
from gateway.executions.models import ExecuteRequest, ExecutionOutcome
from gateway.web.app import gateway_app
from gateway.web.auth import Credentials
from gateway.web.error_responses import ERROR_RESPONSES

NDJSON = "application/x-ndjson"


def create_sessions_app(sessions: ClusterSessions) -> FastAPI:
    app = gateway_app(sessions.core, "mcpexec sessions", "AgentSessions for people: the execute API.")

    @app.post(
        "/v1/sessions/{namespace}/{name}/execute",
        responses=ERROR_RESPONSES,
        response_model=ExecutionOutcome,
        response_model_by_alias=True,
    )
    async def execute(
        namespace: str,
        name: str,
        request: ExecuteRequest,
        credentials: Credentials,
        stream: Annotated[bool, Query(description="JSON lines as the code prints (application/x-ndjson)")] = False,
    ) -> ExecutionOutcome | StreamingResponse:
        """Run code in an AgentSession, as the caller (their own Kubernetes token; `create` on
        `agentsessions/exec`): its stdout, stderr (bounded head and tail), error and duration. Variables persist.
        With `stream=true`: one JSON object a line, `{"kind": "output", "stream", "text"}` as the code prints, then
        `{"kind": "outcome", "outcome"}`, or `{"kind": "error", "error": {"code", "message"}}` if it failed after
        its output began; a refusal before the code runs is an HTTP error as without `stream`."""
        token = None if credentials is None else credentials.credentials
        if stream:
            return StreamingResponse(await sessions.stream(token, namespace, name, request), media_type=NDJSON)
        return await sessions.execute(token, namespace, name, request)

    return app


class SessionsServer:
    """The execute API and the MCP front door as one ASGI app (the front door's lifespan runs the SDK's MCP-session
    manager and the registry's reaper)."""

    def __init__(self, sessions: ClusterSessions) -> None:
        self.front_door = ClusterFrontDoor(sessions)
        self._api = create_sessions_app(sessions)
        self._mcp = self.front_door.app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or str(scope.get("path", "")).startswith(PREFIX):
            await self._mcp(scope, receive, send)
        else:
            await self._api(scope, receive, send)
