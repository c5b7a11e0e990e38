"""The token-savings bench's checkers: a right answer passes, a wrong one fails (a checker that cannot fail would
score every scripted or live answer as a success)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.bench.token_savings.data import DECISIONS, Commit, Data
from tests.bench.token_savings.scripts import Workflow
from tests.bench.token_savings.workflows import _expected_times, workflows


@pytest.fixture
def data(tmp_path: Path) -> Data:
    day = dt.datetime(2024, 1, 4, tzinfo=dt.UTC)  # a Thursday
    special = {0: ("fix", 3), 1: ("feat", 1), 2: ("fix", 3)}
    commits = [
        Commit(i, f"{i:02x}" * 20, *special.get(i, ("docs", 0)), day + dt.timedelta(days=7 * (i % 2), hours=i))
        for i in range(151)
    ]
    memory = tmp_path / "memory.jsonl"
    memory.write_text("")
    transcript = "\n".join(f"Wei: Decision: {d}." for d in DECISIONS)
    owners = {"service-0": "team-1", "service-1": "team-1", "service-2": "team-2", "service-3": "team-3"}
    revenue = {"north": 1200, "south": 3400}
    return Data(tmp_path, tmp_path, tmp_path / "repo", memory, revenue, transcript, commits, ["01" * 20], owners)


def _check(data: Data, name: str, answer: str, question: int = 0) -> bool:
    workflow: Workflow = next(w for w in workflows(data) if w.name == name)
    return workflow.questions[question].check(answer)


def test_sums_must_all_be_there(data: Data) -> None:
    assert _check(data, "summarise a large file", "north 1,200 and south 3,400")
    assert not _check(data, "summarise a large file", "north 1,200 and south 3,401")


def test_fixes_need_every_number_and_the_count(data: Data) -> None:
    assert _check(data, "search the git log", "2 fixes: change numbers 0 and 2")
    assert not _check(data, "search the git log", "1 fix: change number 2")


def test_top_teams_in_order(data: Data) -> None:
    assert _check(data, "query the knowledge graph", "team-1 (2), then team-2, team-3")
    assert not _check(data, "query the knowledge graph", "team-2, team-1, team-3")


def test_world_clock_needs_every_city_right(data: Data) -> None:
    expected = _expected_times("09:30")
    right = "\n".join(f"{city} {hhmm}" for city, hhmm in expected.items())
    assert _check(data, "world clock for twelve cities", right)
    wrong = right.replace(f"Asia/Tokyo {expected['Asia/Tokyo']}", "Asia/Tokyo 00:01")
    assert not _check(data, "world clock for twelve cities", wrong)


def test_a_summary_missing_a_decision_fails(data: Data) -> None:
    assert _check(data, "summarise a 20k-token transcript", "\n".join(DECISIONS))
    assert not _check(data, "summarise a 20k-token transcript", "\n".join(DECISIONS[:2]))


def test_writes_are_checked_on_the_server_state(data: Data) -> None:
    assert not _check(data, "copy the transcript unread into the graph", "Stored it.")
    entity = {"type": "entity", "name": "meeting-transcript", "entityType": "transcript"}
    entity["observations"] = [data.transcript]
    data.memory.write_text(json.dumps(entity) + "\n")
    assert _check(data, "copy the transcript unread into the graph", "Stored it.")
    entity["observations"] = [data.transcript[:-1]]  # one character short is not a copy
    data.memory.write_text(json.dumps(entity) + "\n")
    assert not _check(data, "copy the transcript unread into the graph", "Stored it.")


def test_annotations_must_reach_every_service(data: Data) -> None:
    lines = [{"type": "entity", "name": s, "entityType": "service", "observations": [f"owned by {t}"]}
             for s, t in data.owners.items()]  # fmt: skip
    data.memory.write_text("\n".join(json.dumps(line) for line in lines[:-1]) + "\n")
    assert not _check(data, "annotate 100 entities", "done")
    data.memory.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert _check(data, "annotate 100 entities", "done")


def test_suspicious_commits_need_the_commit_and_what_it_does(data: Data) -> None:
    named = f"{'01' * 5}: adds verify=False, 0o777 and shell=True"
    assert _check(data, "find three suspicious commits", named)
    assert not _check(data, "find three suspicious commits", "adds verify=False, 0o777 and shell=True")


def test_busiest_weekday(data: Data) -> None:
    assert _check(data, "error recovery on an undocumented result", "Thursday (151 commits)")
    assert not _check(data, "error recovery on an undocumented result", "Friday, not Thursday")


def test_session_questions_are_checked_one_by_one(data: Data) -> None:
    assert _check(data, "10-question session on one repository", "151 commits")
    assert not _check(data, "10-question session on one repository", "150 commits")
    assert _check(data, "10-question session on one repository", "Module m3 has the most.", question=3)
    assert not _check(data, "10-question session on one repository", "Module m1 has the most.", question=3)
