"""The reasons mcpexec writes: in conditions and status (the CRDs' `reason` fields), and on Kubernetes Events.

They are public names (kstatus, `kubectl wait`, GitOps health checks and people's alerts read them): one place lists
them, so a reason is never spelled twice.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """A condition's (or an AgentSession's `status.reason`) CamelCase reason."""

    # Refusals: the resource cannot run (yet, or for good).
    INVALID_SPEC = "InvalidSpec"
    RUNTIME_CLASS_NOT_FOUND = "RuntimeClassNotFound"
    MCP_SERVER_NOT_FOUND = "MCPServerNotFound"
    SANDBOX_POOL_NOT_FOUND = "SandboxPoolNotFound"
    SANDBOX_POOL_INVALID = "SandboxPoolInvalid"
    POLICY_WIDENED = "PolicyWidened"
    POOL_EMPTY = "PoolEmpty"
    # The run-once ledger (controller/ledger.py): a task whose name already ran.
    ALREADY_RAN = "AlreadyRan"
    SPEC_CHANGED_AFTER_RUN = "SpecChangedAfterRun"
    # An AgentTask's (or an AgentSession's) sandbox.
    JOB_CREATED = "JobCreated"
    SANDBOX_CLAIMED = "SandboxClaimed"
    SANDBOX_LOST = "SandboxLost"
    # How an AgentTask finished (DeadlineExceeded is also the Job's own reason for it).
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    # A SandboxPool's idle sandboxes.
    STARTING = "Starting"
    READY = "Ready"
    # How an AgentSession ended.
    SANDBOX_GONE = "SandboxGone"
    IDLE_TIMEOUT = "IdleTimeout"
    MAX_LIFETIME = "MaxLifetime"
    # An MCPServer, as the gateway sees it.
    PROBING = "Probing"
    TOOLS_LISTED = "ToolsListed"
    UNREACHABLE = "Unreachable"
    NOT_SERVED = "NotServed"


class EventReason(StrEnum):
    """A Kubernetes Event's reason (an AgentTask's phase changes are Events too, their reason the phase)."""

    CLAIMED = "Claimed"
    REFILLED = "Refilled"
    ENDED = "Ended"
