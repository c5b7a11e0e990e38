"""How the MCP front door (mcp_front_door.py: the cluster's, `mcpexec serve`'s) asks its client's user about the calls
its session holds for approval while `execute_code` runs: the tool and its tokenized arguments (a plan: every call),
accept approves that exact call, decline or cancel denies it, under the name the host gives (`AskingOf`).

Two ways, by the client's protocol era, the same question and the same decision:
- the handshake era: an `elicitation/create` request from the server while the tool call waits (`ctx.elicit`);
- the 2026-07-28 era, which has no server requests: the tool call returns an `InputRequiredResult` naming the
  elicitation, and the client calls again with its answer (multi round-trip requests). What the server needs to go
  on is in the result's `requestState` (`Asked`): the execution (still running in the sandbox: the next round waits
  for its outcome, never a second run), the cursor of the held calls' log, and the one held call asked about, by
  digest and by the call id it was held under. The SDK seals the state (AES-GCM, bound to the tool, its arguments,
  the caller, an expiry); an answer decides only that held call, and only while that very hold is pending: replayed
  later, it decides nothing (not another digest, nor a later hold of the same exact call).

A client without elicitation, or whose user may not approve (a cluster's RBAC), gets a tool error saying how to
approve instead, and how to get the execution's outcome after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Annotated, Literal

import mcp_types as types
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from gateway.approvals.gate import Subject
from gateway.approvals.plans import PLAN_TOOL
from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import AlreadyDecided, NotFound
from gateway.executions.models import ApprovalEvent
from gateway.web.approval_watch import changes

# The key of the one input request an InputRequiredResult carries, and of its answer.
ANSWER_KEY = "approval"


@dataclass(frozen=True)
class Asking:
    """How a call held while the client's code runs is decided: `approver`, the name a decision of the client's user
    is recorded under (None: they may not decide, e.g. no right in the cluster's RBAC); `how`, how else it is approved
    (told to a client that cannot be asked; `{digest}` stands for the call's); `approved`, globs over `server/tool`
    approved without asking (`mcpexec serve --approve`)."""

    approver: str | None
    how: str
    approved: tuple[str, ...] = field(default_factory=tuple)

    def approves(self, event: ApprovalEvent) -> bool:
        tools = [call.tool for call in event.calls or []] if event.tool == PLAN_TOOL else [event.tool]
        return bool(tools) and all(any(fnmatchcase(tool, glob) for glob in self.approved) for tool in tools)


# Who decides, for the session of the request (the cluster's door asks RBAC whether its caller may).
AskingOf = Callable[[Context, TaskContext], Awaitable[Asking]]


class ApprovalNote(BaseModel):
    """What the user may add when they answer (the form an elicitation shows): accept approves, decline denies."""

    note: Annotated[str, Field(max_length=1000, description="optional: recorded with your decision")] = ""


class Asked(BaseModel):
    """The `requestState` of an InputRequiredResult that asks about a held call: what the next round goes on with."""

    scope: str  # the session's: a state from another session is refused
    execution: str  # the execution whose outcome the next round waits for
    cursor: str  # where the held calls' log was before the execution was queued (read again from there)
    digest: str  # the held call asked about
    call_id: str  # the call id it was held under: its answer decides this hold only


@dataclass(frozen=True)
class Question:
    """A held call to ask a 2026-07-28 client about, through an InputRequiredResult."""

    event: ApprovalEvent
    call_id: str

    def input_required(self, scope: str, execution: str, cursor: str) -> types.InputRequiredResult:
        asked = Asked(scope=scope, execution=execution, cursor=cursor, digest=self.event.digest, call_id=self.call_id)
        form = types.ElicitRequestFormParams(
            message=question(self.event), requested_schema=render_elicitation_schema(ApprovalNote)
        )
        return types.InputRequiredResult(
            input_requests={ANSWER_KEY: types.ElicitRequest(params=form)}, request_state=asked.model_dump_json()
        )


_SAID = {"decline": "declined", "cancel": "cancelled"}


def question(event: ApprovalEvent) -> str:
    if event.tool == PLAN_TOOL:
        lines = [
            f"- {call.tool} {call.arguments}" + (f" (x{call.count})" if call.count > 1 else "")
            for call in event.calls or []
        ]
        listed = "\n".join(lines)
        return (
            f"The code's dry run would make these calls, which need your approval:\n{listed}\n"
            f"Approve this plan (digest {event.digest[:12]})? Its real run may make exactly these calls, no others. "
            "Personal data is shown as tokens. Accept approves the plan; decline denies it."
        )
    return (
        f"The code wants to call {event.tool} with these arguments (personal data shown as tokens):\n"
        f"{event.arguments}\nApprove this exact call (digest {event.digest[:12]})? Accept approves it; decline "
        "denies it."
    )


def _verdict(action: Literal["accept", "decline", "cancel"], note: str) -> tuple[bool, str]:
    """Whether the user's answer approves, and the reason recorded with it."""
    return (True, note) if action == "accept" else (False, f"{_SAID[action]} in the MCP client")


def _how_asked(ctx: Context) -> Literal["request", "input_required"] | None:
    """How this client's user can be asked: by a server request (the handshake era, a channel that carries them), by
    an InputRequiredResult (the 2026-07-28 era), or not at all (it declared no elicitation)."""
    mcp_session = ctx.request_context.session
    if not mcp_session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
        return None
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return "input_required"
    return "request" if mcp_session.can_send_request else None


async def answered(core: GatewayCore, session: TaskContext, ctx: Context, asking: Asking) -> Asked | None:
    """A 2026-07-28 client's next round (its `requestState` and answer): the held call it was asked about decided as
    the user answered, if that very hold (its call id) is still pending; what the round goes on with. None: a first
    round."""
    if ctx.request_state is None:
        return None
    try:
        asked = Asked.model_validate_json(ctx.request_state)
    except ValidationError:
        raise ToolError("invalid_request_state: not a state this server gave; call without it") from None
    if asked.scope != session.scope:
        raise ToolError("invalid_request_state: the state is another session's; call without it")
    answer = (ctx.input_responses or {}).get(ANSWER_KEY)
    if not isinstance(answer, types.ElicitResult) or asking.approver is None:
        return asked  # unanswered, or its user may no longer decide: asked again, or told how to approve
    try:
        note = ApprovalNote.model_validate(answer.content or {}).note if answer.action == "accept" else ""
    except ValidationError:
        raise ToolError("invalid_params: the answer does not match the approval question's form") from None
    approve, reason = _verdict(answer.action, note)
    await _decide(core, Subject.of(session), asked.digest, approve, asking.approver, reason, asked.call_id)
    return asked


async def ask(
    core: GatewayCore, session: TaskContext, cursor: str, ctx: Context, asking: Asking, execution: str
) -> Question:
    """Each call of the session held past `cursor` and still pending, decided: approved without asking
    (`asking.approved`), else asked of the client's user (a server request, waited for here); returns the first
    question for a 2026-07-28 client (its tool call answers with it); raises a ToolError saying how to approve when
    the user cannot be asked."""
    subject = Subject.of(session)
    how = _how_asked(ctx)
    async for event in changes(core, session.scope, cursor):
        if event.state != "pending":
            continue
        record = await core.approvals.holds.record(session.scope, event.digest)
        if record is None or record.state != "pending":  # decided since (a later round reads the log again)
            continue
        if asking.approves(event):
            await _decide(core, subject, event.digest, True, f"{asking.approver} (a rule given at start)", "")
            continue
        if asking.approver is None or how is None:
            cannot = (
                "you may not approve it"
                if how is not None
                else "this MCP client cannot ask you (no elicitation, or no channel for server requests)"
            )
            raise ToolError(
                f"approval_required (execution {execution}, state running): {event.tool} is held for a person's "
                f"approval (digest {event.digest}), and {cannot}. {asking.how.format(digest=event.digest)} Then call "
                f"execute_code again with the same code and executionId {execution} to get its outcome (it is not run "
                "twice)."
            )
        if how == "input_required":
            return Question(event, record.call_id)
        answer = await ctx.elicit(question(event), ApprovalNote)
        approve, reason = _verdict(answer.action, answer.data.note if answer.action == "accept" else "")
        await _decide(core, subject, event.digest, approve, asking.approver, reason)
    raise AssertionError("changes() follows the log until cancelled")


async def _decide(
    core: GatewayCore, subject: Subject, digest: str, approve: bool, approver: str, reason: str, held_as: str = ""
) -> None:
    """Decided unless someone else decided first (through the approval API), or its task (or, with `held_as`, that
    hold of it) is gone."""
    with contextlib.suppress(AlreadyDecided, NotFound):
        await core.approvals.decide(subject, digest, approve, approver, reason, held_as)
