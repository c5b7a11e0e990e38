"""Interactive sessions end to end without gVisor: code in, outcome out, one namespace per session."""

from __future__ import annotations

import concurrent.futures
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.errors import CodeTooLarge, ExecutionTimeout, NoSession, SessionEnded
from gateway.executions.models import ExecutionOutcome, OutputEvent
from mcpexec.local.sessions import LocalSession
from tests.support.sessions import SessionsThread

RAW_EMAIL = "alice.martin@example.com"


def execute(sessions: SessionsThread, session: LocalSession, code: str, timeout: float = 30) -> ExecutionOutcome:
    return sessions.execute(session, code, timeout)


@pytest.fixture
def session(sessions: SessionsThread) -> Iterator[LocalSession]:
    claimed = sessions.claim_ready()
    yield claimed
    sessions.run(sessions.sessions.end(claimed, "the test is over"))


def test_variables_imports_and_functions_persist_with_top_level_await(
    sessions: SessionsThread, session: LocalSession
) -> None:
    first = execute(
        sessions, session, "import asyncio\nawait asyncio.sleep(0)\ncount = 41\ndef twice(x):\n    return 2 * x"
    )
    assert first.error is None and first.stdout == "" and first.stderr == ""
    second = execute(sessions, session, "import sys\ncount += 1\nprint(twice(count))\nprint('warn', file=sys.stderr)")
    assert second.error is None
    assert second.stdout == "84\n"
    assert second.stderr == "warn\n"
    assert second.duration_ms >= 0


def test_an_exception_is_the_outcome_and_its_traceback_goes_to_stderr(
    sessions: SessionsThread, session: LocalSession
) -> None:
    outcome = execute(sessions, session, "print('before')\n1 / 0")
    assert outcome.error == "ZeroDivisionError: division by zero"
    assert outcome.stdout == "before\n"
    assert "Traceback" in outcome.stderr and "1 / 0" in outcome.stderr


def test_tool_calls_through_real_servers_and_personal_data_stays_tokenized(
    sessions: SessionsThread, session: LocalSession
) -> None:
    discovery = execute(
        sessions, session, "print(sorted(s['name'] for s in list_servers()))\nprint(search_tools('entities'))"
    )
    assert discovery.error is None, discovery.stderr
    assert "['demo', 'memory']" in discovery.stdout and "memory/create_entities" in discovery.stdout
    stored = execute(
        sessions,
        session,
        "from servers.memory import create_entities, read_graph\n"
        "create_entities(entities=[{'name': 'lab', 'entityType': 'place', 'observations': ['quiet']}])\n"
        "graph = read_graph()\n"
        "print([e['name'] for e in graph['entities']])",
    )
    assert stored.error is None, stored.stderr
    assert "lab" in stored.stdout
    customer = execute(
        sessions, session, "c = call_tool('demo/get_customer', {'customer_id': 'C001'})\nprint(c['email'])"
    )
    assert customer.error is None, customer.stderr
    assert customer.stdout.startswith("[EMAIL_") and RAW_EMAIL not in customer.stdout
    # The token goes back to a tool as it is: the gateway gives the tool the real address.
    sent = execute(
        sessions, session, "print(call_tool('demo/send_message', {'to': c['email'], 'subject': 'hi', 'body': 'x'}))"
    )
    assert sent.error is None and RAW_EMAIL not in sent.stdout
    assert sessions.sessions.core.usage.of(session.context.scope).tool_calls >= 4


def test_a_snippet_past_its_time_limit_is_stopped_and_the_session_goes_on(
    sessions: SessionsThread, session: LocalSession
) -> None:
    execute(sessions, session, "kept = 'still here'")
    stuck = execute(sessions, session, "while True:\n    pass", timeout=0.5)
    assert stuck.error is not None and "time limit" in stuck.error
    after = execute(sessions, session, "print(kept)")
    assert after.stdout == "still here\n"


def test_concurrent_executions_run_one_at_a_time_in_order(sessions: SessionsThread, session: LocalSession) -> None:
    execute(sessions, session, "import time\nspans = []")
    snippet = "s = time.monotonic()\ntime.sleep(0.2)\nspans.append((s, time.monotonic()))\nprint(len(spans))"
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda _: execute(sessions, session, snippet), range(4)))
    assert sorted(o.stdout for o in outcomes) == ["1\n", "2\n", "3\n", "4\n"]
    spans = json.loads(execute(sessions, session, "import json\nprint(json.dumps(spans))").stdout)
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(spans))


def test_output_is_bounded_head_and_tail(sessions: SessionsThread, session: LocalSession) -> None:
    flood = execute(sessions, session, "print('HEAD' + 'x' * 500_000 + 'TAIL')")
    assert flood.error is None
    assert len(flood.stdout) < 21_000
    assert flood.stdout.startswith("HEAD") and flood.stdout.rstrip().endswith("TAIL")
    assert "truncated" in flood.stdout


def test_code_over_the_request_limit_is_refused(sessions: SessionsThread, session: LocalSession) -> None:
    with pytest.raises(CodeTooLarge, match="over the gateway's limit"):
        execute(sessions, session, "#" * (17 << 20))
    assert execute(sessions, session, "print('fine')").stdout == "fine\n"


def test_sessions_do_not_share_a_namespace_and_many_run_at_once(
    sessions: SessionsThread, session: LocalSession
) -> None:
    execute(sessions, session, "secret = 42")
    others = [sessions.run(sessions.sessions.claim()) for _ in range(8)]  # more than asyncio's shared thread pool
    for number, other in enumerate(others):
        assert execute(sessions, other, f"print('secret' in globals())\nmine = {number}").stdout == "False\n"
    assert [execute(sessions, other, "print(mine)").stdout for other in others] == [f"{n}\n" for n in range(8)]
    for other in others:
        sessions.run(sessions.sessions.end(other, "the test is over"))


def test_a_snippet_that_ends_the_runtime_ends_the_session_with_the_reason(
    sessions: SessionsThread, session: LocalSession
) -> None:
    with pytest.raises(SessionEnded, match=r"the session's sandbox exited \(exit 3\)"):
        execute(sessions, session, "import os\nos._exit(3)")
    with pytest.raises(NoSession, match="no interactive session"):
        execute(sessions, session, "print('never')")


def test_an_ended_session_refuses_and_a_waiting_execution_learns_why(
    sessions: SessionsThread, session: LocalSession
) -> None:
    running = concurrent.futures.ThreadPoolExecutor(1).submit(execute, sessions, session, "import time\ntime.sleep(30)")
    sessions.run(sessions.sessions.end(session, "ended by the test"))
    with pytest.raises(SessionEnded, match="ended by the test"):
        running.result(timeout=30)


def test_no_outcome_in_time_is_a_precise_timeout(sessions: SessionsThread, session: LocalSession) -> None:
    # A snippet that catches the runtime's timer and keeps going: the broker gives up after the limit and its grace.
    snippet = (
        "import time\nend = time.monotonic() + 8\nwhile time.monotonic() < end:\n"
        "    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"
    )
    with pytest.raises(ExecutionTimeout, match=r"no outcome within 0\.5 s"):
        execute(sessions, session, snippet, timeout=0.5)
    assert execute(sessions, session, "print('free again')", timeout=30).stdout == "free again\n"


def test_a_streaming_execution_sends_its_output_while_it_runs(
    sessions: SessionsThread, session: LocalSession, sessions_root: Path
) -> None:
    """The snippet prints, then waits until its reader has seen that line: it writes an entity into server-memory's
    graph file, which the snippet reads through the real server. Without streaming the line would come with the
    outcome only, and the snippet would run into its limit."""
    code = (
        "print('first')\n"
        "import time\n"
        "while 'go-signal' not in str(call_tool('memory/read_graph', {})):\n"
        "    time.sleep(0.05)\n"
        "print('second')\n"
        "for i in range(300_000):\n"
        "    print(i)"
    )
    events: list[OutputEvent] = []

    async def on_output(event: OutputEvent) -> None:
        events.append(event)
        if event.text.startswith("first\n") and len(events) == 1:
            entity = {"type": "entity", "name": "go-signal", "entityType": "signal", "observations": []}
            with (sessions_root / "memory.jsonl").open("a") as graph:
                graph.write("\n" + json.dumps(entity) + "\n")  # the server writes no last newline

    scope = session.context.scope
    outcome = sessions.run(sessions.sessions.core.executions.execute(scope, code, 60, on_output))
    assert outcome.error is None, outcome.stderr
    streamed = "".join(event.text for event in events)
    # Everything printed came as it was printed, in order (2.3 MB: the stream stops at about 1,000,000 characters
    # and says so); the outcome keeps its head and tail.
    assert streamed.startswith("first\nsecond\n0\n1\n") and "streamed output past" in streamed
    assert 1_000_000 <= len(streamed) < 1_100_000
    assert outcome.stdout.startswith("first\nsecond\n") and outcome.stdout.endswith("299999\n")
    assert execute(sessions, session, "print('still here')").stdout == "still here\n"


def test_a_session_running_faster_than_the_request_budget_is_not_rate_limited(
    sessions: SessionsThread, session: LocalSession
) -> None:
    """Each execution costs its runtime a poll and an outcome post: 300 back to back are several times the task's
    budget of 100 requests a second, and none of them is refused (the budget is left to the code's tool calls)."""
    errors = sessions.sessions.core.metrics.errors.labels("rate_limited")
    before = errors._value.get()
    for number in range(300):
        assert execute(sessions, session, f"print({number})").stdout == f"{number}\n"
    assert errors._value.get() == before
    # ...and the code's own requests still spend it.
    flood = execute(sessions, session, "n = 0\nfor _ in range(300):\n    list_servers()\n    n += 1\nprint(n)")
    assert "rate_limited" in (flood.error or "") or errors._value.get() > before, flood
