"""The status of each kind as pydantic models: what the operator (and, for MCPServers and a session's activity, the
gateway) writes to the status subresource, and reads back.

Field names are the CRDs' (camelCase aliases); a unit test keeps every model in step with its CRD's status schema.
Every field is optional, as on the wire: a status read back may lack any of them, and `wire()` leaves out what is
not set, so a written status serializes exactly as the dicts it replaced.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from mcpexec.api.agentsession import SessionPhase
from mcpexec.api.agenttask import Phase
from mcpexec.api.approval import ApprovalsStatus
from mcpexec.api.conditions import Condition
from mcpexec.api.result import RuntimeResult
from mcpexec.api.sandboxpool import Claim, LaunchType
from mcpexec.api.usage import Usage


class Status(BaseModel):
    """A status subresource. Fields the CRD does not declare (the API server prunes them anyway) are ignored."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    conditions: list[Condition] | None = None

    @classmethod
    def of(cls, document: dict[str, Any]) -> Self:
        """The status of a resource document (an empty one when it has none yet). Its writer may be an older
        operator: a field it wrote that this version no longer knows, at any depth (e.g. a policy field in
        `claim`, whose models reject unknown fields where users write them), is ignored, not refused."""
        return cls.model_validate(document.get("status") or {}, extra="ignore")

    def wire(self) -> dict[str, Any]:
        """The status as JSON: camelCase, the fields not set left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class TaskReport(RuntimeResult):
    """`status.report`: the result the task's own sandbox reported through the gateway (the gateway writes it, once,
    while the task is unfinished), the termination message's document ahead of the pod's exit; the operator folds
    it into the phase (controller/reports.py)."""

    model_config = ConfigDict(populate_by_name=True)

    reported_at: str = Field(alias="reportedAt")


class Traced(Status):
    """A task's or session's trace (docs/observability.md): its id, and the span its sandbox's spans go under, set by
    the operator when it launches or claims the sandbox with tracing on."""

    trace_id: str | None = Field(default=None, alias="traceId", pattern=r"^[0-9a-f]{32}$")
    traceparent: str | None = Field(default=None, pattern=r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


class AgentTaskStatus(Traced):
    phase: Phase | None = None
    mode: Literal["prompt", "code"] | None = None
    job_name: str | None = Field(default=None, alias="jobName")
    pod_name: str | None = Field(default=None, alias="podName")
    launch_type: LaunchType | None = Field(default=None, alias="launchType")
    claim: Claim | None = None
    start_time: str | None = Field(default=None, alias="startTime")
    completion_time: str | None = Field(default=None, alias="completionTime")
    duration: str | None = None
    result: str | None = None
    usage: Usage | None = None
    report: TaskReport | None = None
    children_deleted_at: str | None = Field(default=None, alias="childrenDeletedAt")
    approvals: ApprovalsStatus | None = None

    @property
    def finished(self) -> bool:
        return self.phase is not None and self.phase.finished


class SandboxPoolStatus(Status):
    replicas: int | None = None
    ready_replicas: int | None = Field(default=None, alias="readyReplicas")
    claimed_replicas: int | None = Field(default=None, alias="claimedReplicas")
    selector: str | None = None
    template_hash: str | None = Field(default=None, alias="templateHash")
    sandbox_uids: list[str] | None = Field(default=None, alias="sandboxUIDs")


class SessionUsage(BaseModel):
    """What a session used, as the gateway counted it."""

    executions: int | None = None


class AgentSessionStatus(Traced):
    phase: SessionPhase | None = None
    reason: str | None = None
    pod_name: str | None = Field(default=None, alias="podName")
    claim: Claim | None = None
    start_time: str | None = Field(default=None, alias="startTime")
    expires_at: str | None = Field(default=None, alias="expiresAt")
    last_activity: str | None = Field(default=None, alias="lastActivity")
    usage: SessionUsage | None = None
    approvals: ApprovalsStatus | None = None


class ToolSummary(BaseModel):
    """One tool of an MCPServer, as its status lists it."""

    name: str
    description: str | None = None


class MCPServerStatus(Status):
    """Written by the gateway as a merge patch (gateway/cluster/server_status.py): a field set to None there removes
    it, so its patch is `patch()`, not `wire()`."""

    tool_count: int | None = Field(default=None, alias="toolCount")
    tools: list[ToolSummary] | None = None

    def patch(self) -> dict[str, Any]:
        """A JSON merge patch of the status: the fields set, a field set to None removed."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
