"""Human approval of tool calls: who asks for it, and the shapes people see and answer (docs/approvals.md).

Protection only adds up, as for PII: a call needs a person's approval if the cluster admin's gateway setting says
so (by the tool's MCP annotations), or the MCPServer owner's `spec.approval.tools`, or the pool template's or the
task's (or session's) `spec.approval.tools`. No level can take away what another asked for.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpexec.api.meta import SpecModel

# How many held calls a task's status lists (the count is always whole); how much of a call's tokenized
# arguments a person is shown there and by the approval API.
MAX_PENDING_SHOWN = 20
PREVIEW_LIMIT = 2000
# A call's digest: sha256, hex.
DIGEST_PATTERN = r"^[0-9a-f]{64}$"

Glob = Annotated[str, Field(min_length=1, max_length=253)]


class AnnotationRule(StrEnum):
    """The cluster admin's rules over a tool's MCP annotations (the server's own word, as its tool list says it).
    Hints a tool leaves out count as MCP defines them: `readOnlyHint` false, `destructiveHint` true."""

    DESTRUCTIVE = "destructive"  # may destroy: not read-only, and destructiveHint not false
    NOT_READ_ONLY = "notReadOnly"  # may change anything: readOnlyHint not true


class ServerApproval(SpecModel):
    """An MCPServer owner's: tools (globs over the tool's name) every task must have approved call by call."""

    tools: list[Glob] = Field(default_factory=list, max_length=64)


class ApprovalMode(StrEnum):
    """`call`: each call that needs approval is held until a person decides it. `plan`: the code runs once as a dry
    run (reads run, calls that need approval are recorded, not run), a person approves the recorded set at once,
    then the code runs for real and may make only the approved calls (docs/approvals.md)."""

    CALL = "call"
    PLAN = "plan"


class ApprovalPolicy(SpecModel):
    """A pool template's, a task's or a session's: tools (globs over `server/tool`) whose calls need a person's
    approval, on top of what the admin and the servers' owners ask for."""

    tools: list[Glob] = Field(default_factory=list, max_length=256)


class TaskApproval(ApprovalPolicy):
    """A task's: its tools, and how its calls are approved (`mode`). A session asks for a plan per execution."""

    mode: ApprovalMode = ApprovalMode.CALL


def annotations_ask(rules: frozenset[AnnotationRule], read_only: bool | None, destructive: bool | None) -> bool:
    """Whether the admin's rules ask for approval of a tool with these MCP hints (None: the tool left it out)."""
    if AnnotationRule.NOT_READ_ONLY in rules and read_only is not True:
        return True
    return AnnotationRule.DESTRUCTIVE in rules and read_only is not True and destructive is not False


class PlannedCall(BaseModel):
    """One call of a plan (`approval: plan`): as a held call is shown, and how many times the dry run made it."""

    tool: str  # server/tool
    digest: Annotated[str, Field(pattern=DIGEST_PATTERN)]
    arguments: str
    count: int


class PendingCall(BaseModel):
    """A held call as people see it: never its real argument values, only the task's tokens for them. A plan is held
    as one call whose tool is `plan`, its arguments one line per call."""

    model_config = ConfigDict(populate_by_name=True)

    tool: str  # server/tool, or `plan`
    digest: Annotated[str, Field(pattern=DIGEST_PATTERN)]
    arguments: str  # the tokenized arguments as JSON, cut at PREVIEW_LIMIT characters
    since: str  # RFC 3339


class PendingApproval(PendingCall):
    """A held call as the approval API lists it: a plan's with all its `calls`."""

    calls: list[PlannedCall] | None = None


class ApprovalsStatus(BaseModel):
    """`status.approvals` of an AgentTask or AgentSession, written by the gateway: the calls held now (at most
    MAX_PENDING_SHOWN of `count`), and the revision of the held set it shows (a write of an older one is skipped)."""

    model_config = ConfigDict(populate_by_name=True)

    pending: list[PendingCall] | None = None
    count: int | None = None
    revision: int | None = None


class Decision(BaseModel):
    """A person's answer to one held call (the approval API's body)."""

    decision: Literal["approve", "deny"]
    reason: Annotated[str, Field(max_length=1000)] = ""


class DecisionAnswer(BaseModel):
    """What became of the held call: `approved` or `denied` by this answer, or the state it already had."""

    model_config = ConfigDict(populate_by_name=True)

    digest: str
    tool: str
    state: Literal["approved", "denied", "expired", "ran"]
    approver: str


class PendingAnswer(BaseModel):
    """The approval API's list of a task's or session's held calls."""

    pending: list[PendingApproval]
