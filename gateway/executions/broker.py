"""The session broker: a caller's code goes to its session's sandbox, the sandbox's output and outcome come back.

A session is keyed by the task scope its sandbox's token authenticates as (TaskContext.scope): the sandbox's
runtime long-polls `next` for work, posts what a streaming execution prints to `output` while it runs, and its outcome
to `complete`; a caller (the MCP front door, the cluster's execute API) awaits `execute`, or reads `events` as they
come, and any caller of the session may re-attach to an execution by its id (`status`, `follow`). The session's
runtime runs one execution at a time, in the order they came: concurrent callers queue, and the time queued counts
toward each one's wait. The broker holds no sandbox: whoever runs sandboxes opens a session for a scope before
starting its sandbox and ends it (with the reason) when the sandbox is gone or the session is over. Output is relayed
as the runtime printed it: already tokenized data, never detokenized here. Where the records live is the store's:
this process, or Redis for replicas (store.py).

A store that cannot be reached is ridden out, never guessed about: a caller's wait goes on through it (for up to
STORE_OUTAGE_PATIENCE_SECONDS more than its own limit), the runtime sends its output and outcome again until they are
taken (each is taken once), and whatever a caller is told without an outcome says what became of its execution
(errors.py): `not_taken` only when it provably never ran.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from gateway.errors import CodeTooLarge, NotFound, SessionStoreUnavailable
from gateway.executions.errors import (
    ExecutionCancelled,
    ExecutionError,
    ExecutionIdInUse,
    ExecutionLost,
    ExecutionPending,
    ExecutionSessionEnded,
    ExecutionStoreUnavailable,
    ExecutionTimedOut,
)
from gateway.executions.models import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    EVENT,
    Approval,
    EndedEvent,
    Execution,
    ExecutionOutcome,
    ExecutionResult,
    ExecutionStatus,
    GapEvent,
    OutputChunk,
    OutputEvent,
    OverEvent,
    StoredOutcome,
)
from gateway.executions.store import MAX_STREAMED_CHARACTERS, RETENTION_SECONDS, Chunk, ExecutionStore, Record

log = logging.getLogger("mcpexec.gateway.executions")

# Past a snippet's own limit (the runtime's timer stops it), how long its outcome may take to arrive.
ANSWER_GRACE_SECONDS = 5.0
# How long a waiting caller rides out a session store it cannot reach, on top of its own wait (the runtime delivers
# what it could not meanwhile once the store is back); past it, the caller is told its execution's state is unknown.
STORE_OUTAGE_PATIENCE_SECONDS = 60.0
# A reader's blocking read lasts at most this long; between two, it looks at the execution's record (a store that
# restarted without it, or from older data).
_READ_ROUND_SECONDS = 5.0
_RETRY_FIRST_SECONDS, _RETRY_CEILING_SECONDS = 0.1, 1.0
_OVER = (
    f"\n...[streamed output past {MAX_STREAMED_CHARACTERS} characters dropped; the outcome keeps its head and "
    "tail]...\n"
)
_CANCELLED = EndedEvent(
    code="execution_cancelled", state="not_taken", reason="its caller stopped waiting before the runtime took it"
).model_dump_json()

Line = OutputEvent | GapEvent | ExecutionResult


def code_digest(code: str) -> str:
    """What tells an execution id sent again with the same code from one reused for other code."""
    return hashlib.sha256(code.encode(errors="surrogatepass")).hexdigest()


class _Wait:
    """A caller's wait for an execution: until its deadline, moved on by each time the session store could not be
    reached meanwhile, for at most STORE_OUTAGE_PATIENCE_SECONDS of such time in all."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.down_since: float | None = None
        self._down_total = 0.0
        self._backoff = _RETRY_FIRST_SECONDS

    def left(self) -> float:
        return self.deadline - time.monotonic()

    async def store_down(self) -> bool:
        """The store could not be reached: True after a backoff (try again), False once patience is spent."""
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
        if self._down_total + now - self.down_since >= STORE_OUTAGE_PATIENCE_SECONDS:
            return False
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, _RETRY_CEILING_SECONDS)
        return True

    def store_up(self) -> bool:
        """The store answered: True if it had not been reached before (what was read may have changed meanwhile)."""
        if self.down_since is None:
            return False
        down = time.monotonic() - self.down_since
        self.deadline += down
        self._down_total += down
        self.down_since, self._backoff = None, _RETRY_FIRST_SECONDS
        return True


@dataclass
class _Reader:
    """Where a caller is in an execution's events: the store's number of the last event it read, and the runtime's
    number of the last chunk it was given. Output is followed by chunk number: a store that restarted from older data
    numbers its events again, never the runtime's chunks. A chunk number past the next one means events were read
    past (renumbered after such a restart): the events are read again from the first (`rereading`), and a jump
    still there then is output lost, said as a gap. Past the mark where streamed output went over its bound, no more
    chunks are kept: nothing is missing."""

    position: int = 0
    chunk: int = 0
    rereading: bool = False
    over: bool = False

    def reread(self) -> bool:
        """A jump in chunk numbers: True to read again from the first event (once), False to report a gap."""
        if self.rereading:
            return False
        self.rereading, self.position = True, 0
        return True


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
        on_output: Callable[[OutputEvent | GapEvent], Awaitable[None]] | None = None,
        idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        execution_id: str | None = None,
        on_start: Callable[[Execution], Awaitable[None]] | None = None,
        approval: Approval = "call",
    ) -> ExecutionResult:
        """Run `code` in the session and return its outcome; `on_start` is told its id before it is queued,
        `on_output` gets what it prints while it runs (and where output was lost). Raises what `start`
        and `events` raise."""
        stream = on_output is not None
        execution = await self.start(
            scope, code, timeout_seconds, stream, idle_timeout_seconds, execution_id, False, approval
        )
        if on_start is not None:
            await on_start(execution)
        await self.submit(scope, execution)
        async for event in self.events(scope, execution):
            if isinstance(event, ExecutionResult):
                return event
            if on_output is not None:
                await on_output(event)
        raise AssertionError("events() ends with an outcome or raises")

    async def start(
        self,
        scope: str,
        code: str,
        timeout_seconds: float,
        stream: bool = False,
        idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        execution_id: str | None = None,
        queued: bool = True,
        approval: Approval = "call",
    ) -> Execution:
        """An execution of `code` for the session, queued (read what comes of it with `events`), or with `queued`
        False only prepared: its id known, queued by `submit`. Its id is the caller's (an execution of that id sent
        again is that execution, never a second run) or a new one. With `stream`, the runtime sends what the code
        prints while it runs. Raises CodeTooLarge, NoSession, ExecutionIdInUse (the caller's id names other code of
        this session), ExecutionStoreUnavailable (nothing was queued: send it again), and what `submit` raises."""
        size = len(code.encode(errors="surrogatepass"))
        if size > self._max_code_bytes:
            raise CodeTooLarge(f"the code is {size} bytes, over the gateway's limit of {self._max_code_bytes}")
        execution = Execution(
            id=execution_id or uuid.uuid4().hex,
            code=code,
            timeout_seconds=timeout_seconds,
            stream=stream,
            idle_timeout_seconds=idle_timeout_seconds,
            approval=approval,
        )
        try:
            existing = await self._store.check(scope, execution.id, code_digest(code))
        except SessionStoreUnavailable as exc:  # only read, and nothing sent that could queue it
            message = f"{exc.message}; nothing was queued: send it again"
            raise ExecutionStoreUnavailable(message, execution.id, "not_taken") from None
        if existing == "conflict":
            raise ExecutionIdInUse(f"execution {execution.id!r} of this session ran other code; nothing was queued")
        if queued:
            await self.submit(scope, execution)
        return execution

    async def submit(self, scope: str, execution: Execution) -> None:
        """Queue a prepared execution (an id that exists is that execution: nothing more is queued). The store's
        answer may be lost: the offer is sent again (it is idempotent) until it is answered, for up to
        STORE_OUTAGE_PATIENCE_SECONDS. Raises NoSession, ExecutionIdInUse, ExecutionPending (`unknown`)."""
        wait = _Wait(0)
        hold = (
            execution.timeout_seconds
            + ANSWER_GRACE_SECONDS
            + STORE_OUTAGE_PATIENCE_SECONDS
            + execution.idle_timeout_seconds
            + RETENTION_SECONDS
        )
        text = execution.model_dump_json(by_alias=True)
        while True:
            try:
                offered = await self._store.offer(
                    scope, execution.id, text, code_digest(execution.code), execution.timeout_seconds, hold
                )
                break
            except SessionStoreUnavailable as exc:
                if not await wait.store_down():
                    raise self._unknown(execution.id, exc, "it may or may not be queued") from None
        if offered == "conflict":
            raise ExecutionIdInUse(f"execution {execution.id!r} of this session ran other code; nothing was queued")
        if offered != "new":
            log.info("execution sent again", extra={"scope": scope, "execution": execution.id, "state": offered})

    async def events(self, scope: str, execution: Execution) -> AsyncIterator[Line]:
        """What comes of a submitted execution, for the caller that submitted it: its output as printed (if it
        streams) and gaps where output was lost, last its outcome. Its wait is its limit and a grace (time queued
        counts), moved on by store outages; a caller that stops waiting before the runtime took the execution
        cancels it (it never runs). Raises ExecutionTimedOut (`not_taken`: cancelled; `running`), ExecutionSessionEnded
        (`not_taken`, `interrupted`), ExecutionLost, ExecutionPending (`unknown`: the store could not be reached)."""
        started = time.monotonic()
        finished = False
        try:
            async for line in self._events(scope, execution.id, execution.timeout_seconds, 0, own=True):
                if isinstance(line, ExecutionResult):
                    finished = True
                    log.info(
                        "execution done",
                        extra={
                            "scope": scope,
                            "execution": execution.id,
                            "failed": line.error is not None,
                            "seconds": round(time.monotonic() - started, 3),
                        },
                    )
                yield line
        except (GeneratorExit, asyncio.CancelledError):
            if not finished:
                await self.cancel(scope, execution.id)
            raise

    async def status(self, scope: str, execution_id: str) -> ExecutionStatus:
        """What became of the session's execution `execution_id`, with its outcome once finished. NotFound: no such
        execution in this session (never queued here, or its record is gone)."""
        record = await self._record(scope, execution_id)
        if record.state == "waiting" or record.state == "running":
            return ExecutionStatus(execution_id=execution_id, state=record.state)
        events = await self._store.read(scope, execution_id, max(0, record.events - 1), 0)
        if not events:
            raise ExecutionLost(_lost(execution_id), execution_id, "lost")
        last = EVENT.validate_json(events[-1][1])
        if isinstance(last, StoredOutcome):
            return ExecutionStatus(
                execution_id=execution_id, state="finished", outcome=_result(last.outcome, execution_id)
            )
        if isinstance(last, EndedEvent):
            return ExecutionStatus(execution_id=execution_id, state=last.state, message=last.reason)
        raise ExecutionLost(_lost(execution_id), execution_id, "lost")

    async def follow(self, scope: str, execution_id: str, after: int = 0) -> AsyncIterator[Line]:
        """A re-attaching caller's `events` (it cancels nothing): the execution's lines past chunk `after`, last its
        outcome (always given, even if read before). NotFound (raised before the first line) as `status`."""
        record = await self._record(scope, execution_id)
        return self._events(scope, execution_id, record.timeout_seconds, after, own=False)

    async def next(self, scope: str, wait_seconds: float) -> Execution | None:
        """The session's next execution for its runtime, waiting up to `wait_seconds` (None: nothing came)."""
        raw = await self._store.take(scope, wait_seconds, uuid.uuid4().hex)
        return None if raw is None else Execution.model_validate_json(raw)

    async def output(self, scope: str, execution_id: str, chunks: list[OutputChunk]) -> None:
        """What a streaming execution printed since the runtime's last post (a chunk taken before is skipped).
        NotFound when that execution is not running in this session (it ended, or the id is not this session's)."""
        stored = [
            Chunk(
                chunk.seq,
                len(chunk.text),
                OutputEvent(seq=chunk.seq, stream=chunk.stream, text=chunk.text).model_dump_json(),
            )
            for chunk in sorted(chunks, key=lambda chunk: chunk.seq)
        ]
        if not await self._store.output(scope, execution_id, stored):
            raise NotFound(f"no execution {execution_id!r} is running in this session")

    async def complete(self, scope: str, execution_id: str, outcome: ExecutionOutcome, chunks: int = 0) -> None:
        """The runtime's outcome of an execution it was given, after `chunks` numbered chunks of output; the same
        outcome sent again is taken once. NotFound when it is not running in this session (its caller cancelled it
        before it was taken, its session ended, the store lost it, or the id is not one this session's runtime got)."""
        event = StoredOutcome(outcome=outcome.bounded(), chunks=chunks).model_dump_json(by_alias=True)
        done = await self._store.finish(scope, execution_id, event, chunks)
        if done is None:
            raise NotFound(f"no execution {execution_id!r} awaits an outcome in this session")
        if done == "duplicate":
            log.info("outcome sent again", extra={"scope": scope, "execution": execution_id})

    async def end(self, scope: str, reason: str) -> None:
        """End the session: its runtime's polls answer 403 `no_session` from now on, every execution waiting or
        running fails with SessionEnded(`reason`)."""
        await self._store.end(scope, *_ended(reason))
        log.info("session ended", extra={"scope": scope, "reason": reason})

    async def forget(self, scope: str) -> None:
        """This gateway no longer serves the scope's task (its token expired here)."""
        await self._store.forget(scope, *_ended("the session's task ended"))

    async def close(self) -> None:
        await self._store.close()

    async def _events(
        self, scope: str, execution_id: str, timeout_seconds: float, after: int, own: bool
    ) -> AsyncIterator[Line]:
        wait = _Wait(timeout_seconds + ANSWER_GRACE_SECONDS)
        reader = _Reader(chunk=after)
        ended = False  # the execution ended (seen at its deadline): its last events are read at once
        while True:
            try:
                left = wait.left()
                batch = await self._store.read(
                    scope, execution_id, reader.position, min(max(left, 0.0), _READ_ROUND_SECONDS)
                )
                if wait.store_up() or not batch:
                    await self._recheck(scope, execution_id, reader)
                if not batch and left <= 0:
                    if ended:  # its record says it ended, and its last event is not there
                        raise ExecutionLost(_lost(execution_id), execution_id, "lost")
                    ended = await self._overtime(scope, execution_id, timeout_seconds, own)
                    continue
            except SessionStoreUnavailable as exc:
                if not await wait.store_down():
                    raise self._unknown(execution_id, exc, "it may be waiting, running or finished") from None
                continue
            for number, raw in batch:
                reader.position = number
                lines = _lines(execution_id, reader, raw)
                if lines is None:  # read again from the first event
                    break
                for line in lines:
                    yield line
                    if isinstance(line, ExecutionResult):
                        return

    async def _recheck(self, scope: str, execution_id: str, reader: _Reader) -> None:
        """After a quiet round or a store outage: the execution's record is still there (else it was lost), and
        holds at least the events read (else the store restarted from older data: read them all again, by chunk)."""
        record = await self._store.record(scope, execution_id)
        if record is None:
            raise ExecutionLost(_lost(execution_id), execution_id, "lost")
        if record.events < reader.position:
            log.warning("session store restarted from older data", extra={"execution": execution_id})
            reader.position = 0

    async def _overtime(self, scope: str, execution_id: str, timeout_seconds: float, own: bool) -> bool:
        """The wait is over with no outcome. The caller that submitted it cancels it if the runtime has not taken
        it: ExecutionTimedOut (`not_taken`, or `running`; `waiting` for a re-attaching caller). True if it ended
        meanwhile: its last events are to be read."""
        state: str | None = (await self._record(scope, execution_id)).state
        if own and state == "waiting":
            state = await self._store.cancel(scope, execution_id, _CANCELLED)
        limit = f"no outcome within {timeout_seconds:g} s and a {ANSWER_GRACE_SECONDS:g} s grace"
        if state == "cancelled" and own:
            raise ExecutionTimedOut(
                f"{limit}: the runtime was still busy with executions before it (or one that would not stop) and never "
                "took it; it was cancelled and will not run: send it again",
                execution_id,
                "not_taken",
            )
        if state == "waiting" or state == "running":
            raise ExecutionTimedOut(
                f"{limit}: the runtime is still busy (with this snippet, or one before it that would not stop); the "
                "session goes on, and its outcome can be asked for by its id",
                execution_id,
                "waiting" if state == "waiting" else "running",
            )
        if state is None:
            raise ExecutionLost(_lost(execution_id), execution_id, "lost")
        return True

    async def _record(self, scope: str, execution_id: str) -> Record:
        record = await self._store.record(scope, execution_id)
        if record is None:
            raise NotFound(
                f"no execution {execution_id!r} in this session: never queued here, or its record is gone (kept "
                f"{RETENTION_SECONDS} s after it ends; the session store may have lost it)"
            )
        return record

    async def cancel(self, scope: str, execution_id: str) -> None:
        """Its caller left: the execution is skipped if the runtime has not taken it (else it runs on, and its
        outcome is kept for a caller who asks for it by its id)."""
        try:
            await self._store.cancel(scope, execution_id, _CANCELLED)
        except SessionStoreUnavailable:
            log.warning(
                "could not cancel an execution its caller left", extra={"scope": scope, "execution": execution_id}
            )

    @staticmethod
    def _unknown(execution_id: str, exc: SessionStoreUnavailable, maybe: str) -> ExecutionError:
        return ExecutionPending(
            f"{exc.message} for {STORE_OUTAGE_PATIENCE_SECONDS:g} s: {maybe}; ask for execution {execution_id} by its "
            "id once the store is back (or send it again with the same id: it never runs twice)",
            execution_id,
            "unknown",
        )


def _lines(execution_id: str, reader: _Reader, raw: str) -> list[Line] | None:
    """A stored event as a caller's lines: none for output given before (read again); None to read the events again
    from the first (chunks were read past), else a gap first where they are missing; the end of an execution without
    an outcome is raised."""
    event = EVENT.validate_json(raw)
    if isinstance(event, EndedEvent):
        error = ExecutionCancelled if event.code == "execution_cancelled" else ExecutionSessionEnded
        raise error(event.reason, execution_id, event.state)
    start = reader.chunk + 1
    if isinstance(event, StoredOutcome):
        missing = not reader.over and event.chunks >= start
        if missing and reader.reread():
            return None
        gap = [GapEvent(seq=event.chunks, from_chunk=start, to_chunk=event.chunks)] if missing else []
        return [*gap, _result(event.outcome, execution_id)]
    if event.seq < start:
        return []
    first = event.from_chunk if isinstance(event, GapEvent) else event.seq
    if first > start and reader.reread():
        return None
    reader.chunk, reader.rereading = event.seq, False
    if isinstance(event, GapEvent):  # with the chunks read past before it, if any
        return [GapEvent(seq=event.seq, from_chunk=start, to_chunk=event.seq)]
    lines: list[Line] = [GapEvent(seq=first - 1, from_chunk=start, to_chunk=first - 1)] if first > start else []
    if isinstance(event, OverEvent):
        reader.over = True
        return [*lines, OutputEvent(seq=event.seq, stream="stderr", text=_OVER)]
    return [*lines, event]


def _result(outcome: ExecutionOutcome, execution_id: str) -> ExecutionResult:
    return ExecutionResult(**outcome.model_dump(), execution_id=execution_id)


def _lost(execution_id: str) -> str:
    return (
        f"the session store lost the records of execution {execution_id} (it restarted without its data): it may "
        "have run, in part or in full; its outcome is unknown"
    )


def _ended(reason: str) -> tuple[str, str]:
    """The events of a session's end: for an execution still waiting (never run), for one running."""
    return (
        EndedEvent(code="session_ended", state="not_taken", reason=reason).model_dump_json(),
        EndedEvent(code="session_ended", state="interrupted", reason=reason).model_dump_json(),
    )
