"""The MCP front door in a cluster: `/mcp/{namespace}/{pool}`, one MCP session = one AgentSession for its caller.

Every HTTP request is authenticated with the caller's own Kubernetes token and authorized as creating a session and
running code in it would be (`create` on `agentsessions` and on `agentsessions/exec` in that namespace): 401 or 403
before any MCP is spoken. The first tool call of an MCP session (its `Mcp-Session-Id`) creates an AgentSession of that
pool for the caller (named `mcp-xxxxx`, annotated with who it was made for) and waits until it is Ready; the session's
later requests (its DELETE too) must come from the same user on the same path: anyone else's get 404. The client's
DELETE of the MCP session deletes the AgentSession (its sandbox goes with it); a client that vanishes leaves it to its
idle timeout. A stateless request is refused as on every front door (gateway/web/mcp_session_registry.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

from kubernetes.client.exceptions import ApiException
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from gateway.cluster.auth import session_context
from gateway.cluster.people.approvals import APPROVE_SUBRESOURCE
from gateway.cluster.people.sessions import ClusterSessions
from gateway.context import TaskContext
from gateway.errors import Forbidden, GatewayError, NotFound
from gateway.executions.broker import ANSWER_GRACE_SECONDS
from gateway.executions.models import MAX_TIMEOUT_SECONDS
from gateway.web.auth import bearer_token
from gateway.web.mcp_approval_asking import Asking
from gateway.web.mcp_front_door import front_door
from gateway.web.mcp_session_registry import IDLE_SECONDS, McpSessionRegistry, mcp_session_request
from mcpexec.api.agentsession import SessionPhase
from mcpexec.api.meta import API_VERSION, DNS1123_LABEL, GROUP

log = logging.getLogger("mcpexec.gateway.front_door")

PATH = "/mcp/{namespace}/{pool}"
PREFIX = "/mcp/"
CREATED_FOR = f"{GROUP}/created-for"
# The operator waits up to a minute for an idle sandbox (controller/sessions.py); then some slack.
READY_WAIT_SECONDS = 75.0
READY_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class _Opened:
    namespace: str
    pool: str
    username: str
    name: str


def target_of(path: str) -> tuple[str, str] | None:
    """(namespace, pool) of a front-door path, None for any other."""
    parts = path.removeprefix(PREFIX).split("/")
    if not path.startswith(PREFIX) or len(parts) != 2 or not all(re.match(DNS1123_LABEL, p) for p in parts):
        return None
    return parts[0], parts[1]


class ClusterFrontDoor:
    def __init__(self, sessions: ClusterSessions) -> None:
        self._sessions = sessions
        # An MCP session that idled out is only forgotten: its AgentSession is left to its own idle timeout.
        self._registry: McpSessionRegistry[_Opened] = McpSessionRegistry(self._delete, end_idle=False)

    async def session_of(self, ctx: Context) -> TaskContext:
        request, key = mcp_session_request(ctx)
        namespace, pool = request.path_params["namespace"], request.path_params["pool"]
        try:
            user = await self._sessions.users.user(bearer_token(request.headers.get("authorization")))
            # The registry let only the MCP session's own caller, on its own path, get here.
            opened = await self._registry.session(key, lambda: self._create(namespace, pool, user["username"]))
            document = await self._sessions.read(namespace, opened.name)
            await self._sessions.touch(document, MAX_TIMEOUT_SECONDS + ANSWER_GRACE_SECONDS)
            return session_context(document, time.time() + MAX_TIMEOUT_SECONDS)
        except GatewayError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    async def asking_of(self, ctx: Context, session: TaskContext) -> Asking:
        """The client's user decides the session's held calls through elicitation if RBAC lets them approve them
        (`create` on `agentsessions/approve`): running code in a session does not give that right."""
        request, _key = mcp_session_request(ctx)
        namespace, name = session.task.metadata.namespace, session.task.metadata.name
        how = (
            f"A person with the right to approve (the chart's approver role) approves it: `kubectl mcpexec approve "
            f"{name} {{digest}} -n {namespace} --session`, or POST /v1/approvals/{namespace}/agentsessions/{name}/"
            '{digest} with {{"decision": "approve"}} on this port.'
        )
        try:
            user = await self._sessions.users.user(bearer_token(request.headers.get("authorization")))
            await self._sessions.users.require(user, "create", namespace, name, APPROVE_SUBRESOURCE)
        except Forbidden:
            return Asking(None, how)
        except GatewayError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return Asking(str(user["username"]), how)

    async def _create(self, namespace: str, pool: str, username: str) -> _Opened:
        """An AgentSession of `pool` for `username`, once Ready (the caller's rights were checked by `_admit`)."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "AgentSession",
            "metadata": {"generateName": "mcp-", "annotations": {CREATED_FOR: username}},
            "spec": {"poolRef": {"name": pool}},
        }
        try:
            created = await asyncio.to_thread(self._sessions.directory.create_session, namespace, body)
        except ApiException as exc:
            raise ToolError(f"could not create an AgentSession (the API server answered {exc.status})") from None
        name = str(created["metadata"]["name"])
        log.info("session created for an MCP client", extra={"namespace": namespace, "session": name, "user": username})
        deadline = time.monotonic() + READY_WAIT_SECONDS
        while time.monotonic() < deadline:
            status = (await self._sessions.read(namespace, name)).get("status") or {}
            if status.get("phase") == SessionPhase.READY.value:
                return _Opened(namespace, pool, username, name)
            if status.get("phase") == SessionPhase.ENDED.value:
                raise ToolError(f"session {namespace}/{name} ended before it was ready: {status.get('reason')}")
            await asyncio.sleep(READY_POLL_SECONDS)
        raise ToolError(f"session {namespace}/{name} was not ready within {READY_WAIT_SECONDS:g} s")

    async def _delete(self, opened: _Opened, _reason: str) -> None:
        """The MCP session is over: its AgentSession is deleted (and its sandbox with it)."""
        try:
            await asyncio.to_thread(self._sessions.directory.delete_session, opened.namespace, opened.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        log.info("MCP session ended", extra={"namespace": opened.namespace, "session": opened.name})

    async def _admit(self, path: str, headers: dict[str, str]) -> tuple[str, str, str]:
        """Who may speak MCP here at all: `create` on `agentsessions` and on `agentsessions/exec` in the path's
        namespace. The caller an MCP session is bound to: its namespace, pool and user."""
        target = target_of(path)
        if target is None:
            raise NotFound(f"the MCP front door is at {PATH}")
        user = await self._sessions.users.user(bearer_token(headers.get("authorization")))
        await self._sessions.users.require(user, "create", target[0])
        await self._sessions.users.require(user, "create", target[0], subresource="exec")
        return target[0], target[1], user["username"]

    def app(self) -> ASGIApp:
        """The SDK's streamable HTTP app behind the caller's checks and the registry's (mcp_session_registry.py)."""
        inner = front_door(self._sessions.core, self.session_of, self.asking_of).streamable_http_app(
            streamable_http_path=PATH,
            session_idle_timeout=IDLE_SECONDS,
            # Bearer tokens, no ambient credentials: DNS rebinding gains an attacker nothing here.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return self._registry.app(inner, self._admit)
