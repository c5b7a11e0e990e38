"""AgentTask status from what the cluster shows (pure functions, no API calls).

Phase only moves forward (Pending -> Running -> a finished phase), so late or reordered Job and Pod
events can never undo a result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcpexec.api.agenttask import Phase
from mcpexec.api.conditions import Condition, ConditionType, condition, find, merge_conditions, outcome
from mcpexec.api.reasons import Reason
from mcpexec.api.result import RuntimeResult
from mcpexec.api.status import AgentTaskStatus
from mcpexec.api.timestamps import now, parse_time
from mcpexec.api.usage import Usage
from runtime.contract import RESULT_LIMIT

_ORDER = {Phase.PENDING: 0, Phase.RUNNING: 1, Phase.SUCCEEDED: 2, Phase.FAILED: 2, Phase.TIMED_OUT: 2}


def duration(start: str, end: str) -> str:
    seconds = max(0, int((parse_time(end) - parse_time(start)).total_seconds()))
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def _job_condition(job: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def _terminated(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    for pod in pods:
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            terminated = (container.get("state") or {}).get("terminated")
            if container.get("name") == "runtime" and terminated:
                return dict(terminated)
    return None


@dataclass
class _Outcome:
    """What the runtime's termination message says: the result and usage for the status, the error for the
    Finished condition's message."""

    result: str | None = None
    usage: Usage | None = None
    error: str | None = None


def _runtime_result(terminated: dict[str, Any] | None) -> _Outcome:
    """Result and usage from the termination message; a non-JSON message is kept as plain text."""
    if not terminated or not terminated.get("message"):
        return _Outcome()
    message = str(terminated["message"])
    try:
        parsed = RuntimeResult.model_validate(json.loads(message))
    except (ValueError, RecursionError):  # not JSON, not the result's shape, or nested past the parser's depth
        return _Outcome(result=message[:RESULT_LIMIT])
    return _Outcome(result=parsed.result[:RESULT_LIMIT], usage=parsed.usage, error=parsed.error or None)


def sandbox_said(pod: dict[str, Any]) -> str | None:
    """What a sandbox's runtime said as it ended (its result's error, else its result), from its termination message:
    why a session's sandbox exited (e.g. `vault_lost: ...`), which its pod's phase alone does not tell."""
    outcome = _runtime_result(_terminated([pod]))
    return outcome.error or outcome.result or None


def _evicted(pods: list[dict[str, Any]]) -> str | None:
    """Why the kubelet evicted the task's pod (e.g. its workspace over its size), which says more than the Job's
    backoff message."""
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("reason") == "Evicted":
            return f"evicted: {status.get('message') or 'by the kubelet'}"
    return None


def _finish(
    status: AgentTaskStatus, pods: list[dict[str, Any]], outcome: _Outcome, at: str, failure: dict[str, Any] | None
) -> None:
    """A finished task's phase, time and condition: succeeded when `failure` is None, else failed or timed out (the
    Job's Failed condition, or the pod's status: either has a reason and a message)."""
    status.completion_time = at
    if failure is None:
        status.phase = Phase.SUCCEEDED
        message = "the task's code finished successfully"
        status.conditions = [condition(ConditionType.FINISHED, True, Reason.SUCCEEDED, message)]
        return
    timed_out = failure.get("reason") == "DeadlineExceeded"  # the Job's, or the kubelet's past activeDeadlineSeconds
    status.phase = Phase.TIMED_OUT if timed_out else Phase.FAILED
    message = outcome.error or _evicted(pods) or failure.get("message") or ""
    terminated = _terminated(pods)
    if not timed_out and terminated and terminated.get("exitCode") not in (None, 0):
        message = message or f"runtime exited with code {terminated['exitCode']}"
    reason = Reason.DEADLINE_EXCEEDED if timed_out else Reason.FAILED
    status.conditions = [condition(ConditionType.FINISHED, True, reason, message)]


def _with_outcome(status: AgentTaskStatus, outcome: _Outcome) -> AgentTaskStatus:
    if outcome.result is not None:
        status.result = outcome.result
    if outcome.usage is not None:
        status.usage = outcome.usage
    if status.start_time and status.completion_time:
        status.duration = duration(status.start_time, status.completion_time)
    return status


def observe(job: dict[str, Any], pods: list[dict[str, Any]]) -> AgentTaskStatus:
    """The status a Job and its pods imply, before merging into the task's current status."""
    job_status = job.get("status") or {}
    status = AgentTaskStatus(job_name=job["metadata"]["name"], phase=Phase.PENDING)
    if pods:
        status.pod_name = pods[0]["metadata"]["name"]
    if job_status.get("startTime"):
        status.start_time = job_status["startTime"]
    outcome = _runtime_result(_terminated(pods))
    complete, failed = _job_condition(job, "Complete"), _job_condition(job, "Failed")
    if complete:
        at = job_status.get("completionTime") or complete.get("lastTransitionTime") or now()
        _finish(status, pods, outcome, at, None)
    elif failed:
        _finish(status, pods, outcome, failed.get("lastTransitionTime") or now(), failed)
    elif any(((p.get("status") or {}).get("phase") == "Running") for p in pods):
        status.phase = Phase.RUNNING
    return _with_outcome(status, outcome)


def observe_sandbox(pod: dict[str, Any] | None) -> AgentTaskStatus:
    """The status a claimed pool sandbox implies: its pod's phase is the task's (the kubelet enforces the task's
    deadline on the pod: activeDeadlineSeconds, set when it was claimed). A pod gone before it finished (deleted,
    its node lost) fails the task: a claimed sandbox is never replaced, since the code may have had side effects."""
    if pod is None:
        gone = {"reason": Reason.SANDBOX_LOST, "message": "the task's sandbox pod was deleted before the task finished"}
        status = AgentTaskStatus(phase=Phase.PENDING)
        _finish(status, [], _Outcome(), now(), gone)
        return status
    pod_status = pod.get("status") or {}
    status = AgentTaskStatus(pod_name=pod["metadata"]["name"], phase=Phase.PENDING)
    terminated = _terminated([pod])
    outcome = _runtime_result(terminated)
    finished_at = (terminated or {}).get("finishedAt") or now()
    if pod_status.get("phase") == "Succeeded":
        _finish(status, [pod], outcome, finished_at, None)
    elif pod_status.get("phase") == "Failed":
        _finish(status, [pod], outcome, finished_at, pod_status)
    elif pod_status.get("phase") == "Running":
        status.phase = Phase.RUNNING
    return _with_outcome(status, outcome)


def observe_result(result: RuntimeResult, at: str, start_time: str | None) -> AgentTaskStatus:
    """The finished status a runtime's result implies on its own, finished `at`: what its sandbox reported through
    the gateway ahead of its pod's exit (controller/reports.py), read as its termination message would be."""
    status = AgentTaskStatus(phase=Phase.PENDING, start_time=start_time)
    outcome = _Outcome(result=result.result[:RESULT_LIMIT], usage=result.usage, error=result.error or None)
    failure = (
        None if result.phase is Phase.SUCCEEDED else {"reason": Reason.FAILED, "message": "the task's code failed"}
    )
    _finish(status, [], outcome, at, failure)
    return _with_outcome(status, outcome)


def lifecycle(phase: Phase, conditions: list[Condition]) -> list[Condition]:
    """Succeeded, Reconciling and Stalled for a task's phase (mcpexec/api/conditions.py: outcome): the reason is the
    Finished one once it finished, the refusal it waits on while not Accepted, else the phase."""
    if phase.finished:
        finished = find(conditions, ConditionType.FINISHED)
        reason = (finished.reason if finished else "") or phase.value
        return outcome(phase is Phase.SUCCEEDED, reason, finished.message if finished else "")
    accepted = find(conditions, ConditionType.ACCEPTED)
    if accepted is not None and accepted.status == "False":
        return outcome(None, accepted.reason, accepted.message)
    if phase is Phase.RUNNING:
        return outcome(None, phase.value, "the task's code is running")
    detail = f": {accepted.message}" if accepted and accepted.message else ""
    return outcome(None, phase.value, f"the task is waiting to run{detail}")


def merge(current: AgentTaskStatus, observed: AgentTaskStatus, generation: int) -> AgentTaskStatus:
    """The new status: observed fields win, the phase never moves backwards, a finished task is final; the kstatus
    conditions follow the phase, and everything is stamped with the generation it describes."""
    if current.finished:
        return current
    seen = {name: value for name, value in observed if name != "conditions" and value is not None}
    merged = current.model_copy(update=seen)
    old_phase = current.phase
    if old_phase and _ORDER[old_phase] > _ORDER[observed.phase or old_phase]:
        merged.phase = old_phase
    conditions = merge_conditions(current.conditions or [], observed.conditions or [], generation)
    phase = merged.phase or Phase.PENDING
    merged.phase = phase
    merged.conditions = merge_conditions(conditions, lifecycle(phase, conditions), generation)
    merged.observed_generation = generation
    return merged
