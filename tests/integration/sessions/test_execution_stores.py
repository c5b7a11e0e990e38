"""The session broker's rules, over both of its stores: this process's, and Redis (a real redis-server) shared by
two gateway replicas, one serving the session's runtime and the other its caller."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest

from gateway.errors import ExecutionTimeout, NoSession, NotFound, SessionEnded, SessionStoreUnavailable
from gateway.executions.broker import ExecutionBroker
from gateway.executions.errors import ExecutionError, ExecutionIdInUse
from gateway.executions.memory_store import MemoryExecutionStore
from gateway.executions.models import (
    ExecutionOutcome,
    ExecutionResult,
    ExecutionStatus,
    GapEvent,
    OutputChunk,
    OutputEvent,
)
from gateway.executions.redis_store import RedisExecutionStore
from gateway.executions.store import MAX_STREAMED_CHARACTERS
from tests.support.components import redis_server

VICTIM, ATTACKER = "ns/victim/uid-1", "ns/attacker/uid-2"
Replicas = Callable[[], "asyncio.AbstractAsyncContextManager[tuple[ExecutionBroker, ExecutionBroker]]"]


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(params=["memory", "redis"])
def replicas(request: pytest.FixtureRequest) -> Replicas:
    """Two brokers: `runtime_side` answers the sandbox's polls, `caller_side` its callers (the same process's store
    for memory; two replicas' own connections to one Redis)."""

    @asynccontextmanager
    async def make() -> AsyncIterator[tuple[ExecutionBroker, ExecutionBroker]]:
        if request.param == "memory":
            store = MemoryExecutionStore()
            brokers = (ExecutionBroker(store, 1 << 20), ExecutionBroker(store, 1 << 20))
        else:
            url = request.getfixturevalue("redis_url")
            brokers = (
                ExecutionBroker(RedisExecutionStore(url), 1 << 20),
                ExecutionBroker(RedisExecutionStore(url), 1 << 20),
            )
        try:
            yield brokers
        finally:
            for broker in brokers:
                await broker.close()

    return make


def _opened(name: str, *brokers: ExecutionBroker) -> str:
    """A scope of its own per test (Redis outlives a test; a session's scope carries its uid), open in `brokers`."""
    scope = f"{name}-{asyncio.get_running_loop().time()}"
    for broker in brokers:
        broker.open(scope)
    return scope


def test_an_execution_runs_on_the_runtime_polling_another_replica(replicas: Replicas) -> None:
    async def scenario() -> tuple[str, ExecutionOutcome]:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            waiting = asyncio.create_task(caller_side.execute(scope, "print(2+2)", 5))
            given = await runtime_side.next(scope, 5)
            assert given is not None
            await runtime_side.complete(scope, given.id, ExecutionOutcome(stdout="4\n", stderr="x" * 100_000))
            return given.code, await waiting

    code, outcome = asyncio.run(scenario())
    assert code == "print(2+2)" and outcome.stdout == "4\n"
    assert len(outcome.stderr) < 40_000 and "truncated" in outcome.stderr  # bounded head and tail, whoever posted it


def test_a_sandbox_can_neither_take_nor_answer_another_sessions_execution(replicas: Replicas) -> None:
    async def scenario() -> tuple[str, ExecutionOutcome]:
        async with replicas() as (runtime_side, caller_side):
            victim = _opened(VICTIM, runtime_side, caller_side)
            attacker = _opened(ATTACKER, runtime_side, caller_side)
            waiting = asyncio.create_task(caller_side.execute(victim, "print(secret)", 5))
            given = await runtime_side.next(victim, 5)
            assert given is not None
            assert await runtime_side.next(attacker, 0.05) is None  # the attacker's poll never sees it
            with pytest.raises(NotFound):
                await runtime_side.complete(attacker, given.id, ExecutionOutcome(stdout="forged"))
            with pytest.raises(NotFound):
                await runtime_side.output(attacker, given.id, [OutputChunk(seq=1, stream="stdout", text="forged")])
            assert not waiting.done()
            await runtime_side.complete(victim, given.id, ExecutionOutcome(stdout="real"))
            return given.code, await waiting

    code, outcome = asyncio.run(scenario())
    assert code == "print(secret)" and outcome.stdout == "real"


def test_one_execution_is_taken_once_even_by_competing_polls(replicas: Replicas) -> None:
    async def scenario() -> list[bool]:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            waiting = asyncio.create_task(caller_side.execute(scope, "once()", 5))
            polls = await asyncio.gather(*(b.next(scope, 0.5) for b in (runtime_side, caller_side, runtime_side)))
            taken = [p for p in polls if p is not None]
            await runtime_side.complete(scope, taken[0].id, ExecutionOutcome())
            await waiting
            return [p is not None for p in polls]

    assert sorted(asyncio.run(scenario())) == [False, False, True]


def test_a_caller_that_gave_up_is_skipped_and_a_late_outcome_is_kept_for_its_id(replicas: Replicas) -> None:
    async def scenario() -> str:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            # Running, its caller's wait runs out: told it is running, with its id; the outcome that comes later is
            # kept for whoever asks for that id (it was never refused: issue 31.3).
            first = asyncio.create_task(caller_side.execute(scope, "slow()", 0.1))
            given = await runtime_side.next(scope, 5)
            assert given is not None
            with pytest.raises(ExecutionTimeout) as timed_out:
                await asyncio.wait_for(first, 10)
            assert isinstance(timed_out.value, ExecutionError)
            assert (timed_out.value.state, timed_out.value.execution_id) == ("running", given.id)
            await runtime_side.complete(scope, given.id, ExecutionOutcome(stdout="late"))
            late = await caller_side.status(scope, given.id)
            assert late.state == "finished" and late.outcome is not None and late.outcome.stdout == "late"
            # Queued, its caller cancelled (a client that went away): never run; the next one is.
            queued = asyncio.create_task(caller_side.execute(scope, "never()", 5))
            await asyncio.sleep(0.2)
            queued.cancel()
            with pytest.raises(asyncio.CancelledError):
                await queued
            second = asyncio.create_task(caller_side.execute(scope, "next()", 5))
            taken = await runtime_side.next(scope, 5)
            assert taken is not None
            await runtime_side.complete(scope, taken.id, ExecutionOutcome(stdout="ok"))
            assert (await second).stdout == "ok"
            return taken.code

    assert asyncio.run(scenario()) == "next()"


def test_ending_a_session_fails_its_callers_with_the_reason_and_stops_its_runtime(replicas: Replicas) -> None:
    async def scenario() -> None:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            running = asyncio.create_task(caller_side.execute(scope, "a()", 30))
            assert await runtime_side.next(scope, 5) is not None
            queued = asyncio.create_task(caller_side.execute(scope, "b()", 30))
            await asyncio.sleep(0.2)
            poll = asyncio.create_task(runtime_side.next(scope, 30))
            await runtime_side.end(scope, "IdleTimeout: idle for 900 s")
            for waiting in (running, queued):
                with pytest.raises(SessionEnded, match="IdleTimeout"):
                    await asyncio.wait_for(waiting, 10)
            with pytest.raises(NoSession):
                await asyncio.wait_for(poll, 15)
            with pytest.raises(NoSession):
                await caller_side.execute(scope, "c()", 5)

    asyncio.run(scenario())


def test_streamed_output_comes_in_order_and_a_flood_is_cut_once(replicas: Replicas) -> None:
    async def scenario() -> tuple[list[OutputEvent], ExecutionOutcome]:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            events: list[OutputEvent] = []
            outcome: list[ExecutionOutcome] = []

            async def read() -> None:
                execution = await caller_side.start(scope, "flood()", 10, stream=True)
                async for event in caller_side.events(scope, execution):
                    (events if isinstance(event, OutputEvent) else outcome).append(event)  # type: ignore[arg-type]

            reader = asyncio.create_task(read())
            given = await runtime_side.next(scope, 5)
            assert given is not None and given.stream
            await runtime_side.output(scope, given.id, [OutputChunk(seq=1, stream="stdout", text="first\n")])
            await runtime_side.output(scope, given.id, [OutputChunk(seq=2, stream="stderr", text="warn\n")])
            block = "y" * 60_000
            blocks = MAX_STREAMED_CHARACTERS // len(block) + 5
            for number in range(3, 3 + blocks):  # past the budget: dropped, said once
                await runtime_side.output(scope, given.id, [OutputChunk(seq=number, stream="stdout", text=block)])
            await runtime_side.complete(scope, given.id, ExecutionOutcome(stdout="done"), 2 + blocks)
            await asyncio.wait_for(reader, 10)
            with pytest.raises(NotFound):  # finished: no more output
                await runtime_side.output(scope, given.id, [OutputChunk(seq=99, stream="stdout", text="after")])
            return events, outcome[0]

    events, outcome = asyncio.run(scenario())
    assert [e.text for e in events[:2]] == ["first\n", "warn\n"] and events[1].stream == "stderr"
    streamed = sum(len(e.text) for e in events if e.text == "y" * 60_000)
    assert MAX_STREAMED_CHARACTERS - 60_000 < streamed <= MAX_STREAMED_CHARACTERS
    assert sum("streamed output past" in e.text for e in events) == 1 and outcome.stdout == "done"


def test_an_unreachable_session_store_is_a_clear_503() -> None:
    async def scenario() -> None:
        broker = ExecutionBroker(RedisExecutionStore("redis://127.0.0.1:1/0", connect_timeout_seconds=0.5), 1 << 20)
        try:
            with pytest.raises(SessionStoreUnavailable) as raised:
                await broker.execute(VICTIM, "print(1)", 1)
            assert raised.value.status == 503
            with pytest.raises(SessionStoreUnavailable):
                await broker.next(VICTIM, 0.1)
        finally:
            await broker.close()

    asyncio.run(scenario())


def test_every_step_sent_again_changes_nothing_twice(replicas: Replicas) -> None:
    """What the runtime (or a store client after a lost answer) sends again: output chunks are kept once each, a
    chunk numbered past the next expected one leaves a gap its readers are told of, a second outcome is a duplicate
    (the first stands), and an execution id offered again is that execution (other code under it is refused)."""

    async def scenario() -> tuple[list[OutputEvent | GapEvent | ExecutionResult], ExecutionStatus]:
        async with replicas() as (runtime_side, caller_side):
            scope = _opened(VICTIM, runtime_side, caller_side)
            execution = await caller_side.start(scope, "once()", 10, stream=True, execution_id="chosen-by-caller")
            again = await caller_side.start(scope, "once()", 10, stream=True, execution_id="chosen-by-caller")
            assert again.id == execution.id
            with pytest.raises(ExecutionIdInUse):
                await caller_side.start(scope, "other()", 10, execution_id="chosen-by-caller")
            given = await runtime_side.next(scope, 5)
            assert given is not None and given.id == "chosen-by-caller"
            assert await runtime_side.next(scope, 0.2) is None  # offered twice, queued once
            first = [
                OutputChunk(seq=1, stream="stdout", text="one\n"),
                OutputChunk(seq=2, stream="stdout", text="two\n"),
            ]
            await runtime_side.output(scope, given.id, first)
            await runtime_side.output(scope, given.id, first)  # its answer was lost: sent again
            await runtime_side.output(scope, given.id, [OutputChunk(seq=5, stream="stdout", text="five\n")])
            await runtime_side.complete(scope, given.id, ExecutionOutcome(stdout="done"), 6)
            await runtime_side.complete(scope, given.id, ExecutionOutcome(stdout="forged"), 6)  # a duplicate
            lines = [line async for line in caller_side.events(scope, execution)]
            return lines, await runtime_side.status(scope, given.id)

    lines, status = asyncio.run(scenario())
    assert [line.text for line in lines if isinstance(line, OutputEvent)] == ["one\n", "two\n", "five\n"]
    gaps = [(line.from_chunk, line.to_chunk) for line in lines if isinstance(line, GapEvent)]
    assert gaps == [(3, 4), (6, 6)]  # never posted; and the last one, numbered but never sent
    assert isinstance(lines[-1], ExecutionResult) and lines[-1].stdout == "done"
    assert status.state == "finished" and status.outcome == lines[-1]


def test_an_execution_is_asked_for_by_its_own_session_only(replicas: Replicas) -> None:
    """Re-attaching (its state, its stream) names the session: another session's id, or an id never given out, is
    not found; a re-attaching caller past the last chunk still gets the outcome."""

    async def scenario() -> list[OutputEvent | GapEvent | ExecutionResult]:
        async with replicas() as (runtime_side, caller_side):
            victim = _opened(VICTIM, runtime_side, caller_side)
            attacker = _opened(ATTACKER, runtime_side, caller_side)
            waiting = asyncio.create_task(caller_side.execute(victim, "print(secret)", 5))
            given = await runtime_side.next(victim, 5)
            assert given is not None
            for scope, execution_id in ((attacker, given.id), (victim, "never-given-out")):
                with pytest.raises(NotFound):
                    await caller_side.status(scope, execution_id)
                with pytest.raises(NotFound):
                    await caller_side.follow(scope, execution_id)
            await runtime_side.complete(victim, given.id, ExecutionOutcome(stdout="real"))
            assert (await waiting).stdout == "real"
            return [line async for line in await runtime_side.follow(victim, given.id, after=1 << 40)]

    lines = asyncio.run(scenario())
    assert len(lines) == 1 and isinstance(lines[0], ExecutionResult) and lines[0].stdout == "real"
