"""A plan (`approval: plan`, docs/approvals.md): the calls needing approval that one dry run of the code made, held
as one call for a person to approve at once.

Its digest binds the task's scope, the plan's id and every recorded call's digest with how many times the dry run
made it: approving it approves exactly that set, for that run. People are shown one line per call (its tool and
tokenized arguments) in the held call's preview, and the whole list through the approval API.
"""

from __future__ import annotations

import hashlib
import json

from gateway.approvals.store import Planned
from mcpexec.api.approval import PREVIEW_LIMIT, PlannedCall

# A plan's "tool" as people see it (a tool is always server/tool: this one cannot be a tool's name).
PLAN_TOOL = "plan"


def plan_digest(scope: str, plan_id: str, planned: list[Planned]) -> str:
    calls = sorted([p.call.digest, p.count] for p in planned)
    canonical = json.dumps([scope, PLAN_TOOL, plan_id, calls], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def plan_preview(planned: list[Planned]) -> str:
    """`N call(s)`, then one line per call: `server/tool {tokenized arguments}` (` x3` when made three times)."""
    lines = [f"{sum(p.count for p in planned)} call(s):"]
    lines += [f"{p.call.tool} {p.call.preview}" + (f" x{p.count}" if p.count > 1 else "") for p in planned]
    shown = "\n".join(lines)
    return shown if len(shown) <= PREVIEW_LIMIT else shown[: PREVIEW_LIMIT - 1] + "…"


def shown_calls(planned: list[Planned]) -> list[PlannedCall]:
    return [
        PlannedCall(tool=p.call.tool, digest=p.call.digest, arguments=p.call.preview, count=p.count) for p in planned
    ]
