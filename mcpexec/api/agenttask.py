"""The AgentTask resource as pydantic models.

One definition serves the operator, the gateway and `mcpexec run`; `crds/*.yaml` is the API server's
copy of the same shape, and a unit test keeps the two in step.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from kubernetes.utils.quantity import parse_quantity
from pydantic import Field, StrictBool, StrictInt, model_validator

from mcpexec.api.meta import DNS1123_LABEL, Dns1123Label, Quantity, Resource, SpecModel, quantity_within
from mcpexec.api.pii import TaskPii

# Children are named `mcpexec-<task>`; 48 keeps them and the Job's pods within DNS-1123 label limits.
MAX_TASK_NAME = 48


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"

    @property
    def finished(self) -> bool:
        return self in (Phase.SUCCEEDED, Phase.FAILED, Phase.TIMED_OUT)


class ToolPolicy(SpecModel):
    """Glob patterns over `server/tool`; deny wins over allow; an empty allow list allows all."""

    allow: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)
    deny: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)


# /skills of a task that names no skills owner: the run's own, gone with it (an emptyDir in the cluster).
SCRATCH_SKILLS_SIZE = "64Mi"


class SkillsSpec(SpecModel):
    """Persistent skills on a PVC named `skills-<owner>`; it outlives the tasks that use it."""

    owner: Annotated[str, Field(pattern=DNS1123_LABEL, min_length=1, max_length=56)]
    read_only: StrictBool = Field(default=False, alias="readOnly")
    size: Quantity = "1Gi"
    storage_class_name: str | None = Field(default=None, alias="storageClassName")

    @model_validator(mode="after")
    def _size_bounded(self) -> Self:
        quantity_within(self.size, "0", "1Ti", False, "spec.skills.size")
        return self

    @property
    def claim_name(self) -> str:
        return f"skills-{self.owner}"


class ResourceList(SpecModel):
    """Bounds match the CRD's CEL rules, so `mcpexec run` rejects what `kubectl apply` would."""

    cpu: Quantity | None = None
    memory: Quantity | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        if self.cpu is not None:
            # 10m: the kernel's smallest CFS quota (1ms per 100ms period); below it a limit cannot be enforced as
            # written (the kubelet raises it to 10m, runsc's cgroup write fails). A floor, not advice: under
            # gVisor (ptrace) a hello task took ~100s at 10m, ~5s at 100m.
            quantity_within(self.cpu, "10m", "64", True, "cpu")
        if self.memory is not None:
            quantity_within(self.memory, "16Mi", "256Gi", True, "memory")
        return self


class Resources(SpecModel):
    requests: ResourceList = Field(default_factory=lambda: ResourceList(cpu="100m", memory="256Mi"))
    limits: ResourceList = Field(default_factory=lambda: ResourceList(cpu="1", memory="512Mi"))

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Self:
        for name in ("cpu", "memory"):
            request, limit = getattr(self.requests, name), getattr(self.limits, name)
            if request is not None and limit is not None and parse_quantity(request) > parse_quantity(limit):
                raise ValueError("spec.resources.requests must not exceed spec.resources.limits")
        return self


class AgentTaskSpec(SpecModel):
    """Exactly one of `prompt` (agent mode) or `code` (direct mode)."""

    prompt: Annotated[str, Field(min_length=1, max_length=100_000)] | None = None
    code: Annotated[str, Field(min_length=1, max_length=200_000)] | None = None
    model: Annotated[str, Field(max_length=200)] | None = None
    max_turns: Annotated[StrictInt, Field(ge=1, le=100)] = Field(default=10, alias="maxTurns")
    mcp_servers: list[Dns1123Label] = Field(default_factory=list, alias="mcpServers", max_length=32)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    skills: SkillsSpec | None = None
    pii: TaskPii = Field(default_factory=TaskPii)
    resources: Resources = Field(default_factory=Resources)
    timeout_seconds: Annotated[StrictInt, Field(ge=1, le=86_400)] = Field(default=600, alias="timeoutSeconds")
    ttl_seconds_after_finished: Annotated[StrictInt, Field(ge=0, le=2_592_000)] | None = Field(
        default=None, alias="ttlSecondsAfterFinished"
    )
    runtime_class_name: Dns1123Label = Field(default="gvisor", alias="runtimeClassName")

    @model_validator(mode="after")
    def _exactly_one_mode(self) -> Self:
        if (self.prompt is None) == (self.code is None):
            raise ValueError("exactly one of spec.prompt (agent mode) or spec.code (direct mode) must be set")
        if self.model is not None and self.prompt is None:
            raise ValueError("spec.model only applies to agent mode (spec.prompt)")
        return self

    @property
    def mode(self) -> Literal["prompt", "code"]:
        return "prompt" if self.prompt is not None else "code"


class AgentTask(Resource):
    """An AgentTask document, as `kubectl apply` and `mcpexec run` read it."""

    kind: Literal["AgentTask"]
    spec: AgentTaskSpec

    @model_validator(mode="after")
    def _name_fits_children(self) -> Self:
        if len(self.metadata.name) > MAX_TASK_NAME:
            raise ValueError(f"metadata.name must be at most {MAX_TASK_NAME} characters")
        return self

    @property
    def task_id(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


def parse_agenttask(document: dict[str, Any]) -> AgentTask:
    """Validate one AgentTask document; raises pydantic.ValidationError with field paths."""
    return AgentTask.model_validate(document)


def runtime_task_config(namespace: str, name: str, uid: str, spec: AgentTaskSpec) -> dict[str, Any]:
    """The runtime's task.json (docs/contracts.md), the same from the operator and from `mcpexec run`."""
    config: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "mode": spec.mode,
        "maxTurns": spec.max_turns,
        "timeoutSeconds": spec.timeout_seconds,
    }
    for key, value in (("code", spec.code), ("prompt", spec.prompt), ("model", spec.model)):
        if value is not None:
            config[key] = value
    return config
