"""What earlier reconciles of a task left (its Job, pool sandboxes claimed for it) and what becomes of it (pure
functions, no API calls).

A reconcile can stop between any two of its writes (an operator killed, an API error): after its run record was
created, after a pool sandbox was patched as claimed, after the Job was created, each before the task's status named
what it launched. The next reconcile of that task (controller/tasks.py) adopts what was launched instead of launching
again, and a sandbox claimed for a task that then launched otherwise, or finished, is deleted by the sweep.

The gateway assigns a claimed sandbox its task only once the task's status names that pod (controller/claims.py), and
a status, once it names a pod or a Job, is never changed to name another: a claimed sandbox that no status names
never ran anything. It is still deleted rather than returned to its pool: its activeDeadlineSeconds (the task's
deadline, set by the claim) can be lowered but never removed or raised, so it could not wait idle as long as a fresh
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpexec.api.status import AgentTaskStatus

Pod = dict[str, Any]
_FINISHED = ("Succeeded", "Failed")


def launched(status: AgentTaskStatus) -> bool:
    """Whether the task's status names what it runs in (a Job, or a claimed sandbox): then it is never launched
    again, whatever became of it."""
    return bool(status.job_name or (status.claim and status.claim.pod_name))


def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    return uid in {ref.get("uid") for ref in obj["metadata"].get("ownerReferences") or []}


def _alive(pod: Pod) -> bool:
    """Neither finished nor on its way out: a sandbox that may still run a task."""
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in _FINISHED


@dataclass(frozen=True)
class Resume:
    """What a task whose status names no launch does with what it has: keep its Job (it launched cold), or adopt one
    claimed sandbox (it launched warm), or launch (neither); the other sandboxes claimed for it are deleted."""

    job: bool = False
    pod: Pod | None = None
    release: list[Pod] = field(default_factory=list)


def resume(task_uid: str, job: dict[str, Any] | None, pods: list[Pod], trusted: frozenset[str]) -> Resume:
    """`job`: the Job of the task's child name (another task's, of the same name, is not this one's); `pods`: the
    pods labelled as claimed for the task's name, in any phase; `trusted`: the uids of the pods the task's pool
    made (labels and owners are anyone's to write: a pod made to look claimed is never adopted)."""
    mine = sorted(
        (pod for pod in pods if _owned_by(pod, task_uid)),
        key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]),
    )
    if job is not None and _owned_by(job, task_uid):
        return Resume(job=True, release=mine)
    adoptable = [pod for pod in mine if _alive(pod) and pod["metadata"]["uid"] in trusted]
    if adoptable:
        return Resume(pod=adoptable[0], release=[pod for pod in mine if pod is not adoptable[0]])
    return Resume(release=mine)


def strays(pods: list[Pod], tasks: list[dict[str, Any]]) -> list[Pod]:
    """Claimed sandboxes, still alive, that no status names and none will: their task finished, or its status names
    another pod or a Job. A sandbox of a task not launched yet is left to that task's reconcile (it adopts it), and
    one whose task is gone to the garbage collector (the task owns it)."""
    by_uid = {task["metadata"]["uid"]: AgentTaskStatus.of(task) for task in tasks}
    found: list[Pod] = []
    for pod in pods:
        if not _alive(pod):
            continue
        refs = pod["metadata"].get("ownerReferences") or []
        owners = [by_uid[ref["uid"]] for ref in refs if ref.get("uid") in by_uid]
        if not owners:
            continue
        status = owners[0]
        named = status.claim is not None and status.claim.pod_uid == pod["metadata"]["uid"]
        if not named and (status.finished or launched(status)):
            found.append(pod)
    return found
