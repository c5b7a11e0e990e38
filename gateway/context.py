"""The authenticated caller of a request: one AgentTask, identified by id and uid, until it expires."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from mcpexec.api.agenttask import AgentTask


@dataclass(frozen=True)
class TaskContext:
    """What every handler knows about its caller once the bearer token is checked."""

    task: AgentTask
    uid: str
    expires_at: float

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def scope(self) -> str:
        """Key for everything per task (vault, sessions, limits): a re-created task gets a new one."""
        return f"{self.task_id}/{self.uid}"

    @property
    def expired(self) -> bool:
        return time.time() >= self.expires_at


class Authenticator(Protocol):
    """Turns a bearer token into its task, or raises `errors.Unauthenticated`."""

    async def authenticate(self, token: str) -> TaskContext: ...
