"""One session's sandbox (hostile code holding its own token) cannot answer, or read, another session's executions:
an execution id is looked up in the caller's own session only."""

from __future__ import annotations

import asyncio

import pytest

from gateway.errors import NotFound
from gateway.executions.broker import ExecutionBroker, ExecutionOutcome


def test_a_sandbox_cannot_answer_another_sessions_execution() -> None:
    async def scenario() -> tuple[str, ExecutionOutcome]:
        broker = ExecutionBroker(max_code_bytes=1 << 20)
        broker.open("ns/victim/uid-1")
        broker.open("ns/attacker/uid-2")
        waiting = asyncio.create_task(broker.execute("ns/victim/uid-1", "print(secret)", 5))
        given = await broker.next("ns/victim/uid-1", 1)
        assert given is not None
        assert await broker.next("ns/attacker/uid-2", 0.05) is None  # the attacker's poll never sees it
        with pytest.raises(NotFound):
            broker.complete("ns/attacker/uid-2", given.id, ExecutionOutcome(stdout="forged"))
        assert not waiting.done()
        broker.complete("ns/victim/uid-1", given.id, ExecutionOutcome(stdout="real"))
        return given.code, await waiting

    code, outcome = asyncio.run(scenario())
    assert code == "print(secret)" and outcome.stdout == "real"
