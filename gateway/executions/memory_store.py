"""The broker's records in this process: for a gateway that is the only one its sandboxes and callers reach."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from gateway.errors import NoSession
from gateway.executions.store import (
    MAX_STREAMED_CHARACTERS,
    RETENTION_SECONDS,
    Chunk,
    Offered,
    Record,
    StoredState,
    gap_event,
    over_event,
)

NO_SESSION = "no interactive session for this caller (it ended, or was never opened)"


@dataclass
class _Execution:
    text: str
    digest: str
    timeout_seconds: float
    hold_seconds: float
    state: StoredState = "waiting"
    taker: str = ""
    chunks: int = 0
    streamed: int = 0
    events: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    expiry: asyncio.TimerHandle | None = None

    def append(self, event: str) -> None:
        self.events.append(event)
        self.changed.set()
        self.changed = asyncio.Event()


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

    async def check(self, scope: str, execution_id: str, digest: str) -> Offered | None:
        self._session(scope)
        execution = self._executions.get((scope, execution_id))
        if execution is None:
            return None
        return "conflict" if execution.digest != digest else execution.state

    async def offer(
        self, scope: str, execution_id: str, execution: str, digest: str, timeout_seconds: float, hold_seconds: float
    ) -> Offered:
        session = self._session(scope)
        existing = await self.check(scope, execution_id, digest)
        if existing is not None and existing != "cancelled":
            return existing
        self._forget_execution(scope, execution_id)
        self._executions[scope, execution_id] = _Execution(execution, digest, timeout_seconds, hold_seconds)
        self._expire(scope, execution_id, hold_seconds)
        session.queue.put_nowait(execution_id)
        return "new"

    async def take(self, scope: str, wait_seconds: float, taker: str) -> str | None:
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
                execution.state, execution.taker = "running", taker
                self._expire(scope, execution_id, execution.hold_seconds)
                return execution.text

    async def output(self, scope: str, execution_id: str, chunks: list[Chunk]) -> bool:
        execution = self._executions.get((scope, execution_id))
        if execution is None or execution.state != "running":
            return False
        for chunk in chunks:
            if chunk.seq <= execution.chunks:  # taken before: a post sent again
                continue
            if chunk.seq > execution.chunks + 1:
                execution.append(gap_event(execution.chunks + 1, chunk.seq - 1))
            execution.chunks = chunk.seq
            execution.streamed += chunk.characters
            if execution.streamed <= MAX_STREAMED_CHARACTERS:
                execution.append(chunk.event)
            elif execution.streamed - chunk.characters <= MAX_STREAMED_CHARACTERS:
                execution.append(over_event(chunk.seq))
        return True

    async def finish(
        self, scope: str, execution_id: str, event: str, chunks: int
    ) -> Literal["finished", "duplicate"] | None:
        execution = self._executions.get((scope, execution_id))
        if execution is None or execution.state not in ("running", "finished"):
            return None
        if execution.state == "finished":
            return "duplicate"
        if chunks > execution.chunks:
            execution.append(gap_event(execution.chunks + 1, chunks))
            execution.chunks = chunks
        self._retire(scope, execution_id, execution, "finished", event)
        return "finished"

    async def cancel(self, scope: str, execution_id: str, event: str) -> StoredState | None:
        execution = self._executions.get((scope, execution_id))
        if execution is None or execution.state != "waiting":
            return None if execution is None else execution.state
        self._retire(scope, execution_id, execution, "cancelled", event)
        return "cancelled"

    async def record(self, scope: str, execution_id: str) -> Record | None:
        execution = self._executions.get((scope, execution_id))
        if execution is None:
            return None
        return Record(execution.state, len(execution.events), execution.timeout_seconds)

    async def read(self, scope: str, execution_id: str, after: int, wait_seconds: float) -> list[tuple[int, str]]:
        execution = self._executions.get((scope, execution_id))
        if execution is None:
            return []
        if len(execution.events) <= after and wait_seconds > 0:
            try:
                await asyncio.wait_for(execution.changed.wait(), wait_seconds)
            except TimeoutError:
                return []
        return [(number, event) for number, event in enumerate(execution.events, 1) if number > after]

    async def end(self, scope: str, waiting: str, running: str) -> None:
        session = self._sessions.pop(scope, None)
        if session is None:
            return
        for (owner, execution_id), execution in list(self._executions.items()):
            if owner == scope and execution.state == "waiting":
                self._retire(scope, execution_id, execution, "cancelled", waiting)
            elif owner == scope and execution.state == "running":
                self._retire(scope, execution_id, execution, "ended", running)
        session.queue.put_nowait(None)

    async def forget(self, scope: str, waiting: str, running: str) -> None:
        await self.end(scope, waiting, running)

    async def close(self) -> None:
        for execution in self._executions.values():
            if execution.expiry is not None:
                execution.expiry.cancel()
        self._sessions.clear()
        self._executions.clear()

    def _retire(self, scope: str, execution_id: str, execution: _Execution, state: StoredState, event: str) -> None:
        """The execution's last event; its record kept RETENTION_SECONDS for callers re-attaching."""
        execution.state = state
        execution.append(event)
        self._expire(scope, execution_id, RETENTION_SECONDS)

    def _expire(self, scope: str, execution_id: str, seconds: float) -> None:
        execution = self._executions[scope, execution_id]
        if execution.expiry is not None:
            execution.expiry.cancel()
        execution.expiry = asyncio.get_running_loop().call_later(seconds, self._forget_execution, scope, execution_id)

    def _forget_execution(self, scope: str, execution_id: str) -> None:
        execution = self._executions.pop((scope, execution_id), None)
        if execution is not None and execution.expiry is not None:
            execution.expiry.cancel()

    def _session(self, scope: str) -> _Session:
        session = self._sessions.get(scope)
        if session is None:
            raise NoSession(NO_SESSION)
        return session
