"""Gateway errors: one exception type carrying the HTTP status and the contract's error code."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    """The error shape of every non-2xx `/v1` answer (docs/contracts.md)."""

    error: ErrorBody


class GatewayError(Exception):
    """Raised anywhere below the HTTP layer; the app turns it into `ErrorResponse` with `status`."""

    status = 500
    code = "internal"
    # Seconds after which the same request may simply be sent again (answered as `Retry-After`): set only where
    # nothing reached a tool, so a resend can never run a call twice.
    retry_after: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def response(self) -> ErrorResponse:
        return ErrorResponse(error=ErrorBody(code=self.code, message=self.message))


class Unauthenticated(GatewayError):
    status, code = 401, "unauthenticated"


class Forbidden(GatewayError):
    status, code = 403, "forbidden"


class SandboxNotClaimed(GatewayError):
    """A SandboxPool's sandbox the operator has not claimed for a task: it has no task, so no policy, and may
    reach nothing (it only asks for its assignment)."""

    status, code = 403, "sandbox_not_claimed"


class NotFound(GatewayError):
    status, code = 404, "not_found"


class NoSession(GatewayError):
    """The caller has no open interactive session: it ended, or was never opened (a task's own token)."""

    status, code = 403, "no_session"


class SessionEnded(GatewayError):
    """The interactive session is over (ended by its owner, its sandbox gone): nothing more runs in it."""

    status, code = 410, "session_ended"


class CodeTooLarge(GatewayError):
    """An execution's code is over the gateway's request limit: the same bound as any request to it."""

    status, code = 413, "request_too_large"


class ReportTooLarge(GatewayError):
    """A task's result report over the termination message's bound (runtime/contract.py: RESULT_LIMIT): a result the
    kubelet would not carry either."""

    status, code = 413, "request_too_large"


class TaskStatusUnavailable(GatewayError):
    """The API server did not take a task's result report (unreachable, refusing, slow): the task finishes from its
    termination message instead."""

    status, code = 503, "task_status_unavailable"


class SkillRefused(GatewayError):
    """A skill's seal does not admit loading it in this task (tools/skill_seals.py)."""

    status, code = 403, "skill_refused"


class InvalidArguments(GatewayError):
    status, code = 422, "invalid_arguments"


class RateLimited(GatewayError):
    status, code, retry_after = 429, "rate_limited", 1


class UpstreamError(GatewayError):
    status, code = 502, "upstream_error"


class VaultUnavailable(GatewayError):
    status, code = 503, "pii_vault_unavailable"


class VaultLost(GatewayError):
    """The task's vault no longer holds what its sandbox was handed (Redis lost it, whole or in part, or it expired):
    its tokens could now mean other values, so nothing was sent or minted, and the task cannot go on."""

    status, code = 409, "vault_lost"


class UnknownToken(GatewayError):
    """A token-shaped string of one of the task's entities that its vault never minted: it is refused rather than
    sent on as text (a tool would get `[EMAIL_2]` instead of an address). Nothing was sent."""

    status, code = 409, "unknown_token"


class InvalidVaultMarks(GatewayError):
    """The `Mcpexec-Vault` request header is not what a runtime sends (gateway/pii/vault_marks.py)."""

    status, code = 400, "invalid_vault_marks"


class SessionStoreUnavailable(GatewayError):
    """The store the gateway replicas share sessions' executions through (Redis) cannot be reached: nothing was run."""

    status, code = 503, "session_store_unavailable"


class PiiDetectorUnavailable(GatewayError):
    status, code = 503, "pii_detector_unavailable"


class ResultTooLarge(GatewayError):
    """The tool ran, but its answer is over the gateway's size limit: it is not scanned or passed on."""

    status, code = 502, "result_too_large"


class UnreadableTextPayload(GatewayError):
    """A base64 payload whose media type says text (a resource's `blob`) is not base64 of UTF-8: it cannot be checked
    for personal data, so it is not passed on."""

    status, code = 502, "unreadable_text_payload"


class ServerUnavailable(GatewayError):
    """Not connected (starting, reconnecting, not configured yet): the call was never sent."""

    status, code, retry_after = 503, "server_unavailable", 1


class ServerConnectionLost(GatewayError):
    """The connection broke while the call was out: it may or may not have run, so it is not to be resent."""

    status, code = 502, "server_connection_lost"


class LLMUnavailable(GatewayError):
    status, code = 503, "llm_unavailable"


class ToolTimeout(GatewayError):
    status, code = 504, "tool_timeout"


class ExecutionTimeout(GatewayError):
    """The session's runtime gave no outcome in time (the snippet's own limit, plus a grace for the round trip): the
    snippet may still be running; the session goes on, and runs the next execution once the runtime is free."""

    status, code = 504, "execution_timeout"


class ApprovalPending(GatewayError):
    """The call needs a person's approval and has none yet: it is held, not run. The caller waits for the decision
    (`GET /v1/approvals/{callId}`), then sends the same call again with the same `callId`."""

    status, code = 409, "approval_pending"


class ApprovalDenied(GatewayError):
    """A person denied this exact call (or it is refused as one they denied): it did not run and never will."""

    status, code = 403, "approval_denied"


class ApprovalTimeout(GatewayError):
    """No one decided on the held call before the task's deadline: it did not run."""

    status, code = 408, "approval_timeout"


class ApprovalConsumed(GatewayError):
    """The approved call was taken to run once already (by this call id): it is not run again."""

    status, code = 409, "approval_consumed"


class ApprovalConflict(GatewayError):
    """The call id names another held call, or the identical call is held for another caller: nothing ran."""

    status, code = 409, "approval_conflict"


class ApprovalPlanned(GatewayError):
    """A plan's dry run (`approval: plan`): the call needs a person's approval, so it is recorded in the plan, not
    run. The runtime gives the code a placeholder for its result."""

    status, code = 409, "approval_planned"


class ApprovalNotPlanned(GatewayError):
    """A plan's real run made a call that needs approval and that the approved plan does not hold (or holds fewer
    times): it did not run."""

    status, code = 403, "approval_not_planned"


class AlreadyDecided(GatewayError):
    """A decision on a held call decided before (approved, denied, expired or run): this one changed nothing."""

    status, code = 409, "already_decided"


class ApprovalStoreUnavailable(GatewayError):
    """The held calls' store (Redis) cannot be reached: nothing was run."""

    status, code = 503, "approval_store_unavailable"
