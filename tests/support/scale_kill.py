"""The operator killed (SIGKILL) in the middle of a burst of warm claims on the simulated cluster, then started again:
its store, its starts and its own watches die with it, and what the restarted one finds in the API server must be
finished, never done twice (each task launched once, each sandbox claimed by one task, the sandboxes claimed for a task
that launched otherwise deleted, the pools full again)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from kubernetes import client

from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, SANDBOX_STATE_LABEL, SANDBOXPOOL_PLURAL, VERSION
from tests.support.scale_cluster import Simulated
from tests.support.scale_scenarios import Size, create_paced, create_task, namespaces, sandbox_pool

Key = tuple[str, str]
SETTLE_SECONDS = 120


def _ready_idle(spaces: list[str]) -> int:
    core, count = client.CoreV1Api(), 0
    for namespace in spaces:
        for pod in core.list_namespaced_pod(namespace, label_selector=f"{SANDBOX_STATE_LABEL}=idle").items:
            ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
            count += ready and pod.metadata.deletion_timestamp is None
    return count


def _wait(what: str, check: Any, timeout: float) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(0.2)
    return round(time.monotonic() - started, 2)


def _tasks(spaces: list[str]) -> dict[Key, dict[str, Any]]:
    custom = client.CustomObjectsApi()
    found: dict[Key, dict[str, Any]] = {}
    for namespace in spaces:
        for task in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL)["items"]:
            found[(namespace, task["metadata"]["name"])] = task
    return found


def _claimed_pods(spaces: list[str]) -> list[Any]:
    core = client.CoreV1Api()
    return [
        pod
        for namespace in spaces
        for pod in core.list_namespaced_pod(namespace, label_selector=f"{SANDBOX_STATE_LABEL}=claimed").items
        if pod.metadata.deletion_timestamp is None and pod.status.phase not in ("Succeeded", "Failed")
    ]


def _named(task: dict[str, Any]) -> str | None:
    """The uid of the sandbox the task's status names."""
    claim = (task.get("status") or {}).get("claim") or {}
    return claim.get("podUID")


def _launched(task: dict[str, Any]) -> bool:
    return bool(_named(task) or (task.get("status") or {}).get("jobName"))


def killed_mid_claims(sim: Simulated, size: Size) -> dict[str, Any]:
    """Pools of `pool_replicas` in `pools` namespaces; `warm_claims` pooled tasks at `claims_per_second`, the operator
    SIGKILLed once about a third of them are created; then a new operator."""
    spaces = namespaces(size.pools, "kill")
    custom = client.CustomObjectsApi()
    total = size.pools * size.pool_replicas
    with sim.operator() as first:
        for namespace in spaces:
            custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, sandbox_pool("pool", size.pool_replicas)
            )
        _wait("pools filled", lambda: _ready_idle(spaces) >= total, 300)
        burst = threading.Thread(
            target=create_paced,
            args=(
                lambda i: create_task(spaces[i % len(spaces)], f"kill-{i}", poolRef={"name": "pool"}),
                size.warm_claims,
                size.claims_per_second,
            ),
        )
        burst.start()
        time.sleep(size.warm_claims / size.claims_per_second / 3)
        first.process.kill()
        first.process.wait()
        killed_after = sum(1 for task in _tasks(spaces).values() if _launched(task))
        burst.join()
    with sim.operator() as second:

        def all_launched() -> bool:
            tasks = _tasks(spaces)
            return len(tasks) == size.warm_claims and all(map(_launched, tasks.values()))

        launched_in = _wait("every task launched", all_launched, SETTLE_SECONDS)
        tasks = _tasks(spaces)
        named = {_named(task): key for key, task in tasks.items() if _named(task)}

        def no_strays() -> bool:
            return all(pod.metadata.uid in named for pod in _claimed_pods(spaces))

        strays_gone_in = _wait("claimed sandboxes no task names deleted", no_strays, SETTLE_SECONDS)
        refilled_in = _wait("pools full again", lambda: _ready_idle(spaces) >= total, SETTLE_SECONDS)
        claimants = Counter(_named(task) for task in tasks.values() if _named(task))
        both = [key for key, task in tasks.items() if _named(task) and (task.get("status") or {}).get("jobName")]
        return {
            "tasks": size.warm_claims,
            "launched_before_the_kill": killed_after,
            "launched_after_restart_seconds": launched_in,
            "strays_deleted_seconds": strays_gone_in,
            "refilled_seconds": refilled_in,
            "sandboxes_claimed_by_two_tasks": sum(1 for n in claimants.values() if n > 1),
            "tasks_with_a_sandbox_and_a_job": len(both),
            "cold": sum(1 for task in tasks.values() if not _named(task)),
            "operator_errors": len(second.errors()),  # the restarted one's
            "operator_error_samples": second.errors()[:3],
        }
