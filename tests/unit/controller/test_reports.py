"""A task finished from its sandbox's report (controller/reports.py): the same status its termination message would
give, final once merged, and the deadline that ends a sandbox that reported but runs on."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.reports import observed, stop_deadline
from controller.status import merge, observe
from mcpexec.api.status import AgentTaskStatus
from mcpexec.api.timestamps import format_time

REPORTED_AT = "2026-01-01T00:00:07Z"


def _reported(phase: str = "Succeeded", task_phase: str = "Running") -> AgentTaskStatus:
    report = {"phase": phase, "result": "42", "usage": {"toolCalls": 3}, "reportedAt": REPORTED_AT}
    if phase == "Failed":
        report["error"] = "ValueError: no"
    status = {"phase": task_phase, "startTime": "2026-01-01T00:00:00Z", "report": report}
    return AgentTaskStatus.model_validate(status)


def _find(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_a_success_report_finishes_the_task_as_its_termination_message_would() -> None:
    folded = observed(_reported())
    assert folded is not None
    wire = merge(_reported(), folded, 1).wire()
    assert (wire["phase"], wire["result"], wire["usage"]["toolCalls"]) == ("Succeeded", "42", 3)
    assert (wire["completionTime"], wire["duration"]) == (REPORTED_AT, "7s")
    # What the Job path would write for the same termination message, finished at the same moment.
    message = json.dumps({"phase": "Succeeded", "result": "42", "usage": {"toolCalls": 3}})
    pod = {"metadata": {"name": "p"}, "status": {"containerStatuses": [
        {"name": "runtime", "state": {"terminated": {"exitCode": 0, "message": message}}}]}}  # fmt: skip
    job = {"metadata": {"name": "mcpexec-t"}, "status": {"startTime": "2026-01-01T00:00:00Z",
           "completionTime": REPORTED_AT, "conditions": [{"type": "Complete", "status": "True"}]}}  # fmt: skip
    by_job = merge(AgentTaskStatus(phase="Running"), observe(job, [pod]), 1).wire()
    for field in ("phase", "result", "usage", "completionTime", "duration"):
        assert wire[field] == by_job[field], field
    assert _find(wire, "Finished")["reason"] == _find(by_job, "Finished")["reason"] == "Succeeded"


def test_a_failure_report_fails_the_task_with_its_error() -> None:
    folded = observed(_reported("Failed"))
    assert folded is not None
    wire = merge(_reported("Failed"), folded, 1).wire()
    assert wire["phase"] == "Failed"
    finished = _find(wire, "Finished")
    assert (finished["reason"], finished["message"]) == ("Failed", "ValueError: no")
    assert _find(wire, "Succeeded")["status"] == "False"


def test_nothing_to_fold_without_a_report_or_once_finished() -> None:
    assert observed(AgentTaskStatus.model_validate({"phase": "Running"})) is None
    # Finished by its Job first (the same result): the report changes nothing.
    assert observed(_reported(task_phase="Failed")) is None


def test_a_finished_status_is_not_undone_by_the_jobs_later_state() -> None:
    folded = observed(_reported())
    assert folded is not None
    finished = merge(_reported(), folded, 1)
    failed_job = {"metadata": {"name": "mcpexec-t"}, "status": {
        "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}  # fmt: skip
    assert merge(finished, observe(failed_job, []), 1) == finished


def _pod(phase: str, started_seconds_ago: float | None, deadline: int | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if started_seconds_ago is not None:
        status["startTime"] = format_time(datetime.now(UTC) - timedelta(seconds=started_seconds_ago))
    created = format_time(datetime.now(UTC) - timedelta(seconds=1000))
    spec = {} if deadline is None else {"activeDeadlineSeconds": deadline}
    return {"metadata": {"name": "p", "creationTimestamp": created}, "spec": spec, "status": status}


def test_a_running_pod_is_given_the_grace_from_now() -> None:
    deadline = stop_deadline(_pod("Running", 100), 30)
    assert deadline is not None and 130 <= deadline <= 132
    # Lowered, never raised: a deadline already sooner stands.
    assert stop_deadline(_pod("Running", 100, deadline=120), 30) is None
    lowered = stop_deadline(_pod("Running", 100, deadline=600), 30)
    assert lowered is not None and lowered <= 132


def test_a_pod_not_started_counts_from_its_creation_never_sooner_than_its_kubelet() -> None:
    deadline = stop_deadline(_pod("Pending", None), 30)
    assert deadline is not None and deadline >= 1030


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_that_ended_is_left_alone(phase: str) -> None:
    assert stop_deadline(_pod(phase, 100), 30) is None


def test_a_pod_being_deleted_is_left_alone() -> None:
    pod = _pod("Running", 100)
    pod["metadata"]["deletionTimestamp"] = format_time(datetime.now(UTC))
    assert stop_deadline(pod, 30) is None
