"""The two stores of held calls give the same answers (gateway/approvals/store.py): Redis (a real redis-server, a
cluster's replicas) and this process (`mcpexec run`, `mcpexec serve`). Here: the scope's log of changes, read from a
cursor; a plan recorded, allowed, approved and taken once per recorded call, a replayed submission giving nothing
back; a call of a plan not submitted yet recorded, not run; a decision bound to one hold (its call id) deciding no later
hold of the same exact call."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from gateway.approvals.held_calls import HeldCall
from gateway.approvals.memory_holds import MemoryHolds
from gateway.approvals.redis_holds import RedisHolds
from gateway.approvals.store import HeldCalls, Planned
from tests.support.components import redis_server

SCOPE = "ns/task/uid-1"
SEND = HeldCall("a" * 64, "crm/send_message", '{"to": "[EMAIL_1]"}')
OTHER = HeldCall("b" * 64, "crm/send_message", '{"to": "[EMAIL_2]"}')
PLAN = HeldCall("c" * 64, "plan", "1 call(s)")


@pytest.fixture(params=["redis", "in-process"])
def holds(request: pytest.FixtureRequest) -> Iterator[HeldCalls]:
    if request.param == "in-process":
        yield MemoryHolds()
        return
    with redis_server() as url:
        yield RedisHolds(url)


def test_the_log_gives_each_change_past_the_cursor(holds: HeldCalls) -> None:
    async def scenario() -> None:
        cursor = await holds.cursor(SCOPE)
        assert (await holds.hold(SCOPE, SEND, "call-1", time.time() + 60)).state == "held"
        await holds.decide(SCOPE, SEND.digest, False, "carol", "no")
        changes, cursor = await holds.changes(SCOPE, cursor, 1)
        assert [(c.state, c.digest, c.preview, c.approver, c.reason) for c in changes] == [
            ("pending", SEND.digest, SEND.preview, "", ""),
            ("denied", SEND.digest, "", "carol", "no"),
        ]
        assert await holds.changes(SCOPE, cursor, 0.1) == ([], cursor)  # nothing new: waited, then nothing
        await holds.close()

    asyncio.run(scenario())


def test_a_decision_for_one_hold_never_decides_a_later_hold_of_the_same_call(holds: HeldCalls) -> None:
    """The same exact call held again after it ran has the same digest: a decision naming the first hold's call id
    (an MCP client's answer sent again) finds no such hold; the later hold is decided only by its own."""

    async def scenario() -> None:
        deadline = time.time() + 60
        assert (await holds.hold(SCOPE, SEND, "call-1", deadline)).state == "held"
        assert (await holds.decide(SCOPE, SEND.digest, True, "carol", "", "call-1")).outcome == "ok"
        assert (await holds.hold(SCOPE, SEND, "call-1", deadline)).state == "run"
        assert (await holds.hold(SCOPE, SEND, "call-2", deadline)).state == "held"
        assert (await holds.decide(SCOPE, SEND.digest, True, "carol", "", "call-1")).outcome == "missing"
        record = await holds.record(SCOPE, SEND.digest)
        assert record is not None and (record.state, record.call_id) == ("pending", "call-2")
        decided = await holds.decide(SCOPE, SEND.digest, False, "carol", "no", "call-2")
        assert (decided.outcome, decided.state) == ("ok", "denied")
        await holds.close()

    asyncio.run(scenario())


def test_a_plan_allows_each_recorded_call_once_and_a_replay_gives_nothing_back(holds: HeldCalls) -> None:
    async def scenario() -> None:
        deadline = time.time() + 60
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("recorded", "")
        assert await holds.planned(SCOPE, "plan-1") == [Planned(SEND, 1)]
        await holds.allow(SCOPE, PLAN.digest, [Planned(SEND, 1)], deadline)
        assert (await holds.hold(SCOPE, PLAN, "plan-1", deadline)).state == "held"
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("pending", "")  # not decided yet
        assert (await holds.decide(SCOPE, PLAN.digest, True, "carol", "")).state == "approved"
        assert await holds.plan_call(SCOPE, "plan-1", OTHER, deadline) == ("not_planned", "")
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("run", "")
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("not_planned", "")
        await holds.plan_untake(SCOPE, "plan-1", SEND.digest)  # never reached its server: allowed once more
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("run", "")
        await holds.allow(SCOPE, PLAN.digest, [Planned(SEND, 5)], deadline)  # submitted again: written once only
        assert await holds.plan_call(SCOPE, "plan-1", SEND, deadline) == ("not_planned", "")
        await holds.close()

    asyncio.run(scenario())


def test_a_denied_plan_refuses_its_calls_with_the_reason(holds: HeldCalls) -> None:
    async def scenario() -> None:
        deadline = time.time() + 60
        await holds.plan_call(SCOPE, "plan-2", SEND, deadline)
        await holds.allow(SCOPE, PLAN.digest, await holds.planned(SCOPE, "plan-2"), deadline)
        await holds.hold(SCOPE, PLAN, "plan-2", deadline)
        await holds.decide(SCOPE, PLAN.digest, False, "carol", "not now")
        assert await holds.plan_call(SCOPE, "plan-2", SEND, deadline) == ("denied", "not now")
        await holds.close()

    asyncio.run(scenario())
