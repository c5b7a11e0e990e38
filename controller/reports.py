"""A task finished from its own sandbox's report (pure, as controller/status.py; no API calls).

The runtime posts its result to the gateway before it writes its termination message; the gateway records it as the
task's `status.report` (only while the task is unfinished, the first report standing). The operator folds the report
into the status as the finished phase, result and usage at once (controller/reported.py), instead of
waiting for the pod's exit and its kubelet's word: the same trust as the termination message, which says the same
and stays the fallback. A finished status is final (controller/status.py: merge), so the Job's or pod's later
state cannot undo it.

A sandbox that reported but does not exit is stopped by its kubelet: its pod's activeDeadlineSeconds (which may be
lowered on a running pod, never raised) is set to end it a short grace after the report (OperatorSettings:
report_grace_seconds, 30 s; it normally exits within milliseconds). The deadline lives in the pod, so it holds
through an operator restart.
"""

from __future__ import annotations

import math
from typing import Any

from controller.status import observe_result
from mcpexec.api.status import AgentTaskStatus
from mcpexec.api.timestamps import seconds_since


def observed(status: AgentTaskStatus) -> AgentTaskStatus | None:
    """The finished status a task's report implies; None when there is nothing to fold: no report, or the task has
    finished already (its Job's or pod's state came first: the same result)."""
    if status.report is None or status.finished:
        return None
    return observe_result(status.report, status.report.reported_at, status.start_time)


def stop_deadline(pod: dict[str, Any], grace_seconds: float) -> int | None:
    """The activeDeadlineSeconds that ends a running pod `grace_seconds` from now (the kubelet counts it from the
    pod's start); None when the pod is not running (nothing to stop) or its own deadline comes sooner."""
    status = pod.get("status") or {}
    if status.get("phase") not in ("Pending", "Running") or pod["metadata"].get("deletionTimestamp"):
        return None
    # Counted from its creation when its start is not known: never earlier than the kubelet's own count.
    started = status.get("startTime") or pod["metadata"].get("creationTimestamp")
    if not started:
        return None
    deadline = math.ceil(max(0.0, seconds_since(started)) + grace_seconds)
    current = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return None if current is not None and current <= deadline else deadline
