"""Held calls shown as they happen to whoever waits on a session's execution: the execute API's stream, the MCP front
door (which asks its client's user through elicitation), `mcpexec serve`. What changes comes from the held calls'
store (any replica's), read from a cursor taken before the execution is queued: a call held while it runs is seen."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TypeVar

from gateway.approvals.plans import PLAN_TOOL, shown_calls
from gateway.approvals.store import Change
from gateway.core import GatewayCore
from gateway.executions.models import ApprovalEvent

log = logging.getLogger("mcpexec.gateway.approval_watch")

A = TypeVar("A")
B = TypeVar("B")


async def shown(core: GatewayCore, scope: str, change: Change) -> ApprovalEvent:
    """The change as a caller sees it: a plan held with its calls."""
    plan = change.state == "pending" and change.tool == PLAN_TOOL
    return ApprovalEvent(
        state=change.state,
        tool=change.tool,
        digest=change.digest,
        arguments=change.preview or None,
        calls=shown_calls(await core.approvals.plan_of(scope, change.digest)) if plan else None,
        approver=change.approver or None,
        reason=change.reason or None,
    )


async def changes(core: GatewayCore, scope: str, cursor: str) -> AsyncIterator[ApprovalEvent]:
    """The scope's changes past `cursor`, as the caller sees them, until the caller stops reading."""
    async for change in core.approvals.follow(scope, cursor):
        yield await shown(core, scope, change)


async def alongside(main: AsyncIterator[A], side: AsyncIterator[B]) -> AsyncIterator[A | B]:
    """`main`'s items, with `side`'s put in as they come, until `main` ends (or raises: then so does this)."""
    queue: asyncio.Queue[tuple[str, A | B | BaseException | None]] = asyncio.Queue()

    async def pump(name: str, items: AsyncIterator[A] | AsyncIterator[B]) -> None:
        try:
            async for item in items:
                await queue.put((name, item))
        except Exception as exc:  # main's error ends the stream; side's (the store away) only stops the side
            await queue.put((name, exc))
        await queue.put((name, None))

    pumps = [asyncio.create_task(pump("main", main)), asyncio.create_task(pump("side", side))]
    try:
        while True:
            name, item = await queue.get()
            if name == "main" and item is None:
                return
            if isinstance(item, BaseException):
                if name == "main":
                    raise item
                log.warning("held calls not followed", extra={"error": type(item).__name__})
                continue
            if item is not None:
                yield item
    finally:
        for task in pumps:
            task.cancel()
        for task in pumps:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
