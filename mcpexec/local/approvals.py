"""Who decides held calls on this machine (docs/approvals.md): the person at the terminal of `mcpexec run`, the MCP
client's user of `mcpexec serve` (through elicitation: gateway/web/mcp_front_door.py), and the rules they gave on the
command line (`--approve TOOLGLOB`, repeatable, `--approve-all`: approved without asking).

`mcpexec run` follows its task's held calls from the start: each one the rules approve is approved; else, with a
terminal, the person is shown the tool and its tokenized arguments (control characters neutralised: the task's code
wrote them) and answers y/n; with no terminal the call is denied, the reason saying how to approve it. Either way
the code gets its answer as from any approver: the call runs once, or ApprovalDenied.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import sys

from mcp.server.mcpserver import Context

from gateway.approvals.gate import Subject
from gateway.approvals.plans import PLAN_TOOL
from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import AlreadyDecided, NotFound
from gateway.executions.models import ApprovalEvent
from gateway.web.approval_watch import changes
from gateway.web.mcp_approval_asking import Asking, AskingOf
from mcpexec.local.terminal import neutralised

ALL = "*"  # --approve-all: a glob over server/tool that matches every tool


def rules_text(approved: tuple[str, ...]) -> str:
    return "--approve-all" if ALL in approved else " ".join(f"--approve {glob!r}" for glob in approved)


def serve_asking(approved: tuple[str, ...]) -> AskingOf:
    """`mcpexec serve`'s AskingOf: the client's user decides, as this machine's user (with the client's name)."""

    async def asking_of(ctx: Context, _session: TaskContext) -> Asking:
        params = ctx.request_context.session.client_params
        client = params.client_info.name if params is not None else "an MCP client"
        how = (
            "Restart `mcpexec serve` with --approve 'server/tool' (a glob, repeatable) or --approve-all to approve "
            "such calls without asking, or use an MCP client that supports elicitation."
        )
        return Asking(f"{getpass.getuser()} (through {client})", how, approved)

    return asking_of


def _shown(event: ApprovalEvent) -> str:
    if event.tool == PLAN_TOOL:
        calls = "".join(
            f"\n  {call.tool} {call.arguments}" + (f" (x{call.count})" if call.count > 1 else "")
            for call in event.calls or []
        )
        return f"the task's dry run would make these calls (personal data as tokens):{calls}\nApprove this plan"
    return (
        f"the task's code wants to call {event.tool} with (personal data as tokens):\n  {event.arguments}\n"
        "Approve this call"
    )


class TerminalApprover:
    """`mcpexec run`'s: the rules first, then the terminal (if stdin is one), else a denial saying how to approve."""

    def __init__(self, approved: tuple[str, ...]) -> None:
        self._asking = Asking(getpass.getuser(), "", approved)

    async def answer(self, core: GatewayCore, ctx: TaskContext, cursor: str) -> None:
        """Decide each call of the task held past `cursor`, until cancelled (the run is over)."""
        subject = Subject.of(ctx)
        async for event in changes(core, ctx.scope, cursor):
            if event.state != "pending":
                continue
            approve, approver, reason = await self._decision(event)
            with contextlib.suppress(AlreadyDecided, NotFound):
                await core.approvals.decide(subject, event.digest, approve, approver, reason)

    async def _decision(self, event: ApprovalEvent) -> tuple[bool, str, str]:
        user = str(self._asking.approver)
        if self._asking.approves(event):
            return True, f"{user} ({rules_text(self._asking.approved)})", ""
        if not sys.stdin.isatty():
            tools = sorted({call.tool for call in event.calls or []}) if event.tool == PLAN_TOOL else [event.tool]
            flags = " ".join(f"--approve {tool!r}" for tool in tools)
            return False, "mcpexec run", f"no terminal to ask for approval: run with {flags} or --approve-all"
        question = f"mcpexec: {neutralised(_shown(event))} (digest {event.digest[:12]})? [y/N] "
        answer = await asyncio.to_thread(_ask, question)
        if answer in ("y", "yes"):
            return True, f"{user} (at the terminal)", ""
        return False, f"{user} (at the terminal)", "denied at the terminal"


def _ask(question: str) -> str:
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower()
