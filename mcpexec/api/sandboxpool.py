"""The SandboxPool resource: warm sandboxes, started before any task needs one, each claimed by one AgentTask
(`spec.poolRef`) and never reused.

A pooled task runs in a pod the pool started from its template, so the template sets the sandbox's shape (the task
names none of its own) and bounds its policy: the task may narrow the servers and tools, never widen them; the
gateway enforces both the task's policy and the template's.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictInt

from mcpexec.api import egress
from mcpexec.api.agenttask import AgentTaskSpec
from mcpexec.api.meta import MAX_POOL_NAME, Resource, SpecModel
from mcpexec.api.sandbox import SandboxPolicy, SandboxTemplate, ToolPolicy

MAX_REPLICAS = 100


class WhenEmpty(StrEnum):
    """What a task does when the pool has no idle sandbox: run as a cold Job now, or wait for one."""

    COLD = "Cold"
    WAIT = "Wait"


class SandboxPoolSpec(SpecModel):
    replicas: Annotated[StrictInt, Field(ge=0, le=MAX_REPLICAS)] = 1
    template: SandboxTemplate = Field(default_factory=SandboxTemplate)
    when_empty: WhenEmpty = Field(default=WhenEmpty.COLD, alias="whenEmpty")


class SandboxPool(Resource):
    kind: Literal["SandboxPool"]
    spec: SandboxPoolSpec

    max_name: ClassVar[int] = MAX_POOL_NAME


def template_hash(template: SandboxTemplate) -> str:
    """Names a template's content: idle pods made from another one are replaced."""
    canonical = json.dumps(template.model_dump(mode="json", by_alias=True), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def _literal(pattern: str) -> bool:
    return not any(char in pattern for char in "*?[")


def _allows(policy: ToolPolicy, qualified: str) -> bool:
    """Whether a tool policy allows `server/tool` (the gateway's rule: deny wins, an empty allow list allows all)."""
    if any(fnmatchcase(qualified, pattern) for pattern in policy.deny):
        return False
    return not policy.allow or any(fnmatchcase(qualified, pattern) for pattern in policy.allow)


def widening(template: SandboxTemplate, spec: AgentTaskSpec) -> list[str]:
    """How a task's spec asks for more than the pool's template allows (empty: it fits).

    The gateway enforces the template's policy and the task's together, so whatever a task writes it gets no more
    than the template; this check refuses, before a sandbox is claimed, what can be seen to ask for more: a server
    the template does not list, a tool named outright that the template does not allow, egress beyond the template's.
    """
    reasons = [
        f"spec.mcpServers: {name!r} is not in the pool's template" for name in spec.mcp_servers
        if name not in template.mcp_servers
    ]  # fmt: skip
    reasons += [
        f"spec.tools.allow: {pattern!r} is not allowed by the pool's template"
        for pattern in spec.tools.allow
        if _literal(pattern) and not _allows(template.tools, pattern)
    ]
    return reasons + egress.widening(spec.egress, [("the pool's template", template.egress)])


def within(ceiling: SandboxPolicy, server: str, tool: str | None = None) -> bool:
    """Whether a template's policy (the ceiling of a pooled task) lets a task see `server`, or call `server/tool`."""
    if server not in ceiling.mcp_servers:
        return False
    return tool is None or _allows(ceiling.tools, f"{server}/{tool}")


def pooled_spec(template: SandboxTemplate, spec: AgentTaskSpec) -> AgentTaskSpec:
    """A pooled task's spec with the pool's sandbox shape: what a cold Job runs it in when no warm sandbox is
    free, the same pod a warm one would have been."""
    shape = {"runtime_class_name", "resources", "skills"}
    return spec.model_copy(update={field: getattr(template, field) for field in shape})


class LaunchType(StrEnum):
    WARM = "Warm"
    COLD = "Cold"


class Claim(SpecModel):
    """`status.claim` of a pooled task, written by the operator only (the status subresource) before the task's code
    can start: the template's policy when the task was admitted (its ceiling, whatever becomes of the pool later) and,
    when a warm sandbox runs it, that pod, which the gateway then serves as this task. A pooled task that ran cold
    (no idle sandbox) has no pod here: its Job's own ServiceAccount identifies it."""

    pool: str
    policy: SandboxPolicy
    pod_name: str | None = Field(default=None, alias="podName")
    pod_uid: str | None = Field(default=None, alias="podUID")
    # From the resource's creation to the claim, as the operator's claim-latency metric measures it (creationTimestamp
    # has whole seconds, so this reads up to 1 s more than the wait).
    claim_seconds: float | None = Field(default=None, alias="claimSeconds")
