"""The broker's records in this process: for a gateway that is the only one its sandboxes and callers reach."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from gateway.errors import NoSession
from gateway.executions.store import MAX_STREAMED_CHARACTERS

NO_SESSION = "no interactive session for this caller (it ended, or was never opened)"


@dataclass
class _Execution:
    text: str
    state: Literal["waiting", "running", "finished"] = "waiting"
    streamed: int = 0
    events: asyncio.Queue[str] = field(default_factory=asyncio.Queue)


@dataclass
class _Session:
    # Execution ids in the order offered; None is the end, left in place for every poll to see.
    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    polled: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryExecutionStore:
    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        # Keyed by scope too: one session's runtime can neither take nor answer another's execution.
        self._executions: dict[tuple[str, str], _Execution] = {}

    def open(self, scope: str) -> None:
        self._sessions.setdefault(scope, _Session())

    async def ready(self, scope: str) -> None:
        await self._session(scope).polled.wait()

    async def offer(self, scope: str, execution_id: str, execution: str, ttl_seconds: float) -> None:
        session = self._session(scope)
        self._executions[scope, execution_id] = _Execution(execution)
        session.queue.put_nowait(execution_id)

    async def take(self, scope: str, wait_seconds: float) -> str | None:
        session = self._session(scope)
        session.polled.set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            try:
                execution_id = await asyncio.wait_for(session.queue.get(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return None
            if execution_id is None:
                session.queue.put_nowait(None)
                raise NoSession(NO_SESSION)
            execution = self._executions.get((scope, execution_id))
            if execution is not None and execution.state == "waiting":  # else its caller gave up on it
                execution.state = "running"
                return execution.text

    async def publish(self, scope: str, execution_id: str, event: str, final: bool, characters: int, over: str) -> bool:
        execution = self._executions.get((scope, execution_id))
        if execution is None or execution.state != "running":
            return False
        if final:
            execution.state = "finished"
        else:
            execution.streamed += characters
            if execution.streamed > MAX_STREAMED_CHARACTERS:
                if execution.streamed - characters > MAX_STREAMED_CHARACTERS:
                    return True
                event = over
        execution.events.put_nowait(event)
        return True

    async def receive(self, scope: str, execution_id: str, wait_seconds: float) -> str | None:
        execution = self._executions.get((scope, execution_id))
        if execution is None:
            return None
        try:
            return await asyncio.wait_for(execution.events.get(), wait_seconds)
        except TimeoutError:
            return None

    async def abandon(self, scope: str, execution_id: str) -> None:
        self._executions.pop((scope, execution_id), None)

    async def end(self, scope: str, ended: str) -> None:
        session = self._sessions.pop(scope, None)
        if session is None:
            return
        for (owner, _), execution in self._executions.items():
            if owner == scope and execution.state != "finished":
                execution.state = "finished"
                execution.events.put_nowait(ended)
        session.queue.put_nowait(None)

    async def forget(self, scope: str, ended: str) -> None:
        await self.end(scope, ended)

    async def close(self) -> None:
        self._sessions.clear()
        self._executions.clear()

    def _session(self, scope: str) -> _Session:
        session = self._sessions.get(scope)
        if session is None:
            raise NoSession(NO_SESSION)
        return session
