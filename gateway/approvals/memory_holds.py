"""Held calls in this process: for a gateway that is the only one its sandboxes and people reach (`mcpexec run`,
`mcpexec serve` without Redis). The same state machine as redis_holds.py, step for step; each step runs without an
await in between, so it is as atomic here as a Lua script is in Redis. Nothing expires by itself: a local gateway
lives as long as its tasks.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gateway.approvals.held_calls import HeldCall
from gateway.approvals.store import LOG_KEPT, Change, Decided, Hold, Planned, PlanState, Record, State
from mcpexec.api.approval import MAX_PENDING_SHOWN, PendingCall
from mcpexec.api.timestamps import format_time


@dataclass
class _Held:
    call: HeldCall
    call_id: str
    since: float
    deadline: float
    state: State = "pending"
    approver: str = ""
    reason: str = ""


@dataclass
class _Scope:
    held: dict[str, _Held] = field(default_factory=dict)
    calls: dict[str, str] = field(default_factory=dict)  # call id -> digest
    revision: int = 0
    log: list[tuple[int, Change]] = field(default_factory=list)
    logged: int = 0
    recorded: dict[str, dict[str, Planned]] = field(default_factory=dict)  # plan id -> digest -> planned
    allowed: dict[str, dict[str, int]] = field(default_factory=dict)  # plan digest -> digest -> runs left
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def tell(self, change: Change) -> None:
        self.logged += 1
        self.log = [*self.log[-(LOG_KEPT - 1) :], (self.logged, change)]
        self.changed.set()
        self.changed = asyncio.Event()


class MemoryHolds:
    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}

    def _scope(self, scope: str) -> _Scope:
        return self._scopes.setdefault(scope, _Scope())

    def _settle(self, scope: _Scope, held: _Held, state: State, approver: str = "", reason: str = "") -> None:
        held.state, held.approver, held.reason = state, approver, reason
        scope.revision += 1
        scope.tell(Change(state, held.call.digest, held.call.tool, approver=approver, reason=reason))  # type: ignore[arg-type]

    async def hold(self, scope: str, call: HeldCall, call_id: str, deadline: float) -> Hold:
        at = self._scope(scope)
        bound = at.calls.get(call_id)
        if bound is not None and bound != call.digest:
            return Hold("mismatch")
        held = at.held.get(call.digest)
        now = time.time()
        if held is not None:
            if held.state == "pending" and held.deadline <= now:
                self._settle(at, held, "expired")
                return Hold("expired")
            if held.state in ("denied", "expired"):
                at.calls[call_id] = call.digest
                return Hold(held.state, held.reason)
            if held.state == "pending":
                return Hold("pending" if held.call_id == call_id else "busy")
            if held.state == "approved":
                if held.call_id != call_id:
                    return Hold("busy")
                held.state = "ran"
                return Hold("run")
            if held.state == "ran" and held.call_id == call_id:
                return Hold("ran")
        at.held[call.digest] = _Held(call, call_id, now, deadline)
        at.calls[call_id] = call.digest
        at.revision += 1
        at.tell(Change("pending", call.digest, call.tool, call.preview))
        return Hold("held")

    async def untake(self, scope: str, digest: str, call_id: str) -> None:
        held = self._scope(scope).held.get(digest)
        if held is not None and held.state == "ran" and held.call_id == call_id:
            held.state = "approved"

    async def decide(
        self, scope: str, digest: str, approve: bool, approver: str, reason: str, held_as: str = ""
    ) -> Decided:
        at = self._scope(scope)
        held = at.held.get(digest)
        if held is None or (held_as and held.call_id != held_as):
            return Decided("missing")
        if held.state != "pending":
            return Decided("decided", held.state, held.call.tool)
        if held.deadline <= time.time():
            self._settle(at, held, "expired", approver, reason)
            return Decided("decided", "expired", held.call.tool)
        self._settle(at, held, "approved" if approve else "denied", approver, reason)
        return Decided("ok", held.state, held.call.tool)

    async def record(self, scope: str, digest: str) -> Record | None:
        held = self._scope(scope).held.get(digest)
        if held is None:
            return None
        call = held.call
        return Record(
            call.digest, held.state, call.tool, held.since, held.deadline, held.approver, held.reason, held.call_id
        )

    async def digest_of(self, scope: str, call_id: str) -> str | None:
        return self._scope(scope).calls.get(call_id)

    async def wait(self, scope: str, digest: str, seconds: float) -> Record | None:
        give_up = time.monotonic() + seconds
        at = self._scope(scope)
        while True:
            record = await self.record(scope, digest)
            if record is None or record.state != "pending":
                return record
            if record.deadline <= time.time():
                await self.decide(scope, digest, False, "", "")
                return await self.record(scope, digest)
            left = min(give_up - time.monotonic(), record.deadline - time.time())
            if left <= 0:
                return record
            try:
                await asyncio.wait_for(at.changed.wait(), left)
            except TimeoutError:
                continue

    async def pending(self, scope: str) -> tuple[list[PendingCall], int, int]:
        at = self._scope(scope)
        waiting = sorted((h for h in at.held.values() if h.state == "pending"), key=lambda h: h.since)
        shown = [
            PendingCall(
                tool=h.call.tool,
                digest=h.call.digest,
                arguments=h.call.preview,
                since=format_time(datetime.fromtimestamp(h.since, UTC)),
            )
            for h in waiting[:MAX_PENDING_SHOWN]
        ]
        return shown, len(waiting), at.revision

    async def cursor(self, scope: str) -> str:
        return str(self._scope(scope).logged)

    async def changes(self, scope: str, after: str, seconds: float) -> tuple[list[Change], str]:
        at = self._scope(scope)
        if at.logged <= int(after):
            try:
                await asyncio.wait_for(at.changed.wait(), seconds)
            except TimeoutError:
                return [], after
        return [change for number, change in at.log if number > int(after)], str(at.logged)

    async def plan_call(self, scope: str, plan_id: str, call: HeldCall, deadline: float) -> tuple[PlanState, str]:
        at = self._scope(scope)
        plan = at.calls.get(plan_id)
        if plan is None:
            recorded = at.recorded.setdefault(plan_id, {})
            earlier = recorded.get(call.digest)
            recorded[call.digest] = Planned(call, 1 if earlier is None else earlier.count + 1)
            return "recorded", ""
        held = at.held[plan]
        if held.state == "pending" and held.deadline <= time.time():
            return "expired", ""
        if held.state in ("pending", "expired", "denied"):
            return held.state, held.reason
        allowed = at.allowed.get(plan, {})
        if allowed.get(call.digest, 0) > 0:
            allowed[call.digest] -= 1
            return "run", ""
        return "not_planned", ""

    async def plan_untake(self, scope: str, plan_id: str, digest: str) -> None:
        at = self._scope(scope)
        plan = at.calls.get(plan_id)
        if plan is not None and digest in at.allowed.get(plan, {}):
            at.allowed[plan][digest] += 1

    async def planned(self, scope: str, plan_id: str) -> list[Planned]:
        return list(self._scope(scope).recorded.get(plan_id, {}).values())

    async def allow(self, scope: str, plan_digest: str, planned: list[Planned], deadline: float) -> None:
        self._scope(scope).allowed.setdefault(plan_digest, {p.call.digest: p.count for p in planned})

    def forget(self, scope: str) -> None:
        self._scopes.pop(scope, None)

    async def close(self) -> None:
        self._scopes.clear()
