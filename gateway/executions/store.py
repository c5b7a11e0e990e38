"""Where the broker keeps a session's queue of executions and each execution's events: in this process (one gateway,
`mcpexec serve`), or in Redis (a cluster's gateway replicas: a session's runtime may poll one replica while its caller
waits on another, and a caller may re-attach to an execution through any replica).

Every store keeps the same rules. An execution is offered (waiting), taken by the session's runtime (running), then
finished by its outcome, cancelled by its caller (only while waiting: never run), or ended with its session: only a
running execution takes output or an outcome. Every step is idempotent, so a request sent again (by the runtime,
whose posts are resent through an outage, or by a store client after a lost answer) changes nothing twice: an offer
of an id that exists is that execution, output chunks are numbered and taken once each, a second outcome is a
duplicate. Each execution keeps its events (output, a gap where numbered chunks never came, the outcome or the end)
numbered from 1, readable by any number of callers from any point, until its record expires (RETENTION_SECONDS after
it ended). Events are JSON text (the broker's models); a store does not read them, and writes two itself: a gap, and
the mark where streamed output went over its bound. Every output event carries its chunk's number, which a store that
restarted from older data cannot reuse for other text: a reader follows chunk numbers, not event numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

# An execution's streamed output past this many characters is dropped (its outcome still has the head and tail).
MAX_STREAMED_CHARACTERS = 1_000_000
# How long an execution's record and events are kept once it ended (finished, cancelled, interrupted): a caller may
# re-attach to it until then.
RETENTION_SECONDS = 300

StoredState = Literal["waiting", "running", "finished", "cancelled", "ended"]
Offered = Literal["new", "conflict", "waiting", "running", "finished", "cancelled", "ended"]


@dataclass(frozen=True)
class Record:
    """An execution as the store has it: its state, how many events it has had, its time limit."""

    state: StoredState
    events: int
    timeout_seconds: float


class Chunk(NamedTuple):
    """A chunk of output as the store takes it: the runtime's number for it, its length in characters, its event."""

    seq: int
    characters: int
    event: str


def gap_event(first: int, last: int) -> str:
    """The event a store writes where the runtime's chunks `first`..`last` never came (models.GapEvent)."""
    return f'{{"kind":"gap","seq":{last},"fromChunk":{first},"toChunk":{last}}}'


def over_event(seq: int) -> str:
    """The event a store writes in place of chunk `seq`, the one that took the execution's streamed output past
    MAX_STREAMED_CHARACTERS (models.OverEvent); nothing of it or after it is kept."""
    return f'{{"kind":"over","seq":{seq}}}'


class ExecutionStore(Protocol):
    def open(self, scope: str) -> None:
        """The session may take executions from now on (a store without a notion of open sessions ignores it)."""

    async def ready(self, scope: str) -> None:
        """Returns once the session's runtime has asked for an execution."""

    async def check(self, scope: str, execution_id: str, digest: str) -> Offered | None:
        """Reads only: the state of the execution `execution_id` if there is one (`conflict` if its code's digest is
        another), None if there is none. NoSession: the session ended."""

    async def offer(
        self, scope: str, execution_id: str, execution: str, digest: str, timeout_seconds: float, hold_seconds: float
    ) -> Offered:
        """Queue `execution` (waiting) unless `execution_id` exists: `new`, or `conflict` (another code's), or the
        existing one's state (a cancelled one is queued again: `new`). Its records go `hold_seconds` after it is
        offered or taken, RETENTION_SECONDS after it ends. NoSession: the session is not open, or ended."""

    async def take(self, scope: str, wait_seconds: float, taker: str) -> str | None:
        """The next waiting execution, now running (None: none came within `wait_seconds`); a take sent again with
        the same `taker` token gets the execution it took. NoSession: the session is not open, or ended."""

    async def output(self, scope: str, execution_id: str, chunks: list[Chunk]) -> bool:
        """Add the chunks not taken before as events, if the execution is running (False: it is not); a chunk
        numbered past the next expected one is preceded by a gap. Output past MAX_STREAMED_CHARACTERS in all is
        dropped, said once (over_event) in its place."""

    async def finish(
        self, scope: str, execution_id: str, event: str, chunks: int
    ) -> Literal["finished", "duplicate"] | None:
        """Finish a running execution with `event` (preceded by a gap if fewer than `chunks` chunks came):
        `finished`; `duplicate` if it had finished already (the first outcome stands); None if it is not running."""

    async def cancel(self, scope: str, execution_id: str, event: str) -> StoredState | None:
        """Cancel a waiting execution with `event` (it will never run); returns its state after (`cancelled`, or the
        one that kept it from being cancelled), None if there is no such execution."""

    async def record(self, scope: str, execution_id: str) -> Record | None:
        """The execution as stored now (None: no record of it)."""

    async def read(self, scope: str, execution_id: str, after: int, wait_seconds: float) -> list[tuple[int, str]]:
        """The execution's events numbered after `after` (waiting up to `wait_seconds` for one), with their numbers."""

    async def end(self, scope: str, waiting: str, running: str) -> None:
        """End the session: every waiting execution is cancelled with the event `waiting`, every running one ended
        with `running`; the runtime's polls raise NoSession."""

    async def forget(self, scope: str, waiting: str, running: str) -> None:
        """This process no longer serves the scope (its token expired here): a store in this process ends the
        session; a shared store leaves it to the others and to its records' expiry."""

    async def close(self) -> None: ...
