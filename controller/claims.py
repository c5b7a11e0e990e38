"""Claiming a pool's idle sandbox for a task: the pod becomes the task's (its labels, its owner, its deadline).

The claim is one patch conditioned on the pod's resourceVersion, so two tasks racing for the same pod cannot both
have it: the loser's patch fails and it tries the next pod. The gateway serves the pod as the task only once the
task's status names it (written after this patch, by the operator alone), so a pod claimed by a patch whose task
status was never written serves nothing; the next reconcile of that task finds it by its labels and completes it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from controller import manifests
from controller.kube import Cluster
from controller.naming import idle_selector, task_labels
from controller.pools import made, ready
from mcpexec.api.meta import CLAIMED, SANDBOX_STATE_LABEL, TASK_LABEL, TEMPLATE_HASH_LABEL

Pod = dict[str, Any]


def _seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    started = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return max(0.0, (datetime.now(UTC) - started).total_seconds())


def claim_patch(pod: Pod, task: manifests.TaskRef, timeout_seconds: int) -> dict[str, Any]:
    """The pod's new labels (the task's, so the task's NetworkPolicy selects it too), its only owner (the task: it
    goes with the task, and outlives the pool), and the task's deadline, counted by the kubelet from the pod's
    start: activeDeadlineSeconds may be set on a running pod, never raised."""
    started = (pod.get("status") or {}).get("startTime") or pod["metadata"].get("creationTimestamp")
    deadline = math.ceil(_seconds_since(started)) + timeout_seconds
    return {
        "metadata": {
            "labels": {**task_labels(task.name), SANDBOX_STATE_LABEL: CLAIMED},
            "ownerReferences": [task.owner_reference()],
        },
        "spec": {"activeDeadlineSeconds": deadline},
    }


def claimed_by(cluster: Cluster, pool: dict[str, Any], task: manifests.TaskRef) -> Pod | None:
    """The pod an earlier reconcile of this task claimed (if that reconcile stopped before writing the status)."""
    trusted = made(pool)
    for pod in cluster.pods(task.namespace, f"{TASK_LABEL}={task.name},{SANDBOX_STATE_LABEL}={CLAIMED}"):
        owners = {ref.get("uid") for ref in pod["metadata"].get("ownerReferences") or []}
        if task.uid in owners and pod["metadata"]["uid"] in trusted:
            return pod
    return None


def claim(
    cluster: Cluster, pool: dict[str, Any], template_hash: str, task: manifests.TaskRef, timeout_seconds: int
) -> Pod | None:
    """Claim the oldest ready idle sandbox the pool made from its current template; None when there is none."""
    trusted = made(pool)
    candidates = [
        pod
        for pod in cluster.pods(task.namespace, idle_selector(pool["metadata"]["name"]))
        if ready(pod)
        and pod["metadata"]["uid"] in trusted
        and not pod["metadata"].get("deletionTimestamp")
        and (pod["metadata"].get("labels") or {}).get(TEMPLATE_HASH_LABEL) == template_hash
    ]
    candidates.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    for pod in candidates:
        claimed = cluster.patch_pod_if_unchanged(pod, claim_patch(pod, task, timeout_seconds))
        if claimed is not None:
            return claimed
    return None
