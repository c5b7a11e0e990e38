"""What every mcpexec resource shares: the API group, plurals, labels, the gateway audience, name rules.

A leaf: the operator, the gateway and `mcpexec run` import it, and it imports no component.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Self

from kubernetes.utils.quantity import parse_quantity
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

GROUP = "mcpexec.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
AGENTTASK_PLURAL = "agenttasks"
MCPSERVER_PLURAL = "mcpservers"
SANDBOXPOOL_PLURAL = "sandboxpools"
AGENTSESSION_PLURAL = "agentsessions"

# The audience of the token a sandbox shows the gateway (projected in a cluster, minted locally).
GATEWAY_AUDIENCE = "mcpexec-gateway"

# Labels on what the operator creates; the gateway finds a pod's task by TASK_LABEL on its ServiceAccount.
MANAGED_BY = "mcpexec"
MANAGED_LABELS = {"app.kubernetes.io/managed-by": MANAGED_BY}
TASK_LABEL = f"{GROUP}/task"
# A pool sandbox claimed by an AgentSession carries SESSION_LABEL (the session's name) instead of TASK_LABEL.
SESSION_LABEL = f"{GROUP}/session"
SKILLS_OWNER_LABEL = f"{GROUP}/skills-owner"
# A task's creator may continue its own trace into the task's: a W3C traceparent (docs/observability.md).
TRACEPARENT_ANNOTATION = f"{GROUP}/traceparent"
# A SandboxPool's pods, ServiceAccount and NetworkPolicy carry POOL_LABEL; its pods also SANDBOX_STATE_LABEL (idle
# until the operator claims one for a task: then claimed, with the task's TASK_LABEL) and the hash of the template
# they were made from. The claim itself is the task's status (podName, podUID), which only the operator writes.
POOL_LABEL = f"{GROUP}/pool"
SANDBOX_STATE_LABEL = f"{GROUP}/sandbox-state"
TEMPLATE_HASH_LABEL = f"{GROUP}/template-hash"
IDLE, CLAIMED = "idle", "claimed"
# On a task name's run record (controller/ledger.py): the name whose run it records.
RUN_RECORD_LABEL = f"{GROUP}/run-record"
# A pool's children are named `mcpexec-pool-<pool>` and its pods `mcpexec-pool-<pool>-<5 random>`.
MAX_POOL_NAME = 44

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# A Kubernetes quantity (the API server's own grammar, simplified to what users write).
QUANTITY = r"^([0-9]+(\.[0-9]+)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"

Dns1123Label = Annotated[str, Field(pattern=DNS1123_LABEL, min_length=1, max_length=63)]
Quantity = Annotated[str, Field(pattern=QUANTITY, max_length=32)]


class SpecModel(BaseModel):
    """Spec models reject unknown fields, as the CRD's structural schema does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def quantity_within(value: str, low: str, high: str, low_inclusive: bool, what: str) -> None:
    amount = parse_quantity(value)
    above_low = amount >= parse_quantity(low) if low_inclusive else amount > parse_quantity(low)
    if not (above_low and amount <= parse_quantity(high)):
        raise ValueError(f"{what} must be a quantity {'from' if low_inclusive else 'above'} {low} to {high}")


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: Dns1123Label
    namespace: Dns1123Label = "default"
    uid: str | None = None


class Resource(BaseModel):
    """A whole resource document; fields beyond ours (status, managedFields...) are kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: Literal["mcpexec.dev/v1alpha1"] = Field(alias="apiVersion")
    metadata: ObjectMeta
    # The longest name whose children's names (a prefix added) stay DNS-1123 labels.
    max_name: ClassVar[int] = 63

    @model_validator(mode="after")
    def _name_fits_children(self) -> Self:
        if len(self.metadata.name) > self.max_name:
            raise ValueError(f"metadata.name must be at most {self.max_name} characters")
        return self


def validation_message(exc: ValidationError) -> str:
    """A refused spec's errors on one line, each with its field path (for a status condition)."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
