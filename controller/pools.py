"""SandboxPool reconcile: keep `spec.replicas` idle sandboxes of the current template started, and say so in status.

Idle pods made from another template, or whose runtime exited while idle, are deleted and replaced; a claimed pod
is the task's (it owns it) and is only counted. The plan is a pure function of the pool's pods, so a reconcile
run twice, or after a crash, converges on the same pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from controller import manifests
from controller.kube import Cluster
from controller.metrics import POOL_EVENTS, POOL_SANDBOXES
from controller.naming import idle_selector
from controller.settings import OperatorSettings
from mcpexec.api.conditions import Progress, generation, merge_conditions, readiness
from mcpexec.api.meta import CLAIMED, IDLE, SANDBOX_STATE_LABEL, TEMPLATE_HASH_LABEL, validation_message
from mcpexec.api.reasons import EventReason, Reason
from mcpexec.api.sandboxpool import SandboxPool, template_hash
from mcpexec.api.status import SandboxPoolStatus

Pod = dict[str, Any]
_FINISHED = ("Succeeded", "Failed")


def _phase(pod: Pod) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def ready(pod: Pod) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return _phase(pod) == "Running" and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class PoolPods:
    """A pool's pods by what the reconcile does with them."""

    current: list[Pod] = field(default_factory=list)  # idle, alive, made from the current template
    stale: list[Pod] = field(default_factory=list)  # idle, alive, another template's
    exited: list[Pod] = field(default_factory=list)  # idle, but their runtime exited: never claimable
    claimed: list[Pod] = field(default_factory=list)  # running a task
    foreign: list[Pod] = field(default_factory=list)  # labelled as the pool's, but not made by this operator


def made(pool: dict[str, Any]) -> frozenset[str]:
    """The uids of the pods this operator made for the pool (its status, which only the operator writes). Labels
    and owner references are anyone's to write who may create pods in the namespace: a pod made to look like an
    idle sandbox must never be claimed, or it would run another user's task as that task."""
    return frozenset(SandboxPoolStatus.of(pool).sandbox_uids or [])


def classify(pods: list[Pod], current_hash: str, trusted: frozenset[str]) -> PoolPods:
    """Sorted oldest first; pods being deleted are left out (they are on their way)."""
    sorted_pods = sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    grouped = PoolPods()
    for pod in sorted_pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        if meta["uid"] not in trusted:
            grouped.foreign.append(pod)
            continue
        labels = meta.get("labels") or {}
        state = labels.get(SANDBOX_STATE_LABEL)
        if state == CLAIMED:
            if _phase(pod) not in _FINISHED:
                grouped.claimed.append(pod)
        elif state == IDLE:
            if _phase(pod) in _FINISHED:
                grouped.exited.append(pod)
            elif labels.get(TEMPLATE_HASH_LABEL) != current_hash:
                grouped.stale.append(pod)
            else:
                grouped.current.append(pod)
    return grouped


@dataclass(frozen=True)
class Plan:
    create: int
    delete: list[Pod]


def plan(replicas: int, pods: PoolPods) -> Plan:
    """Replace stale and exited idle pods; scale to `replicas`, removing surplus pods not ready first, then newest."""
    surplus = len(pods.current) - replicas
    by_removal = sorted(enumerate(pods.current), key=lambda at: (ready(at[1]), -at[0]))
    doomed = [pod for _, pod in by_removal[: max(0, surplus)]]
    return Plan(create=max(0, -surplus), delete=[*pods.stale, *pods.exited, *doomed])


def counts(pods: PoolPods) -> dict[str, int]:
    return {
        "idle": len(pods.current),
        "ready": sum(map(ready, pods.current)),
        "claimed": len(pods.claimed),
    }


def _status(pool: dict[str, Any], hash_: str, pods: PoolPods, refused: tuple[Reason, str] | None) -> SandboxPoolStatus:
    """The pool's status: Ready once every idle sandbox is ready (Reconciling while they start), Stalled with the
    reason when the pool cannot start any (`refused`: reason, message)."""
    tally = counts(pods)
    replicas = int((pool.get("spec") or {}).get("replicas", 0))
    observed = generation(pool)
    if refused is not None:
        updates = readiness(False, Progress.STALLED, *refused)
    elif tally["ready"] < replicas:
        updates = readiness(
            False, Progress.IN_PROGRESS, Reason.STARTING, f"{tally['ready']} of {replicas} idle sandboxes ready"
        )
    else:
        updates = readiness(True, Progress.CURRENT, Reason.READY, f"{tally['ready']} idle sandboxes ready")
    return SandboxPoolStatus(
        observed_generation=observed,
        replicas=tally["idle"],
        ready_replicas=tally["ready"],
        claimed_replicas=tally["claimed"],
        selector=idle_selector(pool["metadata"]["name"]),
        template_hash=hash_,
        sandbox_uids=sorted(p["metadata"]["uid"] for p in [*pods.current, *pods.stale, *pods.claimed]),
        conditions=merge_conditions(SandboxPoolStatus.of(pool).conditions or [], updates, observed),
    )


def _write_status(cluster: Cluster, pool: dict[str, Any], status: SandboxPoolStatus) -> None:
    current = SandboxPoolStatus.of(pool)
    if any(getattr(status, field) != getattr(current, field) for field in status.model_fields_set):
        cluster.patch_pool_status(pool["metadata"]["namespace"], pool["metadata"]["name"], status)


def _refused(cluster: Cluster, pool: dict[str, Any], reason: Reason, message: str) -> None:
    """A pool that cannot start sandboxes (fail closed: none is made) says why in its Ready condition."""
    meta = pool["metadata"]
    pods = classify(cluster.pool_pods(meta["namespace"], meta["name"]), "", made(pool))
    _write_status(cluster, pool, _status(pool, "", pods, (reason, message)))


def reconcile(cluster: Cluster, settings: OperatorSettings, document: dict[str, Any]) -> None:
    """One pass: the pool's ServiceAccount, NetworkPolicy and skills claim, then its idle pods, then its status."""
    meta = document["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    try:
        pool = SandboxPool.model_validate(document)
    except ValidationError as exc:
        message = validation_message(exc)
        _refused(cluster, document, Reason.INVALID_SPEC, message)
        return
    template = pool.spec.template
    if not cluster.runtime_class_exists(template.runtime_class_name):
        message = f"RuntimeClass {template.runtime_class_name!r} does not exist; no sandbox is started without it"
        _refused(cluster, document, Reason.RUNTIME_CLASS_NOT_FOUND, message)
        return
    owner = manifests.PoolRef(name=name, namespace=namespace, uid=meta["uid"])
    if template.skills is not None:
        cluster.ensure(manifests.skills_claim(namespace, template.skills), owner_uid=None)
    cluster.ensure(manifests.service_account(owner), meta["uid"])
    cluster.ensure(manifests.network_policy(owner, settings), meta["uid"])
    hash_ = template_hash(template)
    pods = classify(cluster.pool_pods(namespace, name), hash_, made(document))
    deleting = bool(meta.get("deletionTimestamp"))
    steps = plan(0 if deleting else pool.spec.replicas, pods)
    # A pod owned by the pool that it did not record: made by a reconcile that stopped before its status write, or
    # a forgery claiming the pool as its owner. Either way not a sandbox to keep.
    orphans = [
        p for p in pods.foreign if meta["uid"] in {r.get("uid") for r in p["metadata"].get("ownerReferences") or []}
    ]
    for pod in [*steps.delete, *orphans]:
        cluster.delete_pod(namespace, pod["metadata"]["name"])
        POOL_EVENTS.labels(event="deleted").inc()
    for _ in range(steps.create):
        created = cluster.create_pod(manifests.idle_sandbox(owner, template, hash_, settings))
        pods.current.append(created)
        POOL_EVENTS.labels(event="created").inc()
    if steps.create:
        cluster.record_event(document, EventReason.REFILLED, f"started {steps.create} idle sandbox(es)")
    removed = {id(p) for p in steps.delete}
    pods.current = [p for p in pods.current if id(p) not in removed]
    pods.stale = pods.exited = []
    POOL_SANDBOXES.observe(namespace, name, counts(pods))
    _write_status(cluster, document, _status(document, hash_, pods, None))


def claimed_running(cluster: Cluster, namespace: str, name: str) -> int:
    """How many of a pool's sandboxes still run a task (a pool being deleted waits for them)."""
    pool = cluster.read_pool(namespace, name) or {}
    return len(classify(cluster.pool_pods(namespace, name), "", made(pool)).claimed)
