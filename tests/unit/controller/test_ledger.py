"""The run-once ledger: which re-created tasks run, which are finished without running, and how it stays bounded."""

from __future__ import annotations

from typing import Any

from controller import ledger
from mcpexec.api.agenttask import Phase


def _task(uid: str, code: str = "print(1)", run_again: str | None = None) -> dict[str, Any]:
    annotations = {ledger.RUN_AGAIN_ANNOTATION: run_again} if run_again is not None else {}
    return {
        "metadata": {"name": "export", "namespace": "team", "uid": uid, "annotations": annotations},
        "spec": {"code": code, "timeoutSeconds": 600, "maxTurns": 10},
    }


def _ran(task: dict[str, Any], phase: Phase | None = Phase.SUCCEEDED, reason: str = "Succeeded") -> ledger.Entries:
    entries = ledger.started({}, task)
    if phase is not None:
        entries = ledger.finished(entries, "export", task["metadata"]["uid"], phase, reason)
    return ledger.parse(ledger.serialize(entries))  # as read back from the ConfigMap


def test_a_name_that_never_ran_runs_and_a_task_resumes_its_own_run() -> None:
    assert ledger.refusal(None, _task("a")) is None
    assert ledger.refusal(_ran(_task("a"), None)["export"], _task("a")) is None


def test_a_recreated_identical_task_gets_the_earlier_outcome_without_running() -> None:
    entry = _ran(_task("a"))["export"]
    refused = ledger.refusal(entry, _task("b"))
    assert refused is not None
    assert (refused.phase, refused.reason) == ("Succeeded", "AlreadyRan")
    assert "uid a" in refused.message and ledger.RUN_AGAIN_ANNOTATION in refused.message
    failed = ledger.refusal(_ran(_task("a"), Phase.TIMED_OUT, "DeadlineExceeded")["export"], _task("b"))
    assert failed is not None and (failed.phase, failed.reason) == ("TimedOut", "AlreadyRan")
    assert "DeadlineExceeded" in failed.message


def test_a_run_deleted_before_it_finished_is_not_run_again_and_reads_failed() -> None:
    refused = ledger.refusal(_ran(_task("a"), None)["export"], _task("b"))
    assert refused is not None and (refused.phase, refused.reason) == ("Failed", "AlreadyRan")
    assert "deleted before it finished" in refused.message


def test_a_changed_spec_under_a_name_that_ran_needs_the_opt_in_too() -> None:
    """A Replace/force sync of an edited spec is a delete and a create: it must not run silently."""
    refused = ledger.refusal(_ran(_task("a"))["export"], _task("b", code="print(2)"))
    assert refused is not None and (refused.phase, refused.reason) == ("Failed", "SpecChangedAfterRun")


def test_the_opt_in_runs_once_per_new_value() -> None:
    entry = _ran(_task("a"))["export"]
    assert ledger.refusal(entry, _task("b", run_again="2026-05-01")) is None
    again = _ran(_task("b", run_again="2026-05-01"))["export"]
    assert again.run_again == "2026-05-01"
    assert ledger.refusal(again, _task("c", run_again="2026-05-01")) is not None, "the same value does not run again"
    assert ledger.refusal(again, _task("c", run_again="")) is not None, "an empty value is no opt-in"
    assert ledger.refusal(again, _task("c", run_again="2026-05-02")) is None


def test_only_the_tasks_own_entry_is_finished_or_forgotten() -> None:
    entries = ledger.started({}, _task("a"))
    assert ledger.finished(entries, "export", "b", Phase.FAILED, "Failed") == entries
    assert ledger.forget(entries, "export", "b") == entries
    assert ledger.forget(entries, "export", "a") == {}
    done = ledger.finished(entries, "export", "a", Phase.FAILED, "Failed")
    assert ledger.finished(done, "export", "a", Phase.SUCCEEDED, "Succeeded") == done, "an outcome is final"
    assert ledger.started(done, _task("a")) == done, "a resumed reconcile keeps its entry"


def test_the_spec_hash_ignores_key_order() -> None:
    assert ledger.spec_hash({"a": 1, "b": [1, 2]}) == ledger.spec_hash({"b": [1, 2], "a": 1})
    assert ledger.spec_hash({"a": 1}) != ledger.spec_hash({"a": 2})


def test_the_ledger_is_bounded_and_keeps_the_latest_runs_and_skips_hand_edits() -> None:
    entries = {
        f"t{i}": ledger.LedgerEntry(uid=str(i), spec_hash="h", started=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z")
        for i in range(ledger.MAX_ENTRIES + 5)
    }
    data = ledger.serialize(entries)
    assert len(data) == ledger.MAX_ENTRIES
    assert "t0" not in data and f"t{ledger.MAX_ENTRIES + 4}" in data
    assert sum(map(len, data.values())) < 1_000_000, "far below a ConfigMap's 1 MiB"
    assert ledger.parse({"x": "not json", "t1": data["t10"]}) == {"t1": entries["t10"]}
