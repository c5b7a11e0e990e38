"""The session broker: a caller's code goes to its session's sandbox, the sandbox's output and outcome come back.

A session is keyed by the task scope its sandbox's token authenticates as (TaskContext.scope): the sandbox's
runtime long-polls `next` for work, posts what a streaming execution prints to `output` while it runs, and its outcome
to `complete`; a caller (the MCP front door, the cluster's execute API) awaits `execute`, or reads `run`'s events as
they come. The session's runtime runs one execution at a time, in the order they came: concurrent callers queue, and
the time queued counts toward each one's wait. The broker holds no sandbox: whoever runs sandboxes opens a session
for a scope before starting its sandbox and ends it (with the reason) when the sandbox is gone or the session is
over. Output is relayed as the runtime printed it: already tokenized data, never detokenized here. Where the records
live is the store's: this process, or Redis for replicas (store.py).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

from gateway.errors import CodeTooLarge, ExecutionTimeout, NotFound, SessionEnded
from gateway.executions.models import (
    EVENT,
    EndedEvent,
    Execution,
    ExecutionOutcome,
    OutcomeEvent,
    OutputChunk,
    OutputEvent,
)
from gateway.executions.store import MAX_STREAMED_CHARACTERS, ExecutionStore

log = logging.getLogger("mcpexec.gateway.executions")

# Past a snippet's own limit (the runtime's timer stops it), how long its outcome may take to arrive.
ANSWER_GRACE_SECONDS = 5.0
# How long an execution's records outlive the longest its caller waits (a replica that died while waiting).
_RECORD_SLACK_SECONDS = 60.0
_OVER = OutputEvent(
    stream="stderr",
    text=f"\n...[streamed output past {MAX_STREAMED_CHARACTERS} characters dropped; the outcome keeps its head and "
    "tail]...\n",
).model_dump_json()


class ExecutionBroker:
    def __init__(self, store: ExecutionStore, max_code_bytes: int) -> None:
        """`max_code_bytes`: the largest code accepted, the gateway's request limit."""
        self._store = store
        self._max_code_bytes = max_code_bytes

    def open(self, scope: str) -> None:
        """A session for `scope`; its runtime may poll from now on."""
        self._store.open(scope)

    async def ready(self, scope: str) -> None:
        """Returns once the session's runtime has polled (it is up and waiting for code)."""
        await self._store.ready(scope)

    async def execute(
        self,
        scope: str,
        code: str,
        timeout_seconds: float,
        on_output: Callable[[OutputEvent], Awaitable[None]] | None = None,
    ) -> ExecutionOutcome:
        """Run `code` in the session and return its outcome; `on_output` gets what it prints while it runs. Raises
        NoSession, CodeTooLarge, SessionEnded (while waiting, with the reason), ExecutionTimeout (no outcome within
        the limit and a grace)."""
        execution = await self.start(scope, code, timeout_seconds, stream=on_output is not None)
        async for event in self.events(scope, execution):
            if isinstance(event, ExecutionOutcome):
                return event
            if on_output is not None:
                await on_output(event)
        raise AssertionError("events() ends with an outcome or raises")

    async def start(self, scope: str, code: str, timeout_seconds: float, stream: bool = False) -> Execution:
        """Queue `code` for the session's runtime; read what comes of it with `events`. With `stream`, the runtime
        sends what the code prints while it runs. Raises NoSession, CodeTooLarge."""
        size = len(code.encode(errors="surrogatepass"))
        if size > self._max_code_bytes:
            raise CodeTooLarge(f"the code is {size} bytes, over the gateway's limit of {self._max_code_bytes}")
        execution = Execution(id=uuid.uuid4().hex, code=code, timeout_seconds=timeout_seconds, stream=stream)
        ttl = execution.timeout_seconds + ANSWER_GRACE_SECONDS + _RECORD_SLACK_SECONDS
        await self._store.offer(scope, execution.id, execution.model_dump_json(by_alias=True), ttl)
        return execution

    async def events(self, scope: str, execution: Execution) -> AsyncIterator[OutputEvent | ExecutionOutcome]:
        """What comes of a started execution: its output as printed (if it streams), last its outcome. Raises
        SessionEnded (with the reason), ExecutionTimeout (no outcome within its limit and a grace)."""
        started = time.monotonic()
        deadline = started + execution.timeout_seconds + ANSWER_GRACE_SECONDS
        try:
            while True:
                raw = await self._store.receive(scope, execution.id, max(0.0, deadline - time.monotonic()))
                if raw is None:
                    raise ExecutionTimeout(
                        f"no outcome within {execution.timeout_seconds:g} s and a {ANSWER_GRACE_SECONDS:g} s grace: "
                        "the runtime is still busy (with this snippet, or one before it that would not stop); the "
                        "session goes on"
                    )
                event = EVENT.validate_json(raw)
                if isinstance(event, EndedEvent):
                    raise SessionEnded(event.reason)
                if isinstance(event, OutputEvent):
                    yield event
                    continue
                log.info(
                    "execution done",
                    extra={
                        "scope": scope,
                        "execution": execution.id,
                        "failed": event.outcome.error is not None,
                        "seconds": round(time.monotonic() - started, 3),
                    },
                )
                yield event.outcome
                return
        finally:
            await self._store.abandon(scope, execution.id)

    async def next(self, scope: str, wait_seconds: float) -> Execution | None:
        """The session's next execution for its runtime, waiting up to `wait_seconds` (None: nothing came)."""
        raw = await self._store.take(scope, wait_seconds)
        return None if raw is None else Execution.model_validate_json(raw)

    async def output(self, scope: str, execution_id: str, chunks: list[OutputChunk]) -> None:
        """What a streaming execution printed since the runtime's last post. NotFound when that execution is not
        running in this session (its caller gave up, it finished, or the id is not this session's)."""
        for chunk in chunks:
            event = OutputEvent(stream=chunk.stream, text=chunk.text).model_dump_json()
            if not await self._store.publish(scope, execution_id, event, False, len(chunk.text), _OVER):
                raise NotFound(f"no execution {execution_id!r} is running in this session")

    async def complete(self, scope: str, execution_id: str, outcome: ExecutionOutcome) -> None:
        """The runtime's outcome of an execution it was given. NotFound when none of that id awaits one (its caller
        gave up, or the id is not one this session's runtime got)."""
        event = OutcomeEvent(outcome=outcome.bounded()).model_dump_json(by_alias=True)
        if not await self._store.publish(scope, execution_id, event, True, 0, _OVER):
            raise NotFound(f"no execution {execution_id!r} awaits an outcome in this session")

    async def end(self, scope: str, reason: str) -> None:
        """End the session: its runtime's polls answer 403 `no_session` from now on, every execution waiting or
        running fails with SessionEnded(`reason`)."""
        await self._store.end(scope, EndedEvent(reason=reason).model_dump_json())
        log.info("session ended", extra={"scope": scope, "reason": reason})

    async def forget(self, scope: str) -> None:
        """This gateway no longer serves the scope's task (its token expired here)."""
        await self._store.forget(scope, EndedEvent(reason="the session's task ended").model_dump_json())

    async def close(self) -> None:
        await self._store.close()
