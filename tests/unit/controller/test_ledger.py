"""The run-once ledger: which re-created tasks run, which are finished without running, what a run record holds, how
long it is kept, and how the legacy namespace-wide ledger is read."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from controller import ledger
from mcpexec.api.agenttask import Phase
from mcpexec.api.meta import RUN_RECORD_LABEL


def _task(uid: str, code: str = "print(1)", run_again: str | None = None, name: str = "export") -> dict[str, Any]:
    annotations = {ledger.RUN_AGAIN_ANNOTATION: run_again} if run_again is not None else {}
    return {
        "metadata": {"name": name, "namespace": "team", "uid": uid, "annotations": annotations},
        "spec": {"code": code, "timeoutSeconds": 600, "maxTurns": 10},
    }


def _apply(config_map: dict[str, Any], patch: list[dict[str, str]]) -> dict[str, Any]:
    """A JSON patch as the API server applies it: a failed test applies nothing."""
    data = dict(config_map["data"])
    for op in patch:
        key = op["path"].removeprefix("/data/")
        if op["op"] == "test" and data.get(key) != op["value"]:
            return config_map
        if op["op"] == "add":
            data[key] = op["value"]
    return {**config_map, "data": data}


def _ran(task: dict[str, Any], phase: Phase | None = Phase.SUCCEEDED, reason: str = "Succeeded") -> ledger.RunRecord:
    record = ledger.launch(task)
    if phase is not None:
        record = _apply(record, ledger.outcome_patch(task["metadata"]["uid"], phase, reason))
    parsed = ledger.record_of(json.loads(json.dumps(record)))  # as read back from the ConfigMap
    assert parsed is not None
    return parsed


def test_a_record_is_one_small_configmap_per_name_labelled_for_the_sweep_and_owned_by_nobody() -> None:
    record = ledger.launch(_task("a", code="x" * 200_000))
    meta = record["metadata"]
    assert (record["kind"], meta["name"], meta["namespace"]) == ("ConfigMap", "mcpexec-run.export", "team")
    assert meta["labels"][RUN_RECORD_LABEL] == "export" and "ownerReferences" not in meta
    assert all(isinstance(value, str) for value in record["data"].values()), "ConfigMap data is strings"
    finished = _apply(record, ledger.outcome_patch("a", Phase.SUCCEEDED, "Succeeded"))
    assert len(json.dumps(finished)) < 1024, "a record's size does not grow with the spec or the runs before it"


def test_a_name_that_never_ran_runs_and_a_task_resumes_its_own_run() -> None:
    assert ledger.refusal(None, _task("a")) is None
    assert ledger.refusal(_ran(_task("a"), None), _task("a")) is None


def test_a_recreated_identical_task_gets_the_earlier_outcome_without_running() -> None:
    refused = ledger.refusal(_ran(_task("a")), _task("b"))
    assert refused is not None
    assert (refused.phase, refused.reason) == ("Succeeded", "AlreadyRan")
    assert "uid a" in refused.message and ledger.RUN_AGAIN_ANNOTATION in refused.message
    failed = ledger.refusal(_ran(_task("a"), Phase.TIMED_OUT, "DeadlineExceeded"), _task("b"))
    assert failed is not None and (failed.phase, failed.reason) == ("TimedOut", "AlreadyRan")
    assert "DeadlineExceeded" in failed.message


def test_a_run_deleted_before_it_finished_is_not_run_again_and_reads_failed() -> None:
    refused = ledger.refusal(_ran(_task("a"), None), _task("b"))
    assert refused is not None and (refused.phase, refused.reason) == ("Failed", "AlreadyRan")
    assert "deleted before it finished" in refused.message


def test_a_changed_spec_under_a_name_that_ran_needs_the_opt_in_too() -> None:
    """A Replace/force sync of an edited spec is a delete and a create: it must not run silently."""
    refused = ledger.refusal(_ran(_task("a")), _task("b", code="print(2)"))
    assert refused is not None and (refused.phase, refused.reason) == ("Failed", "SpecChangedAfterRun")


def test_the_opt_in_runs_once_per_new_value() -> None:
    record = _ran(_task("a"))
    assert ledger.refusal(record, _task("b", run_again="2026-05-01")) is None
    again = _ran(_task("b", run_again="2026-05-01"))
    assert again.run_again == "2026-05-01"
    assert ledger.refusal(again, _task("c", run_again="2026-05-01")) is not None, "the same value does not run again"
    assert ledger.refusal(again, _task("c", run_again="")) is not None, "an empty value is no opt-in"
    assert ledger.refusal(again, _task("c", run_again="2026-05-02")) is None


def test_only_the_runs_own_record_gets_its_outcome() -> None:
    record = ledger.launch(_task("b"))
    assert _apply(record, ledger.outcome_patch("a", Phase.FAILED, "Failed")) == record, "another run's record"
    done = ledger.record_of(_apply(record, ledger.outcome_patch("b", Phase.FAILED, "Failed")))
    assert done is not None and (done.phase, done.reason) == ("Failed", "Failed") and done.finished


def test_a_record_edited_by_hand_records_no_run() -> None:
    assert ledger.record_of({"data": {"uid": "a"}}) is None
    assert ledger.record_of({}) is None


def test_the_spec_hash_ignores_key_order() -> None:
    assert ledger.spec_hash({"a": 1, "b": [1, 2]}) == ledger.spec_hash({"b": [1, 2], "a": 1})
    assert ledger.spec_hash({"a": 1}) != ledger.spec_hash({"a": 2})


def test_records_are_kept_for_the_retention_from_the_runs_finish() -> None:
    at = datetime(2026, 6, 1, tzinfo=UTC)
    finished = ledger.RunRecord(uid="a", spec_hash="h", started="2026-04-01T00:00:00Z", finished="2026-05-01T00:00:00Z")
    assert not ledger.expired(finished, at, 31), "finished 31 days ago: kept for 31 days"
    assert ledger.expired(finished, at, 30)
    assert not ledger.expired(finished, at + timedelta(days=10_000), 0), "0 keeps records for ever"


def test_an_unfinished_runs_record_outlives_the_longest_task() -> None:
    """A run that may still be going (its task has up to a day) is never forgotten under it."""
    at = datetime(2026, 6, 1, tzinfo=UTC)
    started = ledger.RunRecord(uid="a", spec_hash="h", started="2026-05-31T00:00:00Z")
    assert not ledger.expired(started, at, 1)
    assert ledger.expired(started, at + timedelta(days=1, seconds=1), 1)
    assert ledger.expired(None, at, 1), "a ConfigMap with the records' labels that records nothing goes"


def test_the_legacy_ledger_is_read_by_name_skipping_hand_edits() -> None:
    entry = ledger.RunRecord(uid="a", spec_hash="h", started="2026-01-01T00:00:00Z", phase=Phase.SUCCEEDED)
    legacy = {"export": entry.model_dump_json(by_alias=True, exclude_none=True), "x": "not json"}
    legacy["Not_A_Name"] = legacy["export"]
    legacy["n" * 49] = legacy["export"]
    assert ledger.legacy_records(legacy) == {"export": entry}
    assert ledger.legacy_records(None) == {}
