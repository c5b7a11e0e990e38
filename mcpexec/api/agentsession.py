"""The AgentSession resource: an interactive session in a SandboxPool's warm sandbox.

A session claims an idle sandbox of its pool (never a cold one) and keeps it while its user sends code through the
gateway's execute API or MCP front door; it ends when deleted, after idleTimeoutSeconds without an execution, or at
maxLifetimeSeconds, and its sandbox is then gone, never reused. Its policy narrows the pool's as a pooled task's does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, StrictInt, model_validator

from mcpexec.api.agenttask import MAX_TASK_NAME, AgentTask, PoolRef
from mcpexec.api.approval import ApprovalPolicy
from mcpexec.api.egress import EgressPolicy
from mcpexec.api.meta import API_VERSION, Resource, SpecModel
from mcpexec.api.sandbox import ToolPolicy

DEFAULT_IDLE_SECONDS = 900
DEFAULT_LIFETIME_SECONDS = 3600
MAX_LIFETIME_SECONDS = 86_400
# The gateway's view of a session is a task of this code, never run: its code comes through the execute API.
SESSION_CODE = "# an interactive session: its code comes through the execute API"


class SessionPhase(StrEnum):
    PENDING = "Pending"
    READY = "Ready"
    ENDED = "Ended"


class AgentSessionSpec(SpecModel):
    pool_ref: PoolRef = Field(alias="poolRef")
    idle_timeout_seconds: Annotated[StrictInt, Field(ge=1, le=MAX_LIFETIME_SECONDS)] = Field(
        default=DEFAULT_IDLE_SECONDS, alias="idleTimeoutSeconds"
    )
    max_lifetime_seconds: Annotated[StrictInt, Field(ge=1, le=MAX_LIFETIME_SECONDS)] = Field(
        default=DEFAULT_LIFETIME_SECONDS, alias="maxLifetimeSeconds"
    )
    # Narrower than the pool's template, or none (then the template's servers and tools).
    mcp_servers: list[Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]] | None = Field(
        default=None, alias="mcpServers", max_length=32
    )
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    # Narrower than the pool's template, or none (then the template's egress).
    egress: EgressPolicy | None = None
    # Adds to the pool template's calls that need a person's approval, never removes any.
    approval: ApprovalPolicy = Field(default_factory=ApprovalPolicy)

    @model_validator(mode="after")
    def _idle_within_lifetime(self) -> Self:
        if self.idle_timeout_seconds > self.max_lifetime_seconds:
            raise ValueError("spec.idleTimeoutSeconds must not exceed spec.maxLifetimeSeconds")
        return self


class AgentSession(Resource):
    kind: Literal["AgentSession"]
    spec: AgentSessionSpec

    max_name: ClassVar[int] = MAX_TASK_NAME


def session_task(document: dict[str, object], pool_servers: list[str], pool_egress: EgressPolicy) -> AgentTask:
    """The session as the gateway serves it: a pooled task of the session's name, namespace and policy (its
    servers and egress: the session's, else the pool template's), whose code never runs."""
    session = AgentSession.model_validate(document)
    spec = session.spec
    return AgentTask.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "AgentTask",
            "metadata": {"name": session.metadata.name, "namespace": session.metadata.namespace},
            "spec": {
                "code": SESSION_CODE,
                "poolRef": {"name": spec.pool_ref.name},
                "mcpServers": pool_servers if spec.mcp_servers is None else spec.mcp_servers,
                "tools": spec.tools.model_dump(),
                "egress": (pool_egress if spec.egress is None else spec.egress).model_dump(),
                "approval": spec.approval.model_dump(),
                "timeoutSeconds": spec.max_lifetime_seconds,
            },
        }
    )
