"""Where held calls are kept (`HeldCalls`): in Redis for a cluster's replicas (redis_holds.py), in this process for a
gateway that is the only one its sandboxes and people reach (memory_holds.py: `mcpexec run`, `mcpexec serve`).
Both follow one state machine, described in redis_holds.py, and give the same answers.

Besides the held calls themselves, each task's scope keeps:
- a log of its changes (a call held, decided, expired), read from a cursor by whoever shows them as they happen (a
  session's execute stream, the MCP front door's elicitation, `mcpexec run`'s prompt), on any replica;
- its plans (`approval: plan`, docs/approvals.md): the calls a dry run recorded, by the plan's id; once submitted, the
  plan is held as one call (its digest binds the whole set), and once approved, each recorded call may run as many
  times as the dry run made it, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from gateway.approvals.held_calls import HeldCall
from mcpexec.api.approval import PendingCall

# Kept past the deadline so that a late wait or a late answer learns what became of the call.
RETENTION_SECONDS = 3600
# The changes a scope's log keeps (a reader further behind reads from the oldest kept).
LOG_KEPT = 1000

HoldState = Literal["held", "pending", "run", "ran", "denied", "expired", "busy", "mismatch"]
State = Literal["pending", "approved", "denied", "expired", "ran"]
# What a call of a plan's run found: `recorded` (the plan is not submitted yet: a dry run), `run` (approved in the
# plan: taken now, run it), `not_planned` (the approved plan has no such call left), or the plan's own state.
PlanState = Literal["recorded", "run", "not_planned", "pending", "denied", "expired"]


@dataclass(frozen=True)
class Hold:
    """What `hold` found: `held` (new), `pending`, `run` (approved: taken now, run it), `ran` (taken before),
    `denied` (with the approver's reason), `expired`, `busy` (the identical call is held for another call id),
    `mismatch` (the call id names another call)."""

    state: HoldState
    reason: str = ""


@dataclass(frozen=True)
class Record:
    """A held call as the store has it; `call_id`: the id it was held under (a plan's: the plan's id)."""

    digest: str
    state: State
    tool: str
    since: float
    deadline: float
    approver: str
    reason: str
    call_id: str = ""


@dataclass(frozen=True)
class Decided:
    """What `decide` did: `ok` (this answer decided it), `decided` (it was already, `state` says how), `missing`."""

    outcome: Literal["ok", "decided", "missing"]
    state: State | None = None
    tool: str = ""


@dataclass(frozen=True)
class Change:
    """One entry of a scope's log: a call held (`pending`, with its tokenized preview) or decided."""

    state: Literal["pending", "approved", "denied", "expired"]
    digest: str
    tool: str
    preview: str = ""
    approver: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Planned:
    """A call a plan's dry run recorded, and how many times it made it."""

    call: HeldCall
    count: int


class HeldCalls(Protocol):
    async def hold(self, scope: str, call: HeldCall, call_id: str, deadline: float) -> Hold: ...

    async def untake(self, scope: str, digest: str, call_id: str) -> None:
        """The call `hold` let run did not reach its server: approved again, for `call_id` only."""

    async def decide(
        self, scope: str, digest: str, approve: bool, approver: str, reason: str, held_as: str = ""
    ) -> Decided:
        """A person's decision on the held call `digest`; with `held_as`, only on its hold made under that call id
        (another hold of the same exact call is `missing` to it)."""

    async def record(self, scope: str, digest: str) -> Record | None: ...

    async def digest_of(self, scope: str, call_id: str) -> str | None: ...

    async def wait(self, scope: str, digest: str, seconds: float) -> Record | None:
        """The held call once it is no longer pending, or as it is after `seconds` (or at its deadline, then
        expired); None if there is no such call."""

    async def pending(self, scope: str) -> tuple[list[PendingCall], int, int]:
        """The scope's held calls (the oldest MAX_PENDING_SHOWN), how many there are, and the set's revision."""

    async def cursor(self, scope: str) -> str:
        """Where the scope's log is now: `changes` from here gives what happens from now on."""

    async def changes(self, scope: str, after: str, seconds: float) -> tuple[list[Change], str]:
        """The scope's changes past `after`, waiting up to `seconds` for one; and the cursor past them."""

    async def plan_call(self, scope: str, plan_id: str, call: HeldCall, deadline: float) -> tuple[PlanState, str]:
        """A call of plan `plan_id`: recorded (not submitted yet), taken (approved in it), or refused; with the
        plan's reason when it was denied."""

    async def plan_untake(self, scope: str, plan_id: str, digest: str) -> None:
        """A call `plan_call` let run did not reach its server: the plan allows it once more."""

    async def planned(self, scope: str, plan_id: str) -> list[Planned]:
        """The calls plan `plan_id`'s dry run recorded, in the order first made."""

    async def allow(self, scope: str, plan_digest: str, planned: list[Planned], deadline: float) -> None:
        """What plan `plan_digest` allows once approved: each planned call, as many times as it was made. Written
        once: a plan submitted again cannot give back what its run took."""

    def forget(self, scope: str) -> None:
        """The task's state is being dropped (in this process; Redis' keys expire by themselves)."""

    async def close(self) -> None: ...
