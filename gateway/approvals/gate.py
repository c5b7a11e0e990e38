"""The gate the call path asks before a call is sent upstream, and the people's side of it: decisions and the list.

A call that needs approval (rules.py, a cached answer) is held, not run: `admit` raises ApprovalPending with the
call bound to its digest (held_calls.py), and the sandbox waits for the decision by its own call id (`wait`, from
any replica), then sends the same call with the same call id again; `admit` lets it through once, and only if that
exact call was approved. Denied, expired, taken before: a clear error, nothing sent. A call of a plan (its `planId`,
`approval: plan`) is recorded while the plan is not submitted (the dry run: ApprovalPlanned), then taken from what
the approved plan allows (else ApprovalNotPlanned); `submit` holds the recorded set as one call (plans.py).

Who is told: `ApprovalNotices` (cluster: the task's status, an Event), the metrics, the audit log (with the
approver's username); whoever follows the scope's log of changes (`follow`: a session's execute stream, the MCP
front door's elicitation, `mcpexec run`'s prompt).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mcp_types as types

from gateway.approvals.held_calls import HeldCall, call_digest, preview
from gateway.approvals.plans import PLAN_TOOL, plan_digest, plan_preview, shown_calls
from gateway.approvals.rules import ApprovalRules
from gateway.approvals.store import Change, HeldCalls, Planned, Record
from gateway.context import TaskContext
from gateway.errors import (
    AlreadyDecided,
    ApprovalConflict,
    ApprovalConsumed,
    ApprovalDenied,
    ApprovalNotPlanned,
    ApprovalPending,
    ApprovalPlanned,
    ApprovalTimeout,
    NotFound,
)
from gateway.pii.tokenizer import PiiTokenizer
from gateway.telemetry import audit
from gateway.telemetry.metrics import GatewayMetrics
from mcpexec.api.approval import DecisionAnswer, PendingApproval
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.meta import AGENTSESSION_PLURAL, AGENTTASK_PLURAL
from mcpexec.api.timestamps import parse_time

# The call id of a caller that sent none (an older runtime, curl): its identical calls share one hold.
ANONYMOUS_CALL = "-"
GRACE_SECONDS = 30.0
# How long one read of a scope's log waits before it is asked again.
FOLLOW_SECONDS = 10.0
Kind = Literal["agenttasks", "agentsessions"]


@dataclass(frozen=True)
class Subject:
    """Whose held calls: an AgentTask or an AgentSession, by uid (a re-created one is another)."""

    kind: Kind
    namespace: str
    name: str
    uid: str

    @property
    def scope(self) -> str:
        """The task's scope (TaskContext.scope), which held calls are keyed by."""
        return f"{self.namespace}/{self.name}/{self.uid}"

    @classmethod
    def of(cls, ctx: TaskContext) -> Subject:
        kind: Kind = AGENTSESSION_PLURAL if ctx.session else AGENTTASK_PLURAL  # type: ignore[assignment]
        return cls(kind, ctx.task.metadata.namespace, ctx.task.metadata.name, ctx.uid)


@dataclass(frozen=True)
class Notice:
    """Something people may want to know: an Event's reason and message."""

    reason: Literal["ApprovalRequested", "CallApproved", "CallDenied", "ApprovalTimedOut"]
    message: str


class ApprovalNotices(Protocol):
    """Told whenever a subject's held calls change (a call held, decided, expired); never blocks the call."""

    def changed(self, subject: Subject, notice: Notice) -> None: ...


@dataclass(frozen=True)
class Taken:
    """A call `admit` let through: taken from its approval (or its plan's), given back by `untake` if never sent."""

    call: HeldCall
    plan_id: str | None = None


@dataclass(frozen=True)
class WaitAnswer:
    """`GET /v1/approvals/{callId}` once decided."""

    state: Literal["approved", "denied", "expired", "ran"]
    tool: str
    digest: str
    reason: str


def deadline(ctx: TaskContext) -> float:
    """When a held call stops waiting: the task's deadline (its creation plus its timeout; without a creation time,
    from now), less a grace of a tenth of its timeout, at most GRACE_SECONDS, so that its code is still running to
    handle the ApprovalTimeout (a session's lifetime bounds it the same way)."""
    created = (ctx.task.metadata.model_extra or {}).get("creationTimestamp")
    start = parse_time(created).timestamp() if isinstance(created, str) else time.time()
    timeout = ctx.task.spec.timeout_seconds
    return start + timeout - min(GRACE_SECONDS, timeout / 10)


class ApprovalGate:
    def __init__(
        self,
        rules: ApprovalRules,
        holds: HeldCalls,
        tokenizer: PiiTokenizer,
        metrics: GatewayMetrics,
        notices: ApprovalNotices | None = None,
    ) -> None:
        self.rules = rules
        self.holds = holds
        self._tokenizer = tokenizer
        self._metrics = metrics
        self.notices = notices

    def asks(self, ctx: TaskContext, server: str, tool: types.Tool, spec: MCPServerSpec) -> bool:
        return self.rules.asks(ctx, server, tool, spec)

    def _tell(self, subject: Subject, notice: Notice) -> None:
        if self.notices is not None:
            self.notices.changed(subject, notice)

    async def admit(
        self,
        ctx: TaskContext,
        server: str,
        tool: str,
        real: dict[str, Any],
        shown: dict[str, Any],
        call_id: str | None,
        plan_id: str | None = None,
    ) -> Taken:
        """This exact call, once it was approved (or is in the approved plan `plan_id`) and is taken now to run
        (once); raise otherwise."""
        qualified = f"{server}/{tool}"
        tokenized = await self._tokenizer.tokenize(ctx, shown)
        call = HeldCall(call_digest(ctx, server, tool, real), qualified, preview(tokenized))
        if plan_id is not None:
            await self._planned(ctx, call, plan_id)
            return Taken(call, plan_id)
        hold = await self.holds.hold(ctx.scope, call, call_id or ANONYMOUS_CALL, deadline(ctx))
        if hold.state == "run":
            self._metrics.approvals.labels("ran").inc()
            return Taken(call)
        subject = Subject.of(ctx)
        if hold.state == "held":
            self._metrics.approvals.labels("held").inc()
            audit.record(ctx, "approval_held", f"{qualified} {call.digest}", 0.0, "pending")
            self._tell(subject, Notice("ApprovalRequested", f"{qualified} is held for approval (digest {call.digest})"))
        if hold.state in ("held", "pending"):
            raise ApprovalPending(
                f"{qualified} needs a person's approval: held, not run (digest {call.digest}); approve it with "
                f"`kubectl mcpexec approve {subject.name} {call.digest[:12]} -n {subject.namespace}`"
            )
        if hold.state == "denied":
            said = f": {hold.reason}" if hold.reason else ""
            raise ApprovalDenied(f"{qualified} was denied by a person (digest {call.digest}){said}; it did not run")
        if hold.state == "expired":
            raise ApprovalTimeout(f"{qualified} was not approved before the task's deadline; it did not run")
        if hold.state == "ran":
            raise ApprovalConsumed(f"{qualified} was approved and taken to run once already; it is not run again")
        raise ApprovalConflict(
            f"{qualified}: the call id names another call, or this exact call is already held for another; nothing ran"
        )

    async def _planned(self, ctx: TaskContext, call: HeldCall, plan_id: str) -> None:
        """A call of plan `plan_id`: returns if the approved plan lets it run now (once); raises otherwise."""
        state, reason = await self.holds.plan_call(ctx.scope, plan_id, call, deadline(ctx))
        if state == "run":
            self._metrics.approvals.labels("ran").inc()
            return
        if state == "recorded":
            raise ApprovalPlanned(f"{call.tool} is recorded in the plan (digest {call.digest}), not run: a dry run")
        if state == "not_planned":
            audit.record(ctx, "approval_not_planned", f"{call.tool} {call.digest}", 0.0, "refused")
            raise ApprovalNotPlanned(
                f"{call.tool} is not in the approved plan (digest {call.digest}): the plan did not hold this exact "
                "call, or not as many times; it did not run"
            )
        if state == "denied":
            said = f": {reason}" if reason else ""
            raise ApprovalDenied(f"the plan was denied by a person{said}; {call.tool} did not run")
        if state == "expired":
            raise ApprovalTimeout(f"the plan was not approved before the task's deadline; {call.tool} did not run")
        raise ApprovalConflict(f"the plan is not decided yet; {call.tool} did not run")

    async def submit(self, ctx: TaskContext, plan_id: str) -> HeldCall | None:
        """The dry run of plan `plan_id` is over: its recorded calls are held as one call (None: it recorded none,
        there is nothing to approve)."""
        planned = await self.holds.planned(ctx.scope, plan_id)
        if not planned:
            return None
        plan = HeldCall(plan_digest(ctx.scope, plan_id, planned), PLAN_TOOL, plan_preview(planned))
        await self.holds.allow(ctx.scope, plan.digest, planned, deadline(ctx))
        hold = await self.holds.hold(ctx.scope, plan, plan_id, deadline(ctx))
        if hold.state in ("busy", "mismatch"):
            raise ApprovalConflict(f"plan {plan_id} was submitted before with other calls")
        if hold.state == "held":
            self._metrics.approvals.labels("held").inc()
            audit.record(ctx, "approval_held", f"{PLAN_TOOL} {plan.digest}", 0.0, "pending")
            count = sum(p.count for p in planned)
            message = f"a plan of {count} call(s) is held for approval (digest {plan.digest})"
            self._tell(Subject.of(ctx), Notice("ApprovalRequested", message))
        return plan

    async def untake(self, ctx: TaskContext, taken: Taken, call_id: str | None) -> None:
        """A call `admit` let through never reached its server (nothing was sent): its approval stands again."""
        if taken.plan_id is not None:
            await self.holds.plan_untake(ctx.scope, taken.plan_id, taken.call.digest)
        else:
            await self.holds.untake(ctx.scope, taken.call.digest, call_id or ANONYMOUS_CALL)

    async def wait(self, ctx: TaskContext, call_id: str, seconds: float) -> WaitAnswer | None:
        """The decision on this task's call `call_id`, waiting up to `seconds` for it (None: still pending)."""
        digest = await self.holds.digest_of(ctx.scope, call_id)
        record = None if digest is None else await self.holds.wait(ctx.scope, digest, seconds)
        if record is None:
            raise NotFound(f"no held call {call_id[:80]!r} of this task")
        if record.state == "pending":
            return None
        if record.state == "expired":
            self._expired(Subject.of(ctx), record)
        reason = await self._tokenizer.tokenize(ctx, record.reason) if record.reason else ""
        return WaitAnswer(record.state, record.tool, record.digest, reason)

    def _expired(self, subject: Subject, record: Record) -> None:
        self._tell(subject, Notice("ApprovalTimedOut", f"{record.tool} was not decided before the deadline"))

    async def decide(
        self, subject: Subject, digest: str, approve: bool, approver: str, reason: str, held_as: str = ""
    ) -> DecisionAnswer:
        """A person's decision on one held call of `subject` (already authorized): AlreadyDecided if it was;
        with `held_as`, on its hold made under that call id only (NotFound for any other)."""
        decided = await self.holds.decide(subject.scope, digest, approve, approver, reason, held_as)
        if decided.outcome == "missing" or decided.state is None:
            raise NotFound(f"no held call {digest[:80]!r} of {subject.kind} {subject.namespace}/{subject.name}")
        if decided.outcome == "decided" and decided.state != "expired":
            raise AlreadyDecided(f"held call {digest} was already decided: {decided.state}")
        state = decided.state
        self._metrics.approvals.labels(state).inc()
        audit.decision(
            subject.kind, f"{subject.namespace}/{subject.name}", subject.uid, decided.tool, digest, state, approver
        )
        if state == "expired":
            raise AlreadyDecided(f"held call {digest} expired: the task's deadline passed before a decision")
        by = f" by {approver}" + (f": {reason}" if reason else "")
        notice = (
            Notice("CallApproved", f"{decided.tool} approved{by}")
            if approve
            else Notice("CallDenied", f"{decided.tool} denied{by}")
        )
        self._tell(subject, notice)
        return DecisionAnswer(digest=digest, tool=decided.tool, state=state, approver=approver)

    async def pending(self, subject: Subject) -> list[PendingApproval]:
        """The subject's held calls; a plan's with its calls."""
        held = (await self.holds.pending(subject.scope))[0]
        return [
            PendingApproval(
                **call.model_dump(),
                calls=shown_calls(await self.plan_of(subject.scope, call.digest)) if call.tool == PLAN_TOOL else None,
            )
            for call in held
        ]

    async def plan_of(self, scope: str, digest: str) -> list[Planned]:
        """The calls of the plan held as `digest`."""
        record = await self.holds.record(scope, digest)
        return [] if record is None else await self.holds.planned(scope, record.call_id)

    async def follow(self, scope: str, after: str) -> AsyncIterator[Change]:
        """The scope's changes past the cursor `after` (`holds.cursor`), as they happen, until the caller stops."""
        while True:
            changes, after = await self.holds.changes(scope, after, FOLLOW_SECONDS)
            for change in changes:
                yield change
