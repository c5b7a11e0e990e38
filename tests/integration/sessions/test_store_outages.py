"""Interactive sessions through a session store (a real redis-server) that is killed (SIGKILL) and started again on
the same port, with its data, from an older snapshot, or with none; two gateway replicas in this process (the real
runtime polls one, callers use the other); the real session runtime as a subprocess (issue 31.3).

The code counts its runs by appending a line to a workspace file, and waits for a file the test creates, so that the
outage falls while it runs; nothing here asserts how long anything took."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.errors import NotFound
from gateway.executions.errors import ExecutionLost, ExecutionStoreUnavailable, ExecutionTimedOut
from gateway.executions.models import ExecutionResult, GapEvent, OutputEvent
from tests.integration.sessions.replicas import ReplicatedSession, replicated_session, wait_until
from tests.support.session_api import RUNS_UNTIL_GO

OUTAGE_SECONDS = 5

COUNTED = "with open('counted.log', 'a') as log:\n    log.write('ran\\n')\nprint('counted')"


@pytest.fixture
def session() -> Iterator[ReplicatedSession]:
    with replicated_session() as replicated:
        yield replicated


def _execute(session: ReplicatedSession, code: str, timeout: float = 30, **options: Any) -> ExecutionResult:
    return session.other.run(session.other.broker.execute(session.scope, code, timeout, **options))


def _outage(session: ReplicatedSession, data: str, during: Any = None) -> None:
    """Redis killed, `during()` done while it is away, then started again after OUTAGE_SECONDS."""
    session.redis.kill()
    if during is not None:
        during()
    time.sleep(OUTAGE_SECONDS)
    session.redis.start(data)  # type: ignore[arg-type]


def _go(session: ReplicatedSession) -> None:
    (session.workspace / "go").touch()


@pytest.mark.timeout(240)
def test_an_execution_across_a_redis_outage_runs_once_and_its_caller_gets_the_outcome(
    session: ReplicatedSession,
) -> None:
    """The snippet ends while Redis is away: the runtime's outcome post fails and is sent again until it is taken;
    the caller's wait rides out the outage; the outcome comes once, the code ran once, the session goes on."""
    _execute(session, "x = 41")
    waiting = session.other.submit(session.other.broker.execute(session.scope, RUNS_UNTIL_GO, 120))
    wait_until(lambda: session.lines_of("ran.log") == 1, "the snippet to run")
    _outage(session, "kept", during=lambda: _go(session))
    outcome = waiting.result(timeout=180)
    assert outcome.error is None and outcome.stdout == "started\ndone\n", outcome
    assert session.lines_of("ran.log") == 1
    # Any replica tells the same outcome by its id, however often asked.
    for replica in (session.polled, session.other):
        status = replica.run(replica.broker.status(session.scope, outcome.execution_id))
        assert status.state == "finished" and status.outcome == outcome
    assert _execute(session, "print(x + 1)").stdout == "42\n"
    assert session.runtime.process.poll() is None


@pytest.mark.timeout(240)
def test_a_redis_restart_without_its_data_is_a_clear_lost_state_and_the_session_goes_on(
    session: ReplicatedSession,
) -> None:
    """Redis comes back empty (the chart's Redis keeps nothing): the caller is told its execution was lost, with
    its id and state `lost` (it ran: never a silent wrong answer, never `not_taken`); the runtime and its variables
    live on."""
    _execute(session, "x = 41")
    waiting = session.other.submit(session.other.broker.execute(session.scope, RUNS_UNTIL_GO, 120))
    wait_until(lambda: session.lines_of("ran.log") == 1, "the snippet to run")
    _outage(session, "none", during=lambda: _go(session))
    with pytest.raises(ExecutionLost) as lost:
        waiting.result(timeout=180)
    assert lost.value.state == "lost" and lost.value.status == 502
    assert "lost the records of execution" in lost.value.message and "it may have run" in lost.value.message
    with pytest.raises(NotFound):
        session.polled.run(session.polled.broker.status(session.scope, lost.value.execution_id))
    assert session.lines_of("ran.log") == 1
    assert _execute(session, "print(x + 1)").stdout == "42\n"
    assert session.runtime.process.poll() is None


class _Reader:
    """A streaming caller on a replica: its lines as they come, `seen` set when a line holds a text."""

    def __init__(self, session: ReplicatedSession, code: str) -> None:
        self.lines: list[OutputEvent | GapEvent | ExecutionResult] = []
        self._changed = threading.Condition()
        broker, scope = session.other.broker, session.scope

        async def read() -> None:
            execution = await broker.start(scope, code, 120, stream=True)
            async for line in broker.events(scope, execution):
                with self._changed:
                    self.lines.append(line)
                    self._changed.notify_all()

        self.done = session.other.submit(read())

    def wait_for(self, text: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: text in self.text(), 60), self.lines

    def text(self) -> str:
        return "".join(line.text for line in self.lines if isinstance(line, OutputEvent))


def _said(lines: list[Any]) -> list[str]:
    return "".join(line.text for line in lines if isinstance(line, OutputEvent)).split()


WAITS_BETWEEN_LINES = """import os, time
def wait(name):
    while not os.path.exists(name):
        time.sleep(0.05)
for n in range(1, 13):
    print(f'line-{n}', flush=True)
    if n in (3, 6):
        wait(f'go-{n}')
    else:
        time.sleep(0.05)"""


@pytest.mark.timeout(240)
def test_streamed_output_across_a_redis_outage_comes_whole_once_in_order(session: ReplicatedSession) -> None:
    """Twelve lines, Redis away after the third: the output posts made while it is away are sent again, each chunk
    taken once; the reader gets every line once, in order, and the outcome."""
    reader = _Reader(session, WAITS_BETWEEN_LINES)
    reader.wait_for("line-3")
    _outage(session, "kept", during=lambda: (session.workspace / "go-3").touch())
    (session.workspace / "go-6").touch()
    reader.done.result(timeout=180)
    assert _said(reader.lines) == [f"line-{n}" for n in range(1, 13)]
    assert not any(isinstance(line, GapEvent) for line in reader.lines)
    outcome = reader.lines[-1]
    assert isinstance(outcome, ExecutionResult) and outcome.stdout.split() == _said(reader.lines)


@pytest.mark.timeout(240)
def test_a_redis_that_comes_back_from_an_older_snapshot_never_loses_output_silently(
    session: ReplicatedSession,
) -> None:
    """Redis saved after line 3, then killed after line 6 and started from that snapshot: lines 4-6 are gone from
    the store. The reader that had them is given every line once; a caller re-attaching from the start after the
    restart is told which chunks were lost (a gap line), then gets the rest and the outcome."""
    reader = _Reader(session, WAITS_BETWEEN_LINES)
    reader.wait_for("line-3")
    session.redis.snapshot()
    (session.workspace / "go-3").touch()
    reader.wait_for("line-6")
    session.redis.kill()
    session.redis.start("snapshot")
    (session.workspace / "go-6").touch()
    reader.done.result(timeout=180)
    assert _said(reader.lines) == [f"line-{n}" for n in range(1, 13)]
    outcome = reader.lines[-1]
    assert isinstance(outcome, ExecutionResult)

    async def reattach() -> list[OutputEvent | GapEvent | ExecutionResult]:
        return [line async for line in await session.polled.broker.follow(session.scope, outcome.execution_id)]

    again = session.polled.run(reattach())
    gaps = [line for line in again if isinstance(line, GapEvent)]
    assert len(gaps) == 1 and "were lost on the way" in gaps[0].message, again
    said = _said(again)
    assert said[:3] == ["line-1", "line-2", "line-3"] and said[-6:] == [f"line-{n}" for n in range(7, 13)]
    assert not {"line-4", "line-5", "line-6"} & set(said)
    assert again[-1] == outcome


@pytest.mark.timeout(240)
def test_a_caller_whose_replica_dies_re_attaches_through_another_and_gets_the_outcome(
    session: ReplicatedSession,
) -> None:
    """The caller's replica (a process of its own) is SIGKILLed while the code runs: nothing of it cancels the
    execution; another replica, asked by the execution's id, says it runs, then gives its outcome; it ran once."""
    execution_id = "caller-chosen-0001"
    command = [sys.executable, "-m", "tests.integration.sessions.caller_process"]
    caller = subprocess.Popen(
        [*command, session.redis.url, session.scope, execution_id, RUNS_UNTIL_GO], stdout=subprocess.PIPE
    )
    try:
        wait_until(lambda: session.lines_of("ran.log") == 1, "the snippet to run")
    finally:
        caller.kill()
        caller.wait()
    broker = session.polled.broker
    assert session.polled.run(broker.status(session.scope, execution_id)).state == "running"
    _go(session)

    async def reattach() -> list[OutputEvent | GapEvent | ExecutionResult]:
        return [line async for line in await broker.follow(session.scope, execution_id)]

    lines = session.polled.run(reattach())
    assert len(lines) == 1 and isinstance(lines[0], ExecutionResult)
    assert lines[0].stdout == "started\ndone\n" and lines[0].execution_id == execution_id
    assert session.lines_of("ran.log") == 1


@pytest.mark.timeout(240)
def test_a_caller_told_not_taken_sends_it_again_and_it_runs_once(session: ReplicatedSession) -> None:
    """Redis away when the call comes: 503 `session_store_unavailable`, state `not_taken`, an id; sent again (same
    id) once Redis is back, it runs, once. Queued behind a snippet that outlasts the caller's wait: cancelled,
    `not_taken`; sent again, it runs once."""
    session.redis.kill()
    with pytest.raises(ExecutionStoreUnavailable) as refused:
        _execute(session, COUNTED)
    assert (refused.value.state, refused.value.status, refused.value.retry_after) == ("not_taken", 503, 1)
    session.redis.start("kept")
    again = _execute(session, COUNTED, execution_id=refused.value.execution_id)
    assert again.stdout == "counted\n" and again.execution_id == refused.value.execution_id
    assert session.lines_of("counted.log") == 1

    blocking = session.other.submit(session.other.broker.execute(session.scope, RUNS_UNTIL_GO, 120))
    wait_until(lambda: session.lines_of("ran.log") == 1, "the blocking snippet to run")
    queued = COUNTED.replace("counted.log", "queued.log")
    with pytest.raises(ExecutionTimedOut) as timed_out:
        _execute(session, queued, timeout=0.5)
    assert timed_out.value.state == "not_taken" and timed_out.value.status == 504, timed_out.value
    _go(session)
    blocking.result(timeout=60)
    sent_again = _execute(session, queued, execution_id=timed_out.value.execution_id)
    assert sent_again.stdout == "counted\n"
    assert session.lines_of("queued.log") == 1
    # The same id again is the same execution: its outcome, not a second run.
    assert _execute(session, COUNTED, execution_id=refused.value.execution_id) == again
    assert session.lines_of("counted.log") == 1


@pytest.mark.timeout(240)
def test_an_outage_longer_than_the_runtimes_window_ends_the_session_saying_why(session: ReplicatedSession) -> None:
    """The session's idle timeout (3 s here) is how long the runtime sends an outcome the gateway cannot take:
    past it, the runtime gives up and ends the session with the reason; its caller is told its execution ran
    (state `running`), never that it did not."""
    waiting = session.other.submit(
        session.other.broker.execute(session.scope, RUNS_UNTIL_GO, 5, idle_timeout_seconds=3)
    )
    wait_until(lambda: session.lines_of("ran.log") == 1, "the snippet to run")
    session.redis.kill()
    _go(session)
    run = session.runtime.wait(timeout=120)
    session.redis.start("kept")
    assert run.exit_code == 1, run
    error = run.result["error"]
    assert error.startswith("gateway: session_store_unavailable (503): the gateway took nothing of execution "), error
    assert "for 3 s (the session's idle timeout)" in error and error.endswith("; the session ends")
    with pytest.raises(ExecutionTimedOut) as timed_out:
        waiting.result(timeout=180)
    assert timed_out.value.state == "running"
    assert session.lines_of("ran.log") == 1
    assert json.loads(json.dumps(run.result))["phase"] == "Failed"
