"""The session broker: a caller's code goes to its session's sandbox, the sandbox's outcome comes back.

A session is keyed by the task scope its sandbox's token authenticates as (TaskContext.scope): the sandbox's
runtime long-polls `next` for work and posts each outcome to `complete`; a caller (the MCP front door, the cluster's
execute API) awaits `execute`. One execution at a time per session, in the order they came: concurrent callers queue.
The broker holds no sandbox: whoever runs sandboxes opens a session for a scope before starting its sandbox and ends
it (with the reason) when the sandbox is gone or the session is over. Output is relayed as the runtime printed it:
already tokenized data, never detokenized here.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from gateway.errors import CodeTooLarge, ExecutionTimeout, NoSession, NotFound, SessionEnded
from runtime.output import truncate

log = logging.getLogger("mcpexec.gateway.executions")

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 3600.0
# Past a snippet's own limit (the runtime's timer stops it), how long its outcome may take to arrive.
ANSWER_GRACE_SECONDS = 5.0
# The runtime keeps about 20,000 characters of each stream, head and tail; whatever a runtime posts beyond this
# (its code holds the session's token and can post for itself) is cut here, head and tail kept.
MAX_STREAM_CHARACTERS = 32_000
MAX_ERROR_CHARACTERS = 4_000
NO_SESSION = "no interactive session for this caller (it ended, or was never opened)"


class ExecuteRequest(BaseModel):
    """A caller's code for its session."""

    model_config = ConfigDict(populate_by_name=True)

    code: Annotated[str, Field(min_length=1)]
    timeout_seconds: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds"
    )


class Execution(BaseModel):
    """What the session's runtime gets from `GET /v1/session/next`."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    code: str
    timeout_seconds: float = Field(alias="timeoutSeconds")


class ExecutionOutcome(BaseModel):
    """What the runtime posts for an execution, and what its caller gets: each stream bounded head and tail;
    `error` is the exception the snippet ended with (None: it ran to its end)."""

    model_config = ConfigDict(populate_by_name=True)

    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    duration_ms: Annotated[int, Field(ge=0)] = Field(default=0, alias="durationMs")

    def bounded(self) -> ExecutionOutcome:
        return ExecutionOutcome(
            stdout=truncate(self.stdout, MAX_STREAM_CHARACTERS),
            stderr=truncate(self.stderr, MAX_STREAM_CHARACTERS),
            error=None if self.error is None else truncate(self.error, MAX_ERROR_CHARACTERS),
            duration_ms=self.duration_ms,
        )


@dataclass
class _Pending:
    execution: Execution
    answer: asyncio.Future[ExecutionOutcome]


@dataclass
class _Session:
    # Offered to the runtime's next poll; None is the end, left in place for every poll to see.
    offered: asyncio.Queue[_Pending | None] = field(default_factory=asyncio.Queue)
    running: dict[str, _Pending] = field(default_factory=dict)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    polled: asyncio.Event = field(default_factory=asyncio.Event)


class ExecutionBroker:
    def __init__(self, max_code_bytes: int) -> None:
        """`max_code_bytes`: the largest code accepted, the gateway's request limit."""
        self._max_code_bytes = max_code_bytes
        self._sessions: dict[str, _Session] = {}

    def open(self, scope: str) -> None:
        """A session for `scope`; its runtime may poll from now on."""
        self._sessions.setdefault(scope, _Session())

    async def ready(self, scope: str) -> None:
        """Returns once the session's runtime has polled (it is up and waiting for code)."""
        await self._session(scope).polled.wait()

    async def execute(self, scope: str, code: str, timeout_seconds: float) -> ExecutionOutcome:
        """Run `code` in the session and return its outcome. Raises NoSession, CodeTooLarge, SessionEnded (while
        waiting, with the reason), ExecutionTimeout (no outcome within the limit and a grace)."""
        session = self._session(scope)
        size = len(code.encode(errors="surrogatepass"))
        if size > self._max_code_bytes:
            raise CodeTooLarge(f"the code is {size} bytes, over the gateway's limit of {self._max_code_bytes}")
        async with session.turn:
            if self._sessions.get(scope) is not session:
                raise NoSession(NO_SESSION)
            execution = Execution(id=uuid.uuid4().hex, code=code, timeout_seconds=timeout_seconds)
            pending = _Pending(execution, asyncio.get_running_loop().create_future())
            session.offered.put_nowait(pending)
            started = time.monotonic()
            try:
                outcome = await asyncio.wait_for(pending.answer, timeout_seconds + ANSWER_GRACE_SECONDS)
            except TimeoutError:
                raise ExecutionTimeout(
                    f"no outcome within {timeout_seconds:g} s and a {ANSWER_GRACE_SECONDS:g} s grace: the runtime is "
                    "still busy (with this snippet, or one before it that would not stop); the session goes on"
                ) from None
            finally:
                session.running.pop(execution.id, None)
        log.info(
            "execution done",
            extra={
                "scope": scope,
                "execution": execution.id,
                "failed": outcome.error is not None,
                "seconds": round(time.monotonic() - started, 3),
            },
        )
        return outcome

    async def next(self, scope: str, wait_seconds: float) -> Execution | None:
        """The session's next execution for its runtime, waiting up to `wait_seconds` (None: nothing came)."""
        session = self._session(scope)
        session.polled.set()
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                pending = await asyncio.wait_for(session.offered.get(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return None
            if pending is None:
                session.offered.put_nowait(None)
                raise NoSession(NO_SESSION)
            if not pending.answer.done():  # done already: its caller gave up waiting
                session.running[pending.execution.id] = pending
                return pending.execution

    def complete(self, scope: str, execution_id: str, outcome: ExecutionOutcome) -> None:
        """The runtime's outcome of an execution it was given. NotFound when none of that id awaits one (its caller
        gave up, or the id is not one this session's runtime got)."""
        pending = self._session(scope).running.pop(execution_id, None)
        if pending is None:
            raise NotFound(f"no execution {execution_id!r} awaits an outcome in this session")
        if not pending.answer.done():
            pending.answer.set_result(outcome.bounded())

    def end(self, scope: str, reason: str) -> None:
        """End the session: its runtime's polls answer 403 `no_session` from now on, every execution waiting or
        running fails with SessionEnded(`reason`)."""
        session = self._sessions.pop(scope, None)
        if session is None:
            return
        ended = SessionEnded(reason)
        waiting: list[_Pending] = [*session.running.values()]
        while not session.offered.empty():
            item = session.offered.get_nowait()
            if item is not None:
                waiting.append(item)
        for pending in waiting:
            if not pending.answer.done():
                pending.answer.set_exception(ended)
        session.running.clear()
        session.offered.put_nowait(None)
        log.info("session ended", extra={"scope": scope, "reason": reason, "failed_executions": len(waiting)})

    def _session(self, scope: str) -> _Session:
        session = self._sessions.get(scope)
        if session is None:
            raise NoSession(NO_SESSION)
        return session
