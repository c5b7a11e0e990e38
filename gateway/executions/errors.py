"""An execution's failures, each saying what became of the execution (its state and id), so a caller knows whether
sending it again could run it twice: `not_taken` never ran; `waiting`, `running`, `interrupted`, `lost` and
`unknown` may have (re-attach with the id to learn more); a finished one is an outcome, never an error."""

from __future__ import annotations

from gateway.errors import (
    ExecutionTimeout,
    GatewayError,
    SessionEnded,
    SessionStoreUnavailable,
)
from gateway.executions.models import ExecutionErrorBody, ExecutionErrorResponse, ExecutionState, ExecutionStatus


class ExecutionError(GatewayError):
    """A failure of the execution `execution_id`, which was `state` when it was answered."""

    def __init__(self, message: str, execution_id: str, state: ExecutionState) -> None:
        super().__init__(message)
        self.execution_id = execution_id
        self.state: ExecutionState = state

    def body(self) -> ExecutionErrorBody:
        return ExecutionErrorBody(
            code=self.code, message=self.message, execution_id=self.execution_id, state=self.state
        )

    def answer(self) -> ExecutionErrorResponse:
        return ExecutionErrorResponse(error=self.body())

    def describe(self) -> str:
        """One line for a caller that reads text (an MCP tool error)."""
        return f"{self.code} (execution {self.execution_id}, state {self.state}): {self.message}"


class ExecutionStoreUnavailable(ExecutionError, SessionStoreUnavailable):
    """The store could not be reached before anything was queued: nothing ran (state `not_taken`), send it again."""

    retry_after = 1


class ExecutionTimedOut(ExecutionError, ExecutionTimeout):
    """No outcome within the execution's limit and a grace: cancelled if the runtime had not taken it yet
    (`not_taken`), else still `running`."""


class ExecutionSessionEnded(ExecutionError, SessionEnded):
    """The session ended while the execution waited (`not_taken`) or ran (`interrupted`)."""


class ExecutionCancelled(ExecutionError):
    """Its caller gave up on it before the runtime took it: it never ran (a re-attaching caller learns this)."""

    status, code = 409, "execution_cancelled"


class ExecutionLost(ExecutionError):
    """The session store lost the execution's records (it restarted without its data): it may have run, its outcome
    is unknown."""

    status, code = 502, "execution_lost"


class ExecutionPending(ExecutionError):
    """The caller's wait ended without an outcome while the execution may still run or have run (the store could not
    be reached for too long): answered as 202 with its state, to re-attach to."""

    status, code = 202, "execution_pending"

    def status_body(self) -> ExecutionStatus:
        return ExecutionStatus(execution_id=self.execution_id, state=self.state, message=self.message)


class ExecutionIdInUse(GatewayError):
    """The caller's execution id names an execution of this session with other code: nothing was queued."""

    status, code = 409, "execution_id_in_use"


class InvalidExecutionId(GatewayError):
    """A caller's own execution id is not 8 to 64 letters, digits, `-` or `_`."""

    status, code = 422, "invalid_request"
