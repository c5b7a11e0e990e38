"""AgentSessions for people: their own Kubernetes token in, code run in their session's sandbox, its outcome out.

The caller is authorized as users.py says: `create` on `agentsessions/exec` for that session in its namespace runs
code in it, and reads what became of its executions (re-attaching by an execution's id, through any replica).

Activity: each execution patches the session's `status.lastActivity` (and `usage.executions`), at most once per
`activity_every` seconds per session (a quarter of its idle timeout, at most ACTIVITY_EVERY_SECONDS), at its start and
its end; the operator ends a session idle past its timeout (controller/sessions.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.cluster.people.users import SessionUsers
from gateway.core import GatewayCore
from gateway.errors import GatewayError, NoSession, NotFound
from gateway.executions.broker import ANSWER_GRACE_SECONDS, STORE_OUTAGE_PATIENCE_SECONDS, Line
from gateway.executions.errors import ExecutionError, InvalidExecutionId
from gateway.executions.models import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    EXECUTION_ID_PATTERN,
    ApprovalEvent,
    ErrorEvent,
    ExecuteRequest,
    Execution,
    ExecutionLine,
    ExecutionResult,
    ExecutionStatus,
    OutcomeEvent,
)
from gateway.web.approval_watch import alongside, changes
from mcpexec.api.agentsession import MAX_LIFETIME_SECONDS, SessionPhase
from mcpexec.api.status import AgentSessionStatus, SessionUsage
from mcpexec.api.timestamps import now

log = logging.getLogger("mcpexec.gateway.sessions")

ACTIVITY_EVERY_SECONDS = 30.0
_CACHE_MAX = 4096


def session_key(document: dict[str, Any]) -> str:
    """The broker's key of a session, whatever its phase: its sandbox's TaskContext.scope (namespace/name/uid)."""
    meta = document["metadata"]
    return f"{meta['namespace']}/{meta['name']}/{meta['uid']}"


def session_scope(document: dict[str, Any]) -> str:
    """The broker's key of a Ready session (session_key). NoSession while it is Pending or once it has ended."""
    meta = document["metadata"]
    status = document.get("status") or {}
    if status.get("phase") != SessionPhase.READY.value or not (status.get("claim") or {}).get("podName"):
        phase = status.get("phase") or SessionPhase.PENDING.value
        reason = f" ({status['reason']})" if status.get("reason") else ""
        raise NoSession(f"session {meta['namespace']}/{meta['name']} is {phase}{reason}, not Ready")
    return session_key(document)


def checked_id(execution_id: str | None) -> str | None:
    """A caller's own execution id, if it is one (InvalidExecutionId otherwise)."""
    if execution_id is not None and not re.fullmatch(EXECUTION_ID_PATTERN, execution_id):
        raise InvalidExecutionId("an execution id is 8 to 64 letters, digits, '-' or '_'")
    return execution_id


def _idle_timeout(document: dict[str, Any]) -> float:
    return float((document.get("spec") or {}).get("idleTimeoutSeconds") or DEFAULT_IDLE_TIMEOUT_SECONDS)


def _json_line(line: Line | ExecutionLine | ErrorEvent | ApprovalEvent) -> str:
    shown = OutcomeEvent(outcome=line) if isinstance(line, ExecutionResult) else line
    return shown.model_dump_json(by_alias=True, exclude_none=isinstance(line, ApprovalEvent)) + "\n"


async def _relay(execution_id: str, lines: AsyncIterator[Line | ApprovalEvent]) -> AsyncIterator[str]:
    """An execution's lines as NDJSON: its id first, last its outcome or the error that ended it (with its state)."""
    yield _json_line(ExecutionLine(execution_id=execution_id))
    try:
        async for line in lines:
            yield _json_line(line)
    except ExecutionError as exc:
        yield _json_line(ErrorEvent(error=exc.body()))
    except GatewayError as exc:
        yield _json_line(ErrorEvent(error=exc.response().error))


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

    async def execute(
        self, token: str | None, namespace: str, name: str, request: ExecuteRequest, execution_id: str | None = None
    ) -> ExecutionResult:
        """Run the request as the caller; `execution_id`: the caller's own id for it (sent again, it is the same
        execution: never run twice)."""
        checked_id(execution_id)
        return await self.run(await self.authorized(token, namespace, name), request, execution_id)

    async def stream(
        self, token: str | None, namespace: str, name: str, request: ExecuteRequest, execution_id: str | None = None
    ) -> tuple[str, AsyncIterator[str]]:
        """`execute`, its events as JSON lines: its id first, what the code prints as it prints it, each call of the
        session held for approval (and its decision) as it happens, last the outcome (or the error that ended it).
        Whatever is refused before the code is queued raises, as `execute` does."""
        checked_id(execution_id)
        document = await self.authorized(token, namespace, name)
        scope = await self.touch(document, _wait_seconds(request))
        execution = await self.core.executions.start(
            scope,
            request.code,
            request.timeout_seconds,
            True,
            _idle_timeout(document),
            execution_id,
            queued=False,
            approval=request.approval,
        )
        try:  # before it is queued: every call it makes is held after this
            cursor: str | None = await self.core.approvals.holds.cursor(scope)
        except GatewayError:  # the held calls' store away: the stream goes on without them
            cursor = None
        return execution.id, self._streamed(document, scope, execution, cursor)

    async def status(self, token: str | None, namespace: str, name: str, execution_id: str) -> ExecutionStatus:
        """What became of one of the session's executions (re-attaching to it), authorized as `execute`."""
        document = await self.authorized(token, namespace, name)
        return await self.core.executions.status(session_key(document), _known_id(execution_id))

    async def follow(
        self, token: str | None, namespace: str, name: str, execution_id: str, after: int
    ) -> AsyncIterator[str]:
        """The rest of one of the session's executions' streams, past its chunk `after`, as JSON lines (`stream`);
        refused before the first line (401, 403, 404) as `status`."""
        document = await self.authorized(token, namespace, name)
        lines = await self.core.executions.follow(session_key(document), _known_id(execution_id), after)
        return _relay(execution_id, lines)

    async def _streamed(
        self, document: dict[str, Any], scope: str, execution: Execution, cursor: str | None
    ) -> AsyncIterator[str]:
        lines: AsyncIterator[Line | ApprovalEvent] = self._submitted(scope, execution)
        if cursor is not None:
            lines = alongside(lines, changes(self.core, scope, cursor))
        try:
            async for line in _relay(execution.id, lines):
                yield line
        finally:
            await self._record(document, self._activity[scope])

    async def _submitted(self, scope: str, execution: Execution) -> AsyncIterator[Line]:
        """The execution queued once its stream has begun (its id is on the way): a store outage while queuing it is
        ridden out, or reported, in the stream."""
        try:
            await self.core.executions.submit(scope, execution)
        except asyncio.CancelledError:  # the caller left while it was being queued
            await self.core.executions.cancel(scope, execution.id)
            raise
        async for line in self.core.executions.events(scope, execution):
            yield line

    async def run(
        self, document: dict[str, Any], request: ExecuteRequest, execution_id: str | None = None
    ) -> ExecutionResult:
        """Run the request in the session (already authorized)."""
        scope = await self.touch(document, _wait_seconds(request))
        try:
            return await self.core.executions.execute(
                scope,
                request.code,
                request.timeout_seconds,
                idle_timeout_seconds=_idle_timeout(document),
                execution_id=execution_id,
                approval=request.approval,
            )
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


def _wait_seconds(request: ExecuteRequest) -> float:
    """The longest a caller waits for an execution: its limit, the grace, a store outage ridden out."""
    return request.timeout_seconds + ANSWER_GRACE_SECONDS + STORE_OUTAGE_PATIENCE_SECONDS


def _known_id(execution_id: str) -> str:
    """An id asked about: one that is not an execution id at all is no execution of the session (404)."""
    if not re.fullmatch(EXECUTION_ID_PATTERN, execution_id):
        raise NotFound(f"no execution {execution_id[:80]!r} in this session")
    return execution_id
