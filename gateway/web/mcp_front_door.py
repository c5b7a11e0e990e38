"""The MCP front door: code execution with MCP offered to any agent as one MCP tool, `execute_code`.

An MCP server (the `mcp` SDK's MCPServer) whose `execute_code` runs Python in the caller's own session sandbox
through the session broker, and whose `search_tools` answers the gateway's catalog for that session's policy without
running anything. Which session a request belongs to is the host's to say (`SessionOf`): `mcpexec serve` keeps one
sandbox per MCP session; the cluster's front door maps an MCP session to an AgentSession. The tool descriptions
teach the runtime API, so a model needs nothing else to use it.

A call of the session held for a person's approval while `execute_code` runs is asked of the client's user
(mcp_approval_asking.py): by an elicitation request in the handshake era; in the 2026-07-28 era, `execute_code`
answers with an InputRequiredResult naming the elicitation, and the client's next round (its answer) decides the call
and waits on for the same execution's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import RequestStateSecurity
from pydantic import Field

from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import GatewayError
from gateway.executions.errors import ExecutionError
from gateway.executions.models import (
    DEFAULT_TIMEOUT_SECONDS,
    EXECUTION_ID_PATTERN,
    MAX_TIMEOUT_SECONDS,
    Approval,
    Execution,
    ExecutionResult,
    GapEvent,
    OutputEvent,
)
from gateway.tools.catalog import Detail, ToolsAnswer
from gateway.web.mcp_approval_asking import AskingOf, answered, ask

T = TypeVar("T")
# The session of the request in `Context`: its task context (scope, policy), its sandbox ready or on its way.
SessionOf = Callable[[Context], Awaitable[TaskContext]]


INSTRUCTIONS = """Run Python in a secure sandbox whose code calls MCP tools through a gateway. Use execute_code for
all work; its description lists the API. Variables persist between calls. Personal data appears as tokens such as
[EMAIL_1]: pass them to tools as they are; the gateway puts the real values back only where a tool receives them."""

EXECUTE_DESCRIPTION = """Run Python 3 code in this session's sandbox (gVisor, no network) and get its stdout, stderr and
error back. Variables, imports and functions persist across calls; top-level `await` works. Print what you need:
only printed output comes back, bounded to about 20,000 characters per stream (head and tail kept).

Already defined, no import needed:
- list_servers() -> [{"name", "description", "toolCount", "connected"}]
- search_tools(query="", detail="signature"|"name"|"description"|"full", server=None) -> tools matching every word
  of query ("signature", the default: one call signature per tool, enough to call it; "full": with inputSchema)
- get_tool("server/tool") -> the tool's full definition (description, inputSchema, outputSchema)
- call_tool("server/tool", {...arguments}) -> its structuredContent, else its text; raises ToolError on failure
- typed wrappers: `from servers.<server> import <tool>` then `<tool>(arg=...)` (non-identifier characters -> `_`)
- skills: save_skill(name, function, description), list_skills(), load_skill(name) -> reusable code kept in /skills

Filter and aggregate large tool results in code; print only the answer. Personal data in tool results reaches your
code as tokens like [EMAIL_1] or [PHONE_2]: print them or pass them to call_tool as they are (the gateway puts the
real values back only where a tool receives them); they are never detokenized in this tool's output. Files: /workspace
is writable and kept for the session. A snippet past timeoutSeconds is stopped; the session and its variables stay.

The result (and the first progress message) carries the call's executionId. If a call fails without an outcome, its
error says what became of the code: state not_taken (it never ran: call again), or waiting/running/unknown (it may
run or have run: call again with the same code and executionId to get its outcome without running it twice).

A tool call that needs a person's approval waits until they decide: you may be asked (accept approves that exact
call); call_tool raises ApprovalDenied if denied. approval="plan" runs the code twice: first a dry run where such
calls are only recorded (they return a Planned placeholder), then, once the person approved the recorded set at
once, for real; a call the plan did not hold raises ApprovalNotPlanned (an ApprovalDenied)."""

SEARCH_DESCRIPTION = """Search the MCP tools this session's code may call, without running code: every word of
`query` must occur in the tool's "server/tool" name or description. detail: "name" (names only, cheapest),
"description", or "full" (with input and output schemas). Call them from execute_code with call_tool("server/tool",
{...})."""


def front_door(core: GatewayCore, session_of: SessionOf, asking_of: AskingOf, name: str = "mcpexec") -> MCPServer:
    """The MCP server over `core`'s session broker and catalog; every tool resolves its session with `session_of`,
    and who decides its held calls with `asking_of`."""
    # A 2026-07-28 client's answer to an approval question comes back with the state the question was asked with,
    # sealed by the SDK under this process's key: valid as long as an execution may wait for it.
    security = RequestStateSecurity.ephemeral(ttl=MAX_TIMEOUT_SECONDS)
    server: MCPServer = MCPServer(name, instructions=INSTRUCTIONS, request_state_security=security)

    @server.tool(name="execute_code", description=EXECUTE_DESCRIPTION)
    async def execute_code(
        code: Annotated[str, Field(min_length=1, description="Python source; top-level await allowed")],
        ctx: Context,
        timeoutSeconds: Annotated[  # camelCase: the argument's name as MCP clients see it
            float, Field(gt=0, le=MAX_TIMEOUT_SECONDS, description="stop the snippet after this many seconds")
        ] = DEFAULT_TIMEOUT_SECONDS,
        executionId: Annotated[
            str | None,
            Field(
                pattern=EXECUTION_ID_PATTERN,
                description="an earlier call's executionId, with its same code: its outcome, never a second run",
            ),
        ] = None,
        approval: Annotated[
            Approval, Field(description='"plan": a dry run first, its calls that need approval approved at once')
        ] = "call",
    ) -> ExecutionResult | types.InputRequiredResult:
        session = await session_of(ctx)
        return await _answer(_execute(core, session, code, timeoutSeconds, executionId, ctx, approval, asking_of))

    @server.tool(name="search_tools", description=SEARCH_DESCRIPTION)
    async def search_tools(
        ctx: Context,
        query: Annotated[str, Field(max_length=500)] = "",
        detail: Detail = "description",
        server: str | None = None,
    ) -> ToolsAnswer:
        session = await session_of(ctx)
        return await _answer(core.catalog.search(session, query, detail, server))

    return server


async def _execute(
    core: GatewayCore,
    session: TaskContext,
    code: str,
    timeout_seconds: float,
    execution_id: str | None,
    ctx: Context,
    approval: Approval,
    asking_of: AskingOf,
) -> ExecutionResult | types.InputRequiredResult:
    """Run the code; a client that asked for progress (a progressToken) is told the execution's id first, then gets
    what the code prints as progress notifications while it runs (their `message`; where output was lost, a message
    saying so), the outcome as the tool's result either way. Meanwhile its held calls are asked (`ask`); a 2026-07-28
    client is answered with the first question instead, and its next round (the same arguments, its answer) goes on
    with the same execution."""
    printed = 0
    streaming = (ctx.request_context.meta or {}).get("progress_token") is not None

    async def progress(event: OutputEvent | GapEvent) -> None:
        nonlocal printed
        text = event.text if isinstance(event, OutputEvent) else f"\n...[{event.message}]...\n"
        printed += len(text)
        await ctx.report_progress(printed, None, text)

    async def on_start(execution: Execution) -> None:
        if streaming:
            await ctx.report_progress(0, None, f"execution {execution.id}")

    asking = await asking_of(ctx, session)
    asked = await answered(core, session, ctx, asking)
    cursor: str | None = asked.cursor if asked is not None else None
    # Its id known before it is queued (the caller's, the asked round's, or a new one): a question names it.
    execution_id = asked.execution if asked is not None else execution_id or uuid.uuid4().hex
    if asked is None:
        try:  # before it is queued: every call it makes is held after this
            cursor = await core.approvals.holds.cursor(session.scope)
        except GatewayError:  # the held calls' store away: nothing to ask about (its calls wait for the approval API)
            cursor = None
    run = asyncio.ensure_future(
        core.executions.execute(
            session.scope,
            code,
            timeout_seconds,
            progress if streaming else None,
            execution_id=execution_id,
            on_start=on_start,
            approval=approval,
        )
    )
    if cursor is None:
        return await run
    asker = asyncio.ensure_future(ask(core, session, cursor, ctx, asking, execution_id))
    try:
        await asyncio.wait({run, asker}, return_when=asyncio.FIRST_COMPLETED)
        if run.done():
            return run.result()
        # The asker raised (this client cannot decide: its error says how to), or has a question for this round.
        return asker.result().input_required(session.scope, execution_id, cursor)
    finally:
        for task in (run, asker):  # a running execution runs on: only this wait for it ends
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _answer(call: Awaitable[T]) -> T:
    """The gateway's refusals as MCP tool errors (`isError`), with the contract's code and message (and an
    execution's id and state)."""
    try:
        return await call
    except ExecutionError as exc:
        raise ToolError(exc.describe()) from None
    except GatewayError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from None
