"""AgentTask status from what the cluster shows (pure functions, no API calls).

Phase only moves forward (Pending -> Running -> a finished phase), so late or reordered Job and Pod
events can never undo a result.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mcpexec.api.agenttask import Phase
from mcpexec.api.conditions import condition, find, merge_conditions, now, outcome
from mcpexec.api.result import RuntimeResult
from runtime.contract import RESULT_LIMIT

Status = dict[str, Any]
_ORDER = {Phase.PENDING: 0, Phase.RUNNING: 1, Phase.SUCCEEDED: 2, Phase.FAILED: 2, Phase.TIMED_OUT: 2}


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def duration(start: str, end: str) -> str:
    seconds = max(0, int((_parse_time(end) - _parse_time(start)).total_seconds()))
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


def _runtime_result(terminated: dict[str, Any] | None) -> Status:
    """Result and usage from the termination message; a non-JSON message is kept as plain text."""
    if not terminated or not terminated.get("message"):
        return {}
    message = str(terminated["message"])
    try:
        parsed = RuntimeResult.model_validate(json.loads(message))
    except (ValueError, RecursionError):  # not JSON, not the result's shape, or nested past the parser's depth
        return {"result": message[:RESULT_LIMIT]}
    out: Status = {"result": parsed.result[:RESULT_LIMIT], "usage": parsed.usage.model_dump(by_alias=True)}
    if parsed.error:
        out["error"] = parsed.error
    return out


def _evicted(pods: list[dict[str, Any]]) -> str | None:
    """Why the kubelet evicted the task's pod (e.g. its workspace over its size), which says more than the Job's
    backoff message."""
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("reason") == "Evicted":
            return f"evicted: {status.get('message') or 'by the kubelet'}"
    return None


def _finish(
    status: Status, pods: list[dict[str, Any]], outcome: Status, at: str, failure: dict[str, Any] | None
) -> None:
    """A finished task's phase, time and condition: succeeded when `failure` is None, else failed or timed out (the
    Job's Failed condition, or the pod's status: either has a reason and a message)."""
    status["completionTime"] = at
    if failure is None:
        status["phase"] = Phase.SUCCEEDED.value
        status["conditions"] = [condition("Finished", True, "Succeeded", "the task's code finished successfully")]
        return
    timed_out = failure.get("reason") == "DeadlineExceeded"
    status["phase"] = (Phase.TIMED_OUT if timed_out else Phase.FAILED).value
    message = outcome.pop("error", None) or _evicted(pods) or failure.get("message") or ""
    terminated = _terminated(pods)
    if not timed_out and terminated and terminated.get("exitCode") not in (None, 0):
        message = message or f"runtime exited with code {terminated['exitCode']}"
    status["conditions"] = [condition("Finished", True, "DeadlineExceeded" if timed_out else "Failed", message)]


def _with_outcome(status: Status, outcome: Status) -> Status:
    outcome.pop("error", None)
    status.update(outcome)
    if status.get("startTime") and status.get("completionTime"):
        status["duration"] = duration(status["startTime"], status["completionTime"])
    return status


def observe(job: dict[str, Any], pods: list[dict[str, Any]]) -> Status:
    """The status a Job and its pods imply, before merging into the task's current status."""
    job_status = job.get("status") or {}
    status: Status = {"jobName": job["metadata"]["name"], "phase": Phase.PENDING.value}
    if pods:
        status["podName"] = pods[0]["metadata"]["name"]
    if job_status.get("startTime"):
        status["startTime"] = job_status["startTime"]
    outcome = _runtime_result(_terminated(pods))
    complete, failed = _job_condition(job, "Complete"), _job_condition(job, "Failed")
    if complete:
        at = job_status.get("completionTime") or complete.get("lastTransitionTime") or now()
        _finish(status, pods, outcome, at, None)
    elif failed:
        _finish(status, pods, outcome, failed.get("lastTransitionTime") or now(), failed)
    elif any(((p.get("status") or {}).get("phase") == "Running") for p in pods):
        status["phase"] = Phase.RUNNING.value
    return _with_outcome(status, outcome)


def observe_sandbox(pod: dict[str, Any] | None) -> Status:
    """The status a claimed pool sandbox implies: its pod's phase is the task's (the kubelet enforces the task's
    deadline on the pod: activeDeadlineSeconds, set when it was claimed). A pod gone before it finished (deleted,
    its node lost) fails the task: a claimed sandbox is never replaced, since the code may have had side effects."""
    if pod is None:
        gone = {"reason": "SandboxLost", "message": "the task's sandbox pod was deleted before the task finished"}
        status: Status = {"phase": Phase.PENDING.value}
        _finish(status, [], {}, now(), gone)
        return status
    pod_status = pod.get("status") or {}
    status = {"podName": pod["metadata"]["name"], "phase": Phase.PENDING.value}
    terminated = _terminated([pod])
    outcome = _runtime_result(terminated)
    finished_at = (terminated or {}).get("finishedAt") or now()
    if pod_status.get("phase") == "Succeeded":
        _finish(status, [pod], outcome, finished_at, None)
    elif pod_status.get("phase") == "Failed":
        _finish(status, [pod], outcome, finished_at, pod_status)
    elif pod_status.get("phase") == "Running":
        status["phase"] = Phase.RUNNING.value
    return _with_outcome(status, outcome)


def lifecycle(phase: Phase, conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Succeeded, Reconciling and Stalled for a task's phase (mcpexec/api/conditions.py: outcome): the reason is the
    Finished one once it finished, the refusal it waits on while not Accepted, else the phase."""
    if phase.finished:
        finished = find(conditions, "Finished") or {}
        reason = finished.get("reason") or phase.value
        return outcome(phase is Phase.SUCCEEDED, reason, finished.get("message") or "")
    accepted = find(conditions, "Accepted")
    if accepted is not None and accepted.get("status") == "False":
        return outcome(None, accepted["reason"], accepted.get("message") or "")
    if phase is Phase.RUNNING:
        return outcome(None, phase.value, "the task's code is running")
    detail = f": {accepted['message']}" if accepted and accepted.get("message") else ""
    return outcome(None, phase.value, f"the task is waiting to run{detail}")


def merge(current: Status, observed: Status, generation: int) -> Status:
    """The new status: observed fields win, the phase never moves backwards, a finished task is final; the kstatus
    conditions follow the phase, and everything is stamped with the generation it describes."""
    old_phase = current.get("phase")
    if old_phase and Phase(old_phase).finished:
        return current
    merged = {**current, **{k: v for k, v in observed.items() if k != "conditions"}}
    if old_phase and _ORDER[Phase(old_phase)] > _ORDER[Phase(observed.get("phase") or old_phase)]:
        merged["phase"] = old_phase
    conditions = merge_conditions(current.get("conditions") or [], observed.get("conditions") or [], generation)
    phase = Phase(merged.get("phase") or Phase.PENDING.value)
    merged["phase"] = phase.value
    merged["conditions"] = merge_conditions(conditions, lifecycle(phase, conditions), generation)
    merged["observedGeneration"] = generation
    return merged
