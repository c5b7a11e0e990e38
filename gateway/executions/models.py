"""The shapes that cross the session broker: a caller's request, what the runtime is given, what it sends back (its
output while it runs, its outcome at the end), and what a caller reads (output events, then the outcome)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gateway.errors import ErrorBody
from runtime.output import truncate

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 3600.0
# The runtime keeps about 20,000 characters of each stream, head and tail; whatever a runtime posts beyond this
# (its code holds the session's token and can post for itself) is cut here, head and tail kept.
MAX_STREAM_CHARACTERS = 32_000
MAX_ERROR_CHARACTERS = 4_000
# One post of streamed output from the runtime (it sends what was printed since its last post, a few times a second).
MAX_CHUNK_CHARACTERS = 64_000

Stream = Literal["stdout", "stderr"]


class ExecuteRequest(BaseModel):
    """A caller's code for its session."""

    model_config = ConfigDict(populate_by_name=True)

    code: Annotated[str, Field(min_length=1)]
    timeout_seconds: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_SECONDS)] = Field(
        default=DEFAULT_TIMEOUT_SECONDS, alias="timeoutSeconds"
    )


class Execution(BaseModel):
    """What the session's runtime gets from `GET /v1/session/next`; `stream`: its caller reads the output as it is
    printed (the runtime posts it to `/v1/session/executions/{id}/output` while the code runs)."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    code: str
    timeout_seconds: float = Field(alias="timeoutSeconds")
    stream: bool = False


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


class OutputChunk(BaseModel):
    """Text one stream printed, in the order it was printed."""

    stream: Stream
    text: Annotated[str, Field(max_length=MAX_CHUNK_CHARACTERS)]


class OutputPost(BaseModel):
    """The runtime's post of what an execution printed since its last one."""

    chunks: Annotated[list[OutputChunk], Field(min_length=1, max_length=64)]


class OutputEvent(BaseModel):
    """A streaming caller's line: text an execution printed."""

    kind: Literal["output"] = "output"
    stream: Stream
    text: str


class OutcomeEvent(BaseModel):
    """The last line of a stream: the execution's outcome."""

    kind: Literal["outcome"] = "outcome"
    outcome: ExecutionOutcome


class EndedEvent(BaseModel):
    """The session ended while the execution waited or ran."""

    kind: Literal["ended"] = "ended"
    reason: str


class ErrorEvent(BaseModel):
    """The last line of a stream whose execution failed after its output began (timed out, its session ended)."""

    kind: Literal["error"] = "error"
    error: ErrorBody


Event = Annotated[OutputEvent | OutcomeEvent | EndedEvent, Field(discriminator="kind")]
EVENT: TypeAdapter[OutputEvent | OutcomeEvent | EndedEvent] = TypeAdapter(Event)
