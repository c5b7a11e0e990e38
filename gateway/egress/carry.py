"""Carrying bytes between a sandbox and a host: within the task's byte budget and the connection's idle timeout."""

from __future__ import annotations

import asyncio
import contextlib
import time

from gateway.egress.accounting import Connection, Verdict
from gateway.egress.budgets import SLICE_BYTES, EgressBudgets

CHUNK_BYTES = 64 * 1024


class Refused(Exception):
    """The connection is refused or cut: its verdict, the HTTP status a sandbox is answered with while it still can
    be, and a reason (ASCII, one line: it becomes the status line's reason phrase)."""

    def __init__(self, verdict: Verdict, status: int, reason: str) -> None:
        super().__init__(reason)
        self.verdict, self.status, self.reason = verdict, status, reason


class Allowance:
    """Bytes of the task's budget taken ahead in slices; what is left over goes back when the connection ends."""

    def __init__(self, budgets: EgressBudgets, scope: str) -> None:
        self._budgets, self._scope, self._left = budgets, scope, 0

    async def charge(self, amount: int) -> int:
        """How much of `amount` the budget lets through (all of it, or what was left of the budget)."""
        while self._left < amount:
            granted = await self._budgets.take(self._scope, max(SLICE_BYTES, amount - self._left))
            if granted == 0:
                break
            self._left += granted
        allowed = min(amount, self._left)
        self._left -= allowed
        return allowed

    async def settle(self) -> None:
        left, self._left = self._left, 0
        await self._budgets.give_back(self._scope, left)


class Activity:
    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()


async def send(
    writer: asyncio.StreamWriter,
    data: bytes,
    allowance: Allowance,
    activity: Activity,
    connection: Connection,
    upward: bool,
) -> None:
    """Write `data`, or as much of it as the task's byte budget has left (then Refused), counting what went."""
    allowed = await allowance.charge(len(data))
    if allowed:
        writer.write(data[:allowed])
        await writer.drain()
        activity.touch()
        if upward:
            connection.sent += allowed
        else:
            connection.received += allowed
    if allowed < len(data):
        raise Refused(Verdict.BYTES_SPENT, 429, "the task's egress byte budget is spent")


async def _pump(
    source: asyncio.StreamReader,
    sink: asyncio.StreamWriter,
    allowance: Allowance,
    activity: Activity,
    connection: Connection,
    upward: bool,
) -> None:
    while data := await source.read(CHUNK_BYTES):
        await send(sink, data, allowance, activity, connection, upward)
    if upward and sink.can_write_eof():
        with contextlib.suppress(OSError):
            sink.write_eof()


async def relay(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    allowance: Allowance,
    connection: Connection,
    idle_seconds: float,
) -> None:
    """Both directions until the host is done (the sandbox closing its side is passed on, and the host answers);
    Refused when the budget is spent or nothing moved either way for `idle_seconds`."""
    activity = Activity()
    down = asyncio.create_task(_pump(upstream[0], client[1], allowance, activity, connection, upward=False))
    up = asyncio.create_task(_pump(client[0], upstream[1], allowance, activity, connection, upward=True))
    try:
        while not down.done():
            remaining = idle_seconds - (time.monotonic() - activity.last)
            if remaining <= 0:
                raise Refused(Verdict.IDLE_TIMEOUT, 504, f"nothing moved for {idle_seconds:g} s")
            await asyncio.wait(
                {down, up} if not up.done() else {down}, timeout=remaining, return_when="FIRST_COMPLETED"
            )
            if up.done() and not up.cancelled() and (error := up.exception()) is not None:
                raise error
        down.result()
    finally:
        for task in (up, down):
            task.cancel()
        await asyncio.gather(up, down, return_exceptions=True)
