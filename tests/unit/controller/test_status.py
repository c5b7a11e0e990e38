"""Status derivation: phases move forward only, results come from the termination message."""

from __future__ import annotations

import json
from typing import Any

from controller.status import duration, merge, observe
from mcpexec.api.status import AgentTaskStatus


def _job(*conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "mcpexec-t"}, "status": {"conditions": list(conditions), **status}}


def _observe(job: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """observe(), as the status it writes reads on the wire."""
    return observe(job, pods).wire()


def _merge(current: dict[str, Any], observed: dict[str, Any], generation: int) -> dict[str, Any]:
    """merge() of statuses as they read on the wire, and its result as it is written."""
    parsed = AgentTaskStatus.model_validate
    return merge(parsed(current), parsed(observed), generation).wire()


def _find(conditions: list[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c["type"] == type_), None)


def _pod(phase: str, terminated: dict[str, Any] | None = None) -> dict[str, Any]:
    state = {"terminated": terminated} if terminated else {"running": {}}
    return {
        "metadata": {"name": "mcpexec-t-abcde"},
        "status": {"phase": phase, "containerStatuses": [{"name": "runtime", "state": state}]},
    }


def test_running_pod_means_running() -> None:
    assert _observe(_job(), [_pod("Running")])["phase"] == "Running"


def test_phase_never_moves_backwards() -> None:
    current = {"phase": "Running", "conditions": []}
    assert _merge(current, _observe(_job(), []), 1)["phase"] == "Running"


def test_finished_status_is_final() -> None:
    done = _merge(
        {},
        _observe(
            _job(
                {"type": "Complete", "status": "True"},
                completionTime="2026-01-01T00:00:05Z",
                startTime="2026-01-01T00:00:00Z",
            ),
            [],
        ),
        1,
    )
    assert done["phase"] == "Succeeded" and done["duration"] == "5s"
    late = _observe(_job({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}), [])
    assert _merge(done, late, 1) == done


def test_json_termination_message_gives_result_usage_and_error() -> None:
    message = json.dumps({"phase": "Failed", "result": "partial", "error": "boom", "usage": {"toolCalls": 2}})
    pod = _pod("Failed", {"exitCode": 1, "message": message})
    status = _observe(_job({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}), [pod])
    assert status["phase"] == "Failed"
    assert status["result"] == "partial"
    assert status["usage"] == {"llmTurns": 0, "tokensIn": 0, "tokensOut": 0, "toolCalls": 2}
    assert status["conditions"][0]["message"] == "boom"
    assert "error" not in status


def test_plain_termination_message_is_kept_as_text_and_bounded() -> None:
    pod = _pod("Succeeded", {"exitCode": 0, "message": "x" * 5000})
    status = _observe(_job({"type": "Complete", "status": "True"}), [pod])
    assert status["result"] == "x" * 4096


def test_deadline_is_timed_out() -> None:
    status = _observe(_job({"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "late"}), [])
    assert status["phase"] == "TimedOut"
    assert status["conditions"][0]["reason"] == "DeadlineExceeded"


def test_duration_format() -> None:
    assert duration("2026-01-01T00:00:00Z", "2026-01-01T01:02:03Z") == "1h2m3s"
    assert duration("2026-01-01T00:00:00Z", "2026-01-01T00:02:03+00:00") == "2m3s"


def test_an_evicted_pod_says_why_the_task_failed() -> None:
    """A workspace over its size gets the pod evicted by the kubelet: the task's condition carries the kubelet's
    reason, not the Job's generic backoff message."""
    evicted = _pod("Failed")
    evicted["status"] |= {
        "reason": "Evicted",
        "message": 'Usage of EmptyDir volume "workspace" exceeds the limit "16Mi".',
    }
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
    }
    status = _observe(_job(failed), [evicted])
    assert status["phase"] == "Failed"
    assert (
        status["conditions"][0]["message"] == 'evicted: Usage of EmptyDir volume "workspace" exceeds the limit "16Mi".'
    )


def test_a_termination_message_nested_past_the_parsers_depth_is_kept_as_text() -> None:
    """The task's code writes its pod's termination message: 4,000 `[` are within its size, not a crash."""
    nested = "[" * 4000
    terminated = {"exitCode": 0, "message": nested}
    complete = {"type": "Complete", "status": "True"}
    assert _observe(_job(complete), [_pod("Succeeded", terminated)])["result"] == nested[:4096]


def _kstatus(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        t: (c["status"], c["reason"])
        for t in ("Succeeded", "Reconciling", "Stalled")
        if (c := _find(status["conditions"], t))
    }


def test_an_active_task_is_reconciling_with_its_phase_or_what_it_waits_for() -> None:
    accepted = {"phase": "Pending", "conditions": [{"type": "Accepted", "status": "True", "reason": "JobCreated",
                                                    "message": "sandboxed Job created"}]}  # fmt: skip
    pending = _merge({}, accepted, 1)
    assert _kstatus(pending) == {
        "Succeeded": ("Unknown", "Pending"), "Reconciling": ("True", "Pending"), "Stalled": ("False", "Pending"),
    }  # fmt: skip
    running = _merge(pending, _observe(_job(), [_pod("Running")]), 1)
    assert _kstatus(running)["Reconciling"] == ("True", "Running")
    waiting = {"phase": "Pending", "conditions": [{"type": "Accepted", "status": "False", "reason": "PoolEmpty",
                                                   "message": "no idle sandbox"}]}  # fmt: skip
    assert _kstatus(_merge({}, waiting, 1))["Reconciling"] == ("True", "PoolEmpty")


def test_a_finished_task_is_current_or_stalled_and_every_condition_has_its_generation() -> None:
    complete = {"type": "Complete", "status": "True"}
    succeeded = _merge({}, _observe(_job(complete), [_pod("Succeeded", {"exitCode": 0})]), 3)
    assert _kstatus(succeeded) == {
        "Succeeded": ("True", "Succeeded"), "Reconciling": ("False", "Succeeded"), "Stalled": ("False", "Succeeded"),
    }  # fmt: skip
    assert succeeded["observedGeneration"] == 3
    assert {c["observedGeneration"] for c in succeeded["conditions"]} == {3}
    assert all(c["lastTransitionTime"] for c in succeeded["conditions"])
    deadline = {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "late"}
    timed_out = _merge({}, _observe(_job(deadline), []), 1)
    assert _kstatus(timed_out) == {
        "Succeeded": ("False", "DeadlineExceeded"), "Reconciling": ("False", "DeadlineExceeded"),
        "Stalled": ("True", "DeadlineExceeded"),
    }  # fmt: skip
    assert _find(timed_out["conditions"], "Stalled")["message"] == "late"  # type: ignore[index]


def test_an_unchanged_observation_changes_nothing() -> None:
    """The operator writes a status only when it differs: a second merge of the same observation is a no-op."""
    first = _merge({}, _observe(_job(), [_pod("Running")]), 1)
    assert _merge(first, _observe(_job(), [_pod("Running")]), 1) == first


def test_a_status_an_older_operator_wrote_is_read_though_it_has_fields_this_one_dropped() -> None:
    """The claim's policy models refuse unknown fields where users write them (a spec); in a status, written by an
    earlier operator, an unknown field is ignored, or that task's reconcile would fail for ever."""
    policy = {"mcpServers": ["crm"], "tools": {"allow": ["crm/*"], "deny": [], "retired": True}, "quota": 3}
    claim = {"pool": "fast", "policy": policy, "podName": "p", "podUID": "u", "claimedBy": "v0"}
    status = AgentTaskStatus.of({"status": {"phase": "Running", "claim": claim, "retiredField": 1}})
    assert status.claim is not None and status.claim.pod_uid == "u"
    assert status.claim.policy.tools.allow == ["crm/*"] and status.claim.policy.mcp_servers == ["crm"]
