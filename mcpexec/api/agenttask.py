"""The AgentTask resource as pydantic models.

One definition serves the operator, the gateway and `mcpexec run`; `crds/*.yaml` is the API server's
copy of the same shape, and a unit test keeps the two in step.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, StrictInt, model_validator

from mcpexec.api.approval import ApprovalMode, TaskApproval
from mcpexec.api.meta import DNS1123_LABEL, MAX_POOL_NAME, Resource, SpecModel
from mcpexec.api.sandbox import SandboxTemplate
from runtime.contract import SESSION_MODE, TRACEPARENT_KEY

# Children are named `mcpexec-<task>`; 48 keeps them and the Job's pods within DNS-1123 label limits.
MAX_TASK_NAME = 48
# The longest a task may run (spec.timeoutSeconds), so the longest a run stays unfinished.
MAX_TIMEOUT_SECONDS = 86_400


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"

    @property
    def finished(self) -> bool:
        return self in (Phase.SUCCEEDED, Phase.FAILED, Phase.TIMED_OUT)


POOLED_SHAPE_MESSAGE = (
    "a task with spec.poolRef runs in the pool's sandbox: spec.runtimeClassName, spec.resources and spec.skills "
    "come from the SandboxPool's template"
)


class PoolRef(SpecModel):
    """The SandboxPool (in the task's namespace) whose warm sandbox runs the task."""

    name: Annotated[str, Field(pattern=DNS1123_LABEL, min_length=1, max_length=MAX_POOL_NAME)]


class AgentTaskSpec(SandboxTemplate):
    """Exactly one of `prompt` (agent mode) or `code` (direct mode). The sandbox's shape and policy fields are
    SandboxTemplate's; with `poolRef`, the pool's template sets the shape and bounds the policy."""

    prompt: Annotated[str, Field(min_length=1, max_length=100_000)] | None = None
    code: Annotated[str, Field(min_length=1, max_length=200_000)] | None = None
    model: Annotated[str, Field(max_length=200)] | None = None
    max_turns: Annotated[StrictInt, Field(ge=1, le=100)] = Field(default=10, alias="maxTurns")
    timeout_seconds: Annotated[StrictInt, Field(ge=1, le=MAX_TIMEOUT_SECONDS)] = Field(
        default=600, alias="timeoutSeconds"
    )
    pool_ref: PoolRef | None = Field(default=None, alias="poolRef")
    ttl_seconds_after_finished: Annotated[StrictInt, Field(ge=0, le=2_592_000)] | None = Field(
        default=None, alias="ttlSecondsAfterFinished"
    )
    approval: TaskApproval = Field(default_factory=TaskApproval)

    @model_validator(mode="after")
    def _exactly_one_mode(self) -> Self:
        if (self.prompt is None) == (self.code is None):
            raise ValueError("exactly one of spec.prompt (agent mode) or spec.code (direct mode) must be set")
        if self.model is not None and self.prompt is None:
            raise ValueError("spec.model only applies to agent mode (spec.prompt)")
        if self.approval.mode == ApprovalMode.PLAN and self.code is None:
            raise ValueError(
                "spec.approval.mode: plan runs the code twice (a dry run, then the approved run): direct mode "
                "(spec.code) only"
            )
        return self

    @model_validator(mode="after")
    def _pooled_shape_is_the_pools(self) -> Self:
        if self.pool_ref is not None and self.model_fields_set & {"runtime_class_name", "resources", "skills"}:
            raise ValueError(POOLED_SHAPE_MESSAGE)
        return self

    @property
    def mode(self) -> Literal["prompt", "code"]:
        return "prompt" if self.prompt is not None else "code"


class AgentTask(Resource):
    """An AgentTask document, as `kubectl apply` and `mcpexec run` read it."""

    kind: Literal["AgentTask"]
    spec: AgentTaskSpec

    max_name: ClassVar[int] = MAX_TASK_NAME

    @property
    def task_id(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


def parse_agenttask(document: dict[str, Any]) -> AgentTask:
    """Validate one AgentTask document; raises pydantic.ValidationError with field paths."""
    return AgentTask.model_validate(document)


def runtime_task_config(
    namespace: str, name: str, uid: str, spec: AgentTaskSpec, session: bool = False, traceparent: str | None = None
) -> dict[str, Any]:
    """The runtime's task.json (docs/contracts.md), the same from the operator, `mcpexec run` and a pool's assignment.
    A `session`'s: mode "session" and no code (the runtime serves executions: runtime/session.py). `traceparent`: the
    trace the runtime continues (docs/observability.md)."""
    config: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "mode": SESSION_MODE if session else spec.mode,
        "maxTurns": spec.max_turns,
        "timeoutSeconds": spec.timeout_seconds,
    }
    for key, value in (("code", None if session else spec.code), ("prompt", spec.prompt), ("model", spec.model)):
        if value is not None:
            config[key] = value
    if spec.egress.granted:  # the runtime points the task's tools at the gateway's egress proxy
        config["egress"] = spec.egress.model_dump()
    if spec.approval.mode == ApprovalMode.PLAN:  # the runtime runs the code as a plan (docs/approvals.md)
        config["approval"] = ApprovalMode.PLAN.value
    if traceparent is not None:
        config[TRACEPARENT_KEY] = traceparent
    return config
