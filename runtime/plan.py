"""Running code as a plan (`approval: plan`, docs/approvals.md): a dry run, a person's approval of what it would
do, then the real run.

The dry run makes every call under a fresh plan id: reads run as always; a call that needs a person's approval is
recorded by the gateway and returns a Planned placeholder. The dry run's end is submitted: the gateway holds the
recorded set as one call (its digest binds the set) and the runtime waits for a person's decision as for any held
call (`/v1/approvals/{planId}`). Approved, the code runs again, for real, under the same plan id: each call that
needs approval runs only if the approved plan holds it (as many times as the dry run made it); any other is refused
(ApprovalNotPlanned, which the code may catch). A dry run that recorded nothing was the run: it is not run again. A
dry run that failed submits nothing: its failure is the outcome. Denied or undecided by the deadline: ApprovalDenied
or ApprovalTimeout, and the real run never starts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TypeVar

from runtime import client
from runtime.errors import ApprovalDenied, ApprovalTimeout

T = TypeVar("T")
PLAN = "plan"


def run_as_plan(dry: Callable[[], T], real: Callable[[], T], ok: Callable[[T], bool]) -> T:
    """`dry()`, then once its plan is approved `real()` (each runs the code); `ok` tells a run that did not fail."""
    gw = client.gateway()
    plan_id = uuid.uuid4().hex
    gw.plan_id = plan_id
    try:
        rehearsed = dry()
        if not ok(rehearsed):
            return rehearsed
        submitted = gw.request("POST", f"/v1/approvals/plans/{plan_id}")
        if submitted["state"] == "empty":
            return rehearsed
        decision = client.long_poll(f"/v1/approvals/{plan_id}")
        if decision["state"] == "denied":
            raise ApprovalDenied("the plan", decision["digest"], decision.get("reason") or "")
        if decision["state"] == "expired":
            raise ApprovalTimeout("the plan", decision["digest"])
        return real()
    finally:
        gw.plan_id = None
