"""Status conditions as the API conventions (metav1.Condition) and kstatus shape them, for every kind.

One place decides what a resource's state means to the tools that read it:
- `Reconciling=True` while the controller still works towards the desired state (kstatus: InProgress);
- `Stalled=True` when it cannot get there without someone acting (kstatus: Failed);
- neither: the resource is what it should be (kstatus: Current).
A run-to-completion resource (AgentTask) adds `Succeeded` (Unknown while it runs, then True or False, so
`kubectl wait --for=condition=Succeeded` and `=false` both return); a long-lived one (MCPServer, SandboxPool,
AgentSession) adds `Ready`. Every condition carries the generation it was computed for (`observedGeneration`), and
keeps its lastTransitionTime until its status changes.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcpexec.api.timestamps import now

ConditionStatus = Literal["True", "False", "Unknown"]


class ConditionType(StrEnum):
    """Every condition type mcpexec writes (the CRDs' `status.conditions[].type`)."""

    ACCEPTED = "Accepted"  # AgentTask: admitted to run (False: refused, with why)
    FINISHED = "Finished"  # AgentTask: its run ended (the reason says how)
    CLAIMED = "Claimed"  # AgentSession: its warm sandbox claimed
    READY = "Ready"  # the long-lived kinds: MCPServer, SandboxPool, AgentSession
    SUCCEEDED = "Succeeded"  # the run-to-completion kind: AgentTask
    RECONCILING = "Reconciling"  # kstatus: InProgress
    STALLED = "Stalled"  # kstatus: Failed
    AWAITING_APPROVAL = "AwaitingApproval"  # AgentTask, AgentSession: calls held for a person (written by the gateway)


# metav1.Condition's own bounds (the CRDs' schema has them too).
MESSAGE_LIMIT = 32768
REASON_LIMIT = 1024
REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


class Condition(BaseModel):
    """One metav1.Condition, its fields in the order the operator has always written them."""

    model_config = ConfigDict(populate_by_name=True)

    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")
    observed_generation: int | None = Field(default=None, alias="observedGeneration")


class Progress(StrEnum):
    """Where a resource stands, in kstatus terms."""

    IN_PROGRESS = "InProgress"  # Reconciling=True
    CURRENT = "Current"  # Reconciling=False, Stalled=False
    STALLED = "Stalled"  # Stalled=True


def _status(value: bool | None) -> ConditionStatus:
    return "Unknown" if value is None else "True" if value else "False"


def condition(type_: str, status: bool | None, reason: str, message: str = "") -> Condition:
    """One condition (status None: Unknown), its reason and message within metav1.Condition's bounds."""
    if not REASON_PATTERN.match(reason) or len(reason) > REASON_LIMIT:
        raise ValueError(f"condition reason {reason!r} is not a metav1.Condition reason")
    return Condition(type=type_, status=_status(status), reason=reason, message=message[:MESSAGE_LIMIT])


def progress(state: Progress, reason: str, message: str = "") -> list[Condition]:
    """Reconciling and Stalled for a state: exactly one of them True, or neither (Current)."""
    return [
        condition(ConditionType.RECONCILING, state is Progress.IN_PROGRESS, reason, message),
        condition(ConditionType.STALLED, state is Progress.STALLED, reason, message),
    ]


def outcome(succeeded: bool | None, reason: str, message: str = "") -> list[Condition]:
    """A run-to-completion resource's conditions: Succeeded (None while it runs) with Reconciling and Stalled."""
    state = Progress.IN_PROGRESS if succeeded is None else Progress.CURRENT if succeeded else Progress.STALLED
    return [condition(ConditionType.SUCCEEDED, succeeded, reason, message), *progress(state, reason, message)]


def readiness(ready: bool | None, state: Progress, reason: str, message: str = "") -> list[Condition]:
    """A long-lived resource's conditions: Ready (None: not known yet) with Reconciling and Stalled."""
    return [condition(ConditionType.READY, ready, reason, message), *progress(state, reason, message)]


def merge_conditions(current: list[Condition], updates: list[Condition], generation: int) -> list[Condition]:
    """Replace conditions by type, each stamped with the generation it describes; lastTransitionTime is kept while
    a condition's status stays the same."""
    merged = {c.type: c.model_copy() for c in current}
    stamp = now()
    for update in updates:
        old = merged.get(update.type)
        kept = old.last_transition_time if old is not None and old.status == update.status else None
        merged[update.type] = update.model_copy(
            update={"last_transition_time": kept or stamp, "observed_generation": generation}
        )
    return list(merged.values())


def find(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def generation(document: dict[str, Any]) -> int:
    """The generation a status written now describes."""
    return int(document["metadata"].get("generation") or 1)
