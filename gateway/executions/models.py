"""The shapes that cross the session broker: a caller's request, what the runtime is given, what it sends back (its
output while it runs, its outcome at the end), what a caller reads (output events, then the outcome) and what a
caller is told of an execution that has no outcome for it (its state)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field

from gateway.errors import ErrorBody
from mcpexec.api.approval import PlannedCall
from runtime.output import truncate

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 3600.0
# An AgentSession's default idle timeout, and the one of a session whose host does not say (mcpexec serve): how long
# its runtime keeps trying to deliver an execution's output and outcome through a gateway or store outage.
DEFAULT_IDLE_TIMEOUT_SECONDS = 900.0
# The runtime keeps about 20,000 characters of each stream, head and tail; whatever a runtime posts beyond this
# (its code holds the session's token and can post for itself) is cut here, head and tail kept.
MAX_STREAM_CHARACTERS = 32_000
MAX_ERROR_CHARACTERS = 4_000
# One post of streamed output from the runtime (it sends what was printed since its last post, a few times a second).
MAX_CHUNK_CHARACTERS = 64_000
# The highest chunk number (and `after` of a re-attaching stream): far past any execution's, well within Redis'.
MAX_CHUNKS = 1 << 40
# An execution id: the gateway's (32 hex digits), or the caller's own (the `Mcpexec-Execution-Id` request header).
EXECUTION_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"

Stream = Literal["stdout", "stderr"]
# What a caller is told of an execution: `not_taken` (never run and never will be: safe to send again), `waiting`
# (queued), `running` (taken by the runtime: it may have run), `finished` (its outcome is there), `interrupted` (it
# was running when its session ended: it may have run in part, and has no outcome), `lost` (the session store lost
# its records: it may have run, its outcome is unknown), `unknown` (the store could not be asked).
ExecutionState = Literal["not_taken", "waiting", "running", "finished", "interrupted", "lost", "unknown"]


# How an execution's calls that need approval are approved: one by one (`call`), or as a plan (docs/approvals.md).
Approval = Literal["call", "plan"]


class ExecuteRequest(BaseModel):
    """A caller's code for its session; `approval: plan`: run it as a plan (a dry run, the recorded calls approved at
    once, then the real run)."""

    model_config = ConfigDict(populate_by_name=True)

    code: Annotated[str, Field(min_length=1)]
    timeout_seconds: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds"
    )
    approval: Approval = "call"


class Execution(BaseModel):
    """What the session's runtime gets from `GET /v1/session/next`; `stream`: its caller reads the output as it is
    printed (the runtime posts it to `/v1/session/executions/{id}/output` while the code runs);
    `idleTimeoutSeconds`: the session's idle timeout, for as long as the runtime keeps trying to deliver its output
    and outcome when the gateway cannot take them; `approval: plan`: the runtime runs the code as a plan."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    code: str
    timeout_seconds: float = Field(alias="timeoutSeconds")
    stream: bool = False
    idle_timeout_seconds: float = Field(default=DEFAULT_IDLE_TIMEOUT_SECONDS, alias="idleTimeoutSeconds")
    approval: Approval = "call"


class ExecutionOutcome(BaseModel):
    """An execution's outcome: each stream bounded head and tail; `error` is the exception the snippet ended with
    (None: it ran to its end)."""

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


class OutcomePost(ExecutionOutcome):
    """The runtime's post of an outcome; `chunks`: how many output chunks it numbered for a streaming execution,
    so that those that never reached the gateway are said to be missing before the outcome."""

    chunks: Annotated[int, Field(ge=0)] = 0


class ExecutionResult(ExecutionOutcome):
    """A caller's outcome, with the id of its execution."""

    execution_id: str = Field(alias="executionId")


class OutputChunk(BaseModel):
    """Text one stream printed, in the order it was printed; `seq` numbers the runtime's chunks of one execution
    from 1, so a post sent again is taken once, and one that never came is seen missing."""

    stream: Stream
    text: Annotated[str, Field(max_length=MAX_CHUNK_CHARACTERS)]
    seq: Annotated[int, Field(ge=1, le=MAX_CHUNKS)]


class OutputPost(BaseModel):
    """The runtime's post of what an execution printed since its last one."""

    chunks: Annotated[list[OutputChunk], Field(min_length=1, max_length=64)]


class OutputEvent(BaseModel):
    """A streaming caller's line: text an execution printed; `seq` its place in the execution's stream."""

    kind: Literal["output"] = "output"
    seq: int = 0
    stream: Stream
    text: str


class GapEvent(BaseModel):
    """A streaming caller's line where output was lost: the runtime's chunks `fromChunk`..`toChunk` never reached the
    session store (the gateway or its store could not be reached for longer than the runtime kept trying, or the
    store lost them when it restarted); `seq` is the last of them."""

    model_config = ConfigDict(populate_by_name=True)

    kind: Literal["gap"] = "gap"
    seq: int
    from_chunk: int = Field(alias="fromChunk")
    to_chunk: int = Field(alias="toChunk")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def message(self) -> str:
        return (
            f"output chunks {self.from_chunk}-{self.to_chunk} were lost on the way (the gateway or its session store "
            "could not take them); the outcome keeps the head and tail of each stream"
        )


class OverEvent(BaseModel):
    """Where the execution's streamed output went past its bound (chunk `seq`): nothing more is streamed; a caller
    reads it as a line of stderr saying so."""

    kind: Literal["over"] = "over"
    seq: int


class OutcomeEvent(BaseModel):
    """The last line of a stream: the execution's outcome, with its id."""

    kind: Literal["outcome"] = "outcome"
    outcome: ExecutionResult


class StoredOutcome(BaseModel):
    """The outcome as stored: with how many chunks of output the runtime numbered before it (a reader that was given
    fewer missed some)."""

    kind: Literal["outcome"] = "outcome"
    outcome: ExecutionOutcome
    chunks: int = 0


class EndedEvent(BaseModel):
    """The execution ended without an outcome: its session ended (`session_ended`), or its caller gave up on it
    before the runtime took it (`execution_cancelled`); `state` is what became of it."""

    kind: Literal["ended"] = "ended"
    code: Literal["session_ended", "execution_cancelled"] = "session_ended"
    state: Literal["not_taken", "interrupted"] = "not_taken"
    reason: str


class ExecutionErrorBody(ErrorBody):
    """An execute API error about an execution the gateway gave an id: what became of it."""

    model_config = ConfigDict(populate_by_name=True)

    execution_id: str = Field(alias="executionId")
    state: ExecutionState


class ExecutionErrorResponse(BaseModel):
    error: ExecutionErrorBody


class ExecutionLine(BaseModel):
    """The first line of a stream: the execution's id, to re-attach with."""

    model_config = ConfigDict(populate_by_name=True)

    kind: Literal["execution"] = "execution"
    execution_id: str = Field(alias="executionId")


class ErrorEvent(BaseModel):
    """The last line of a stream that ended without an outcome (timed out, its session ended, the store could not be
    reached for too long): the error, with the execution's state when it has one."""

    kind: Literal["error"] = "error"
    error: ExecutionErrorBody | ErrorBody


class ApprovalEvent(BaseModel):
    """A streaming caller's line when a call of the session (the execution's, while it runs) is held for a person's
    approval (`pending`: its tool, digest and tokenized arguments; a plan's with its `calls`) or decided (`approved`,
    `denied`, `expired`: by whom, why). Answered through the approval API (or `kubectl mcpexec`)."""

    kind: Literal["approval"] = "approval"
    state: Literal["pending", "approved", "denied", "expired"]
    tool: str
    digest: str
    arguments: str | None = None
    calls: list[PlannedCall] | None = None
    approver: str | None = None
    reason: str | None = None


class ExecutionStatus(BaseModel):
    """What a caller re-attaching to an execution is told (and a 202 of the execute API): its state, its outcome once
    finished."""

    model_config = ConfigDict(populate_by_name=True)

    execution_id: str = Field(alias="executionId")
    state: ExecutionState
    message: str | None = None
    outcome: ExecutionResult | None = None


StoredEvent = Annotated[OutputEvent | GapEvent | OverEvent | StoredOutcome | EndedEvent, Field(discriminator="kind")]
EVENT: TypeAdapter[OutputEvent | GapEvent | OverEvent | StoredOutcome | EndedEvent] = TypeAdapter(StoredEvent)
