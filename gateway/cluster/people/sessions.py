"""AgentSessions for people: their own Kubernetes token in, code run in their session's sandbox, its outcome out.

The caller is authorized as users.py says: `create` on `agentsessions/exec` for that session in its namespace runs
code in it.

Activity: each execution patches the session's `status.lastActivity` (and `usage.executions`), at most once per
`activity_every` seconds per session (a quarter of its idle timeout, at most ACTIVITY_EVERY_SECONDS), at its start and
its end; the operator ends a session idle past its timeout (controller/sessions.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.cluster.people.users import SessionUsers
from gateway.core import GatewayCore
from gateway.errors import GatewayError, NoSession, NotFound
from gateway.executions.broker import ANSWER_GRACE_SECONDS
from gateway.executions.models import (
    ErrorEvent,
    ExecuteRequest,
    Execution,
    ExecutionOutcome,
    OutcomeEvent,
    OutputEvent,
)
from mcpexec.api.agentsession import MAX_LIFETIME_SECONDS, SessionPhase
from mcpexec.api.status import AgentSessionStatus, SessionUsage
from mcpexec.api.timestamps import now

log = logging.getLogger("mcpexec.gateway.sessions")

ACTIVITY_EVERY_SECONDS = 30.0
_CACHE_MAX = 4096


def session_scope(document: dict[str, Any]) -> str:
    """The broker's key of a Ready session: its sandbox's TaskContext.scope (namespace/name/uid). NoSession while
    it is Pending or once it has ended."""
    meta = document["metadata"]
    status = document.get("status") or {}
    if status.get("phase") != SessionPhase.READY.value or not (status.get("claim") or {}).get("podName"):
        phase = status.get("phase") or SessionPhase.PENDING.value
        reason = f" ({status['reason']})" if status.get("reason") else ""
        raise NoSession(f"session {meta['namespace']}/{meta['name']} is {phase}{reason}, not Ready")
    return f"{meta['namespace']}/{meta['name']}/{meta['uid']}"


@dataclass
class _Activity:
    written: float = 0.0
    used: float = 0.0
    executions: int = 0


class ClusterSessions:
    """The execute API over the broker: the caller's rights checked, the session's activity recorded."""

    def __init__(self, core: GatewayCore, directory: KubeDirectory, users: SessionUsers) -> None:
        self.core = core
        self.directory = directory
        self.users = users
        self._activity: dict[str, _Activity] = {}

    async def read(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            return await asyncio.to_thread(self.directory.agent_session, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                raise NotFound(f"no AgentSession {name!r} in namespace {namespace}") from None
            raise

    async def authorized(self, token: str | None, namespace: str, name: str) -> dict[str, Any]:
        """The session, if the token's owner may run code in it (`create` on `agentsessions/exec`)."""
        user = await self.users.user(token)
        await self.users.require(user, "create", namespace, name, "exec")
        return await self.read(namespace, name)

    async def execute(self, token: str | None, namespace: str, name: str, request: ExecuteRequest) -> ExecutionOutcome:
        return await self.run(await self.authorized(token, namespace, name), request)

    async def stream(self, token: str | None, namespace: str, name: str, request: ExecuteRequest) -> AsyncIterator[str]:
        """`execute`, its events as JSON lines: what the code prints as it prints it, last the outcome (or the error
        that ended it). Whatever is refused before the code is queued raises, as `execute` does."""
        document = await self.authorized(token, namespace, name)
        scope = await self.touch(document, request.timeout_seconds + ANSWER_GRACE_SECONDS)
        execution = await self.core.executions.start(scope, request.code, request.timeout_seconds, stream=True)
        return self._lines(document, scope, execution)

    async def _lines(self, document: dict[str, Any], scope: str, execution: Execution) -> AsyncIterator[str]:
        try:
            async for event in self.core.executions.events(scope, execution):
                line = event if isinstance(event, OutputEvent) else OutcomeEvent(outcome=event)
                yield line.model_dump_json(by_alias=True) + "\n"
        except GatewayError as exc:
            yield ErrorEvent(error=exc.response().error).model_dump_json() + "\n"
        finally:
            await self._record(document, self._activity[scope])

    async def run(self, document: dict[str, Any], request: ExecuteRequest) -> ExecutionOutcome:
        """Run the request in the session (already authorized)."""
        scope = await self.touch(document, request.timeout_seconds + ANSWER_GRACE_SECONDS)
        try:
            return await self.core.executions.execute(scope, request.code, request.timeout_seconds)
        finally:
            await self._record(document, self._activity[scope])

    async def touch(self, document: dict[str, Any], seconds: float) -> str:
        """A Ready session about to run code: its broker session opened (if its runtime has not polled yet), kept
        from the reaper for `seconds`, its activity recorded; returns its scope."""
        scope = session_scope(document)
        self.core.executions.open(scope)
        self.core.keep(scope, time.time() + seconds)
        if len(self._activity) >= _CACHE_MAX:  # no session outlives MAX_LIFETIME_SECONDS
            gone = time.monotonic() - MAX_LIFETIME_SECONDS
            self._activity = {k: v for k, v in self._activity.items() if v.used > gone}
        activity = self._activity.setdefault(scope, _Activity())
        activity.executions += 1
        activity.used = time.monotonic()
        await self._record(document, activity)
        return scope

    async def _record(self, document: dict[str, Any], activity: _Activity) -> None:
        idle = float((document.get("spec") or {}).get("idleTimeoutSeconds") or ACTIVITY_EVERY_SECONDS)
        if time.monotonic() - activity.written < min(ACTIVITY_EVERY_SECONDS, idle / 4):
            return
        activity.written = time.monotonic()
        meta = document["metadata"]
        status = AgentSessionStatus(last_activity=now(), usage=SessionUsage(executions=activity.executions))
        try:
            await asyncio.to_thread(self.directory.patch_session_status, meta["namespace"], meta["name"], status.wire())
        except ApiException as exc:  # the execution goes on; the next one records again
            log.warning("could not record session activity", extra={"session": meta["name"], "status": exc.status})
