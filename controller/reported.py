"""A task whose sandbox reported its result through the gateway: finished at once from the report
(controller/reports.py), through tasks.write_status, so its Event, metrics and run record follow as for a Job that
finished; then its pod is given a short grace to exit before its kubelet ends it."""

from __future__ import annotations

import logging
from typing import Any

from controller import reports, tasks
from controller.kube import Cluster
from controller.naming import child_name
from mcpexec.api.status import AgentTaskStatus

log = logging.getLogger(__name__)
_PATCH_TRIES = 3


def fold(cluster: Cluster, document: dict[str, Any], grace_seconds: float) -> None:
    """Finish the task (as its watch event brought it) from its report, if it has one and is not finished."""
    observed = reports.observed(AgentTaskStatus.of(document))
    if observed is None:
        return
    meta = document["metadata"]
    after = tasks.write_status(cluster, meta["namespace"], meta["name"], observed, known=document)
    if after is not None and after.report is not None:
        _stop_after(cluster, meta["namespace"], meta["name"], after, grace_seconds)


def _stop_after(cluster: Cluster, namespace: str, name: str, status: AgentTaskStatus, grace_seconds: float) -> None:
    """Lower the deadline of the task's pods still running (its claimed sandbox, or its Job's pods), so that their
    kubelet ends them `grace_seconds` from now unless they exit first. A pod that changed meanwhile is read again."""
    if status.claim is not None and status.claim.pod_name:
        pod = cluster.read_pod(namespace, status.claim.pod_name)
        pods = [pod] if pod is not None and pod["metadata"]["uid"] == status.claim.pod_uid else []
    else:
        pods = cluster.pods(namespace, f"job-name={child_name(name)}")
    for pod in pods:
        for _ in range(_PATCH_TRIES):
            deadline = reports.stop_deadline(pod, grace_seconds)
            if deadline is None or cluster.patch_pod_if_unchanged(pod, {"spec": {"activeDeadlineSeconds": deadline}}):
                break
            again = cluster.read_pod(namespace, pod["metadata"]["name"])
            if again is None or again["metadata"]["uid"] != pod["metadata"]["uid"]:
                break
            pod = again
        else:
            log.warning("could not bound the reported task's pod %s/%s", namespace, pod["metadata"]["name"])
