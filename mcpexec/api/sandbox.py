"""What shapes a sandbox and bounds what its code may do, shared by an AgentTask's spec and a SandboxPool's
template: the RuntimeClass, resources and skills volume (the pod), and the servers, tool policy and PII additions
(enforced by the gateway), and the calls a person must approve.
"""

from __future__ import annotations

from typing import Annotated, Self

from kubernetes.utils.quantity import parse_quantity
from pydantic import Field, StrictBool, model_validator

from mcpexec.api.approval import ApprovalPolicy
from mcpexec.api.egress import EgressPolicy
from mcpexec.api.meta import DNS1123_LABEL, Dns1123Label, Quantity, SpecModel, quantity_within
from mcpexec.api.pii import TaskPii


class ToolPolicy(SpecModel):
    """Glob patterns over `server/tool`; deny wins over allow; an empty allow list allows all."""

    allow: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)
    deny: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)


# A task's /workspace bound when none is configured: the operator's emptyDir sizeLimit (the chart's
# tasks.workspaceSize), and `mcpexec run --workspace-size`'s default.
DEFAULT_WORKSPACE_SIZE = "1Gi"
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


class SandboxPolicy(SpecModel):
    """What the code in a sandbox may reach through the gateway: tools, and public hosts through its proxy."""

    mcp_servers: list[Dns1123Label] = Field(default_factory=list, alias="mcpServers", max_length=32)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    pii: TaskPii = Field(default_factory=TaskPii)
    egress: EgressPolicy = Field(default_factory=EgressPolicy)
    # Calls a person must approve, added to what the admin and the servers' owners ask for (never taken away).
    approval: ApprovalPolicy = Field(default_factory=ApprovalPolicy)


class SandboxTemplate(SandboxPolicy):
    """A sandbox: its policy, and the pod that runs it."""

    runtime_class_name: Dns1123Label = Field(default="gvisor", alias="runtimeClassName")
    resources: Resources = Field(default_factory=Resources)
    skills: SkillsSpec | None = None

    def policy(self) -> SandboxPolicy:
        return SandboxPolicy(**{name: getattr(self, name) for name in SandboxPolicy.model_fields})
