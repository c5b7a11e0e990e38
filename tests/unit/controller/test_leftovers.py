"""What a reconcile does with what earlier reconciles of its task left, and which claimed sandboxes the sweep deletes:
never a second launch, never a pod someone else made."""

from __future__ import annotations

from typing import Any

from controller import leftovers
from mcpexec.api.status import AgentTaskStatus

TASK_UID = "task-1"
POLICY = {"mcpServers": [], "tools": {"allow": [], "deny": []}}


def _pod(name: str, phase: str = "Running", owner: str = TASK_UID, created: str = "2026-01-01T00:00:00Z") -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "ownerReferences": [{"uid": owner}],
        },
        "status": {"phase": phase},
    }


def _job(owner: str = TASK_UID) -> dict[str, Any]:
    return {"metadata": {"name": "mcpexec-t", "ownerReferences": [{"uid": owner}]}}


def _trusted(*pods: Any) -> frozenset[str]:
    return frozenset(p["metadata"]["uid"] for p in pods)


def _task(uid: str = TASK_UID, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "t", "namespace": "team", "uid": uid}, "status": status}


def test_a_task_with_its_job_keeps_it_and_deletes_every_sandbox_claimed_for_it() -> None:
    pod = _pod("a")
    found = leftovers.resume(TASK_UID, _job(), [pod], _trusted(pod))
    assert found.job and found.pod is None and found.release == [pod], "never a Job and a sandbox"


def test_another_tasks_job_of_the_same_name_is_not_this_ones() -> None:
    found = leftovers.resume(TASK_UID, _job(owner="old"), [], frozenset())
    assert not found.job and found.pod is None and found.release == []


def test_the_oldest_live_trusted_sandbox_is_adopted_the_others_deleted() -> None:
    old, new = _pod("old", created="2026-01-01T00:00:00Z"), _pod("new", created="2026-01-01T00:00:05Z")
    found = leftovers.resume(TASK_UID, None, [new, old], _trusted(old, new))
    assert found.pod is old and found.release == [new] and not found.job


def test_a_finished_sandbox_no_status_named_ran_nothing_it_is_deleted_and_the_task_launches() -> None:
    """Claimed, then exited (its deadline) before any status named it: the gateway never assigned it."""
    done, gone = _pod("done", phase="Succeeded"), _pod("gone")
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    found = leftovers.resume(TASK_UID, None, [done, gone], _trusted(done, gone))
    assert not found.job and found.pod is None and found.release == [done, gone]


def test_a_sandbox_the_pool_did_not_make_is_never_adopted() -> None:
    forged = _pod("forged")
    found = leftovers.resume(TASK_UID, None, [forged], frozenset())
    assert found.pod is None and found.release == [forged]


def test_another_owners_pods_are_left_alone() -> None:
    theirs = _pod("theirs", owner="someone")
    found = leftovers.resume(TASK_UID, None, [theirs], _trusted(theirs))
    assert found == leftovers.Resume()


def test_a_status_names_its_launch_by_a_job_or_a_claimed_pod_not_by_a_claim_alone() -> None:
    assert leftovers.launched(AgentTaskStatus.model_validate({"jobName": "mcpexec-t"}))
    named = {"pool": "p", "policy": POLICY, "podName": "a", "podUID": "uid-a"}
    assert leftovers.launched(AgentTaskStatus.model_validate({"claim": named}))
    ceiling = {"pool": "p", "policy": POLICY}  # written before a pooled task's cold Job
    assert not leftovers.launched(AgentTaskStatus.model_validate({"claim": ceiling}))
    assert not leftovers.launched(AgentTaskStatus())


def test_the_sweep_deletes_sandboxes_no_status_names_or_will() -> None:
    named, extra, of_cold, of_done, of_pending, orphan, done = (
        _pod("named"),
        _pod("extra"),
        _pod("cold", owner="cold"),
        _pod("done", owner="finished"),
        _pod("pending", owner="pending"),
        _pod("orphan", owner="deleted-task"),
        _pod("exited", phase="Failed", owner="finished"),
    )
    claim = {"pool": "p", "policy": POLICY, "podName": "named", "podUID": "uid-named"}
    tasks = [
        _task(claim=claim, phase="Running"),
        _task("cold", jobName="mcpexec-t", phase="Running"),
        _task("finished", phase="Succeeded"),
        _task("pending", phase="Pending"),
    ]
    strays = leftovers.strays([named, extra, of_cold, of_done, of_pending, orphan, done], tasks)
    assert strays == [extra, of_cold, of_done]
