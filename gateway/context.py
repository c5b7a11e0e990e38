"""The authenticated caller of a request: one AgentTask, identified by id and uid, until it expires."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from mcpexec.api.agenttask import AgentTask
from mcpexec.api.result import RuntimeResult
from mcpexec.api.sandbox import SandboxPolicy


@dataclass(frozen=True)
class TaskContext:
    """What every handler knows about its caller once the bearer token is checked. `ceiling`: a task running in a
    SandboxPool's sandbox is bounded by the pool template's policy as it was when the sandbox was claimed, on top
    of its own (None: a task in a sandbox of its own). `session`: the caller is an AgentSession's sandbox (its `task`
    is the session seen as a pooled task whose code never runs), which runs code from the execute API."""

    task: AgentTask
    uid: str
    expires_at: float
    ceiling: SandboxPolicy | None = None
    session: bool = False
    # The task's trace (W3C traceparent of the span its sandbox's spans go under; None: not traced).
    traceparent: str | None = None

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @cached_property
    def scope(self) -> str:
        """Key for everything per task (vault, upstream connections, interactive session, limits): a re-created task
        gets a new one."""
        return f"{self.task_id}/{self.uid}"

    @property
    def expired(self) -> bool:
        return time.time() >= self.expires_at


class Authenticator(Protocol):
    """Turns a bearer token into its task, or raises `errors.Unauthenticated`."""

    async def authenticate(self, token: str) -> TaskContext: ...


class Assigner(Protocol):
    """Which task a SandboxPool's sandbox is to run: the task the operator claimed it for, waiting up to `wait`
    seconds for the claim (None: no claim yet). Raises `errors.Forbidden` for a token that is not a pool
    sandbox's, `errors.Unauthenticated` as `Authenticator` does."""

    async def assignment(self, token: str, wait: float) -> TaskContext | None: ...


class TaskReports(Protocol):
    """Where a task's result, as its own sandbox reports it, is recorded (cluster: the AgentTask's `status.report`).
    `record` is True when this report was recorded, False when there was nothing to record (the task has a report
    already, the first stands; it finished; it is gone). Raises `errors.TaskStatusUnavailable` when it could not
    be told."""

    async def record(self, ctx: TaskContext, report: RuntimeResult) -> bool: ...
