"""Claiming a pool's idle sandbox for a task or a session: the pod becomes its (its labels, owner, deadline).

The claim is one patch conditioned on the pod's resourceVersion, so two tasks racing for the same pod cannot both
have it: the loser's patch fails and it tries the next pod. The gateway serves the pod as the task only once the
task's status names it (written after this patch, by the operator alone), so a pod claimed by a patch whose task
status was never written serves nothing; the next reconcile of that task finds it by its labels and completes it,
or, when the task launched otherwise meanwhile, the sweep deletes it (controller/leftovers.py).
"""

from __future__ import annotations

import math
import threading
from typing import Any

from controller import manifests
from controller.kube import Cluster
from controller.pools import made, ready
from mcpexec.api.meta import CLAIMED, IDLE, SANDBOX_STATE_LABEL, TEMPLATE_HASH_LABEL
from mcpexec.api.timestamps import seconds_since

Pod = dict[str, Any]
_TRYING: set[str] = set()  # uids of the pods a claim of this process is patching now
_TRYING_LOCK = threading.Lock()


def _seconds_since(timestamp: str | None) -> float:
    if not timestamp:
        return 0.0
    return max(0.0, seconds_since(timestamp))


def waited(claimant: dict[str, Any]) -> float:
    """Seconds, to the millisecond, from the claimant's creation to now: its claim (status.claim.claimSeconds)."""
    return round(_seconds_since(claimant["metadata"].get("creationTimestamp")), 3)


def claim_patch(pod: Pod, task: manifests.Claimant, timeout_seconds: int) -> dict[str, Any]:
    """The pod's new labels (the task's or session's, so its NetworkPolicy selects it too), its only owner (it goes
    with its claimant, and outlives the pool), and the claimant's deadline, counted by the kubelet from the pod's
    start: activeDeadlineSeconds may be set on a running pod, never raised."""
    started = (pod.get("status") or {}).get("startTime") or pod["metadata"].get("creationTimestamp")
    deadline = math.ceil(_seconds_since(started)) + timeout_seconds
    return {
        "metadata": {
            "labels": {**task.children()[1], SANDBOX_STATE_LABEL: CLAIMED},
            "ownerReferences": [task.owner_reference()],
        },
        "spec": {"activeDeadlineSeconds": deadline},
    }


def claimed_for(cluster: Cluster, pool: dict[str, Any], claimant: manifests.Claimant) -> list[Pod]:
    """Every pod of the pool labelled as claimed for the claimant's name, in any phase (owners and trust are the
    caller's to check: controller/leftovers.py)."""
    labels = {**claimant.children()[1], SANDBOX_STATE_LABEL: CLAIMED}
    pods = cluster.pool_pods(claimant.namespace, pool["metadata"]["name"])
    return [pod for pod in pods if labels.items() <= (pod["metadata"].get("labels") or {}).items()]


def claimed_by(cluster: Cluster, pool: dict[str, Any], claimant: manifests.Claimant) -> Pod | None:
    """The pod an earlier reconcile of this claimant claimed (if that reconcile stopped before writing the status)."""
    trusted = made(pool)
    for pod in claimed_for(cluster, pool, claimant):
        owners = {ref.get("uid") for ref in pod["metadata"].get("ownerReferences") or []}
        if claimant.uid in owners and pod["metadata"]["uid"] in trusted:
            return pod
    return None


def _claimable(pods: list[Pod], pool: dict[str, Any], template_hash: str) -> list[Pod]:
    trusted = made(pool)
    found = [
        pod
        for pod in pods
        if (pod["metadata"].get("labels") or {}).get(SANDBOX_STATE_LABEL) == IDLE
        and ready(pod)
        and pod["metadata"]["uid"] in trusted
        and not pod["metadata"].get("deletionTimestamp")
        and (pod["metadata"].get("labels") or {}).get(TEMPLATE_HASH_LABEL) == template_hash
    ]
    return sorted(found, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))


def candidates(cluster: Cluster, pool: dict[str, Any], template_hash: str, fresh: bool = False) -> list[Pod]:
    """The pool's ready idle sandboxes made from its current template, oldest first: what a claim may take. As last
    seen (controller/store.py); none there, or `fresh`: as the API server has them and the pool now (the store may
    lag a sandbox just made ready, or the pool's status that trusts it)."""
    meta = pool["metadata"]
    if not fresh:
        seen = _claimable(cluster.pool_pods(meta["namespace"], meta["name"]), pool, template_hash)
        if seen:
            return seen
    current = cluster.read_pool(meta["namespace"], meta["name"]) or pool
    return _claimable(cluster.relist_pool_pods(meta["namespace"], meta["name"]), current, template_hash)


def claim_first(
    cluster: Cluster,
    pool: dict[str, Any],
    template_hash: str,
    pods: list[Pod],
    claimant: manifests.Claimant,
    timeout_seconds: int,
) -> Pod | None:
    """Claim the first of `pods` (candidates, as last seen); when it was taken or had changed since (the store lags),
    the first of the pool's candidates as the API server has them now; None when those went too."""
    claimed = _claim_one(cluster, pods, claimant, timeout_seconds, attempts=1)
    if claimed is None and pods:
        tried = {pod["metadata"]["uid"] for pod in pods}
        fresh = [
            pod for pod in candidates(cluster, pool, template_hash, fresh=True) if pod["metadata"]["uid"] not in tried
        ]
        claimed = _claim_one(cluster, fresh, claimant, timeout_seconds)
    return claimed


def _latest(cluster: Cluster, pod: Pod) -> Pod:
    """The pod as last seen now: candidates are read before the claims ahead of this one patched theirs, and a patch
    conditioned on what a claim since changed is a conflict (and a fresh listing of the pool) for nothing."""
    meta = pod["metadata"]
    seen = cluster.store.get("Pod", meta["namespace"], meta["name"])
    return seen if seen is not None and seen["metadata"]["uid"] == meta["uid"] else pod


def _claim_one(
    cluster: Cluster, pods: list[Pod], claimant: manifests.Claimant, timeout_seconds: int, attempts: int = 0
) -> Pod | None:
    """The first of `pods` that a patch claims, within `attempts` patches (0: any number). A pod another claim of
    this operator is patching is passed over, so concurrent claims try different pods instead of all racing for the
    oldest (the patch, conditioned on what was read, keeps two claims from one pod)."""
    tried = 0
    for pod in pods:
        if attempts and tried >= attempts:
            return None
        uid = pod["metadata"]["uid"]
        with _TRYING_LOCK:
            if uid in _TRYING:
                continue
            _TRYING.add(uid)
        try:
            pod = _latest(cluster, pod)
            if (pod["metadata"].get("labels") or {}).get(SANDBOX_STATE_LABEL) != IDLE:
                continue  # another claim took it since the candidates were read
            tried += 1
            claimed = cluster.patch_pod_if_unchanged(pod, claim_patch(pod, claimant, timeout_seconds))
        finally:
            with _TRYING_LOCK:
                _TRYING.discard(uid)
        if claimed is not None:
            return claimed
    return None


def claim(
    cluster: Cluster, pool: dict[str, Any], template_hash: str, claimant: manifests.Claimant, timeout_seconds: int
) -> Pod | None:
    """Claim the oldest ready idle sandbox the pool made from its current template; None when there is none."""
    pods = candidates(cluster, pool, template_hash)
    return claim_first(cluster, pool, template_hash, pods, claimant, timeout_seconds)
