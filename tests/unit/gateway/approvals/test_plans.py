"""A plan's digest binds exactly what the person approves: the task's scope, the plan's id, each recorded call's
digest and how many times it was made (not their order); its preview shows one line per call. Rules given at start
(`--approve`) approve a plan only if they approve every call in it."""

from __future__ import annotations

from gateway.approvals.held_calls import HeldCall
from gateway.approvals.plans import PLAN_TOOL, plan_digest, plan_preview
from gateway.approvals.store import Planned
from gateway.executions.models import ApprovalEvent
from gateway.web.mcp_approval_asking import Asking
from mcpexec.api.approval import PlannedCall

SEND = Planned(HeldCall("a" * 64, "crm/send_message", '{"to": "[EMAIL_1]"}'), 1)
DELETE = Planned(HeldCall("b" * 64, "crm/delete_customer", '{"id": "C001"}'), 2)


def test_a_plans_digest_binds_its_scope_id_calls_and_counts_not_their_order() -> None:
    digest = plan_digest("ns/t/uid-1", "plan-1", [SEND, DELETE])
    assert digest == plan_digest("ns/t/uid-1", "plan-1", [DELETE, SEND])
    others = [
        plan_digest("ns/t/uid-2", "plan-1", [SEND, DELETE]),  # a re-created namesake
        plan_digest("ns/t/uid-1", "plan-2", [SEND, DELETE]),  # another run's plan
        plan_digest("ns/t/uid-1", "plan-1", [SEND]),  # a call fewer
        plan_digest("ns/t/uid-1", "plan-1", [SEND, Planned(DELETE.call, 3)]),  # made once more
    ]
    assert len({digest, *others}) == 5


def test_a_plans_preview_lists_each_call_once_with_its_count() -> None:
    assert plan_preview([SEND, DELETE]) == (
        '3 call(s):\ncrm/send_message {"to": "[EMAIL_1]"}\ncrm/delete_customer {"id": "C001"} x2'
    )
    many = [Planned(HeldCall(f"{i:064x}", "crm/send_message", "x" * 100), 1) for i in range(40)]
    assert len(plan_preview(many)) == 2000 and plan_preview(many).endswith("…")


def _plan(*tools: str) -> ApprovalEvent:
    calls = [PlannedCall(tool=tool, digest="c" * 64, arguments="{}", count=1) for tool in tools]
    return ApprovalEvent(state="pending", tool=PLAN_TOOL, digest="d" * 64, calls=calls)


def test_rules_given_at_start_approve_a_plan_only_if_they_approve_each_of_its_calls() -> None:
    sends = Asking("me", "", ("crm/send_*",))
    assert sends.approves(ApprovalEvent(state="pending", tool="crm/send_message", digest="d" * 64))
    assert sends.approves(_plan("crm/send_message", "crm/send_sms"))
    assert not sends.approves(_plan("crm/send_message", "crm/delete_customer"))
    assert not sends.approves(_plan())
    assert Asking("me", "", ("*",)).approves(_plan("crm/delete_customer"))
    assert not Asking("me", "", ()).approves(_plan("crm/send_message"))
