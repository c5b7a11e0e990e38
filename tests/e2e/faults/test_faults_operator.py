"""Issue 31.4: the operator SIGKILLed at random points (seeded: MCPEXEC_FAULTS_SEED) of a burst of warm and cold
tasks (CI: once in 10 tasks; full tier: three times in 50). Every task ends exactly once with its own result; its code
ran once; no task has both a Job and a claimed pool pod; no finished task is run again; no claimed pool pod is left
that no task's claim names; no Job is left that its task does not name; nothing is left once the tasks are gone."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client

from controller.naming import child_name
from mcpexec.api.meta import CLAIMED, POOL_LABEL, SANDBOX_STATE_LABEL, SANDBOXPOOL_PLURAL, TASK_LABEL
from tests.e2e.faults.conftest import TEMPLATE, Workspace
from tests.e2e.faults.disruptions import sigkill
from tests.e2e.faults.figures import FULL, SEED, record_figures
from tests.e2e.faults.release_state import pods, wait_restarted
from tests.e2e.node import Node
from tests.e2e.release import API_VERSION, GROUP, PLURAL, RELEASE_NAMESPACE
from tests.e2e.sessions import create_pool, wait_pool

pytestmark = pytest.mark.e2e

TASKS, KILLS = (50, 3) if FULL else (10, 1)
# The kills fall this long after the burst's start (seconds): while the operator claims sandboxes and creates Jobs.
KILL_WINDOW = (2, 90) if FULL else (2, 25)
POOL = "burst"
FINISHED = ("Succeeded", "Failed", "TimedOut")
CODE = "print('label:', call_tool('rec/record', {'label': 'LABEL'})['result'])"


def _task(name: str, warm: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"timeoutSeconds": 300, "mcpServers": ["rec"], "code": CODE.replace("LABEL", name)}
    if warm:
        spec["poolRef"] = {"name": POOL}
    return {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name}, "spec": spec}


def _tasks(namespace: str) -> dict[str, dict[str, Any]]:
    listed: Any = client.CustomObjectsApi().list_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL)
    return {t["metadata"]["name"]: t for t in listed["items"] if t["metadata"]["name"].startswith("burst-")}


def _kill_operator(the_node: Node, at: list[float], started: float, recovered: list[float]) -> None:
    """SIGKILL the operator at each offset from the burst's start (once it runs again, if it is still down)."""
    for offset in at:
        time.sleep(max(0.0, started + offset - time.monotonic()))
        operator = pods("operator")[0].metadata.name
        killed_at = time.monotonic()
        restarts = sigkill(the_node, RELEASE_NAMESPACE, operator)
        wait_restarted("operator", operator, restarts, timeout=300)
        recovered.append(time.monotonic() - killed_at)


def _wait_finished(namespace: str, names: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        tasks = _tasks(namespace)
        pending = [n for n in names if (tasks.get(n, {}).get("status") or {}).get("phase") not in FINISHED]
        if not pending or time.monotonic() > deadline:
            return tasks
        time.sleep(1)


def _ends(namespace: str) -> Counter[str]:
    """How many times each task was said to have finished (the operator's Event per phase change)."""
    events: Any = client.CoreV1Api().list_namespaced_event(namespace)
    return Counter(
        e.involved_object.name for e in events.items if e.involved_object.kind == "AgentTask" and e.reason in FINISHED
    )


def _leftovers(namespace: str, tasks: dict[str, dict[str, Any]]) -> list[str]:
    """What the invariants forbid: a task with both a Job and a claimed pod, a claimed pod no claim names, a Job its
    task does not name, a finished task's pod still running."""
    core: Any = client.CoreV1Api()
    batch: Any = client.BatchV1Api()
    wrong = []
    claims = {
        (t["status"]["claim"]["podName"], t["status"]["claim"].get("podUID")): name
        for name, t in tasks.items()
        if ((t.get("status") or {}).get("claim") or {}).get("podName")
    }
    claimed = core.list_namespaced_pod(namespace, label_selector=f"{POOL_LABEL}={POOL},{SANDBOX_STATE_LABEL}={CLAIMED}")
    for pod in claimed.items:
        owner = claims.get((pod.metadata.name, pod.metadata.uid))
        if owner is None or owner != pod.metadata.labels.get(TASK_LABEL):
            wrong.append(f"claimed pod {pod.metadata.name} ({pod.metadata.labels.get(TASK_LABEL)}) named by no claim")
    for job in batch.list_namespaced_job(namespace).items:
        name = job.metadata.name.removeprefix("mcpexec-")
        if not name.startswith("burst-"):
            continue
        status = (tasks.get(name) or {}).get("status") or {}
        if job.metadata.name != child_name(name) or status.get("jobName") != job.metadata.name:
            wrong.append(f"job {job.metadata.name} that no task names")
        if (status.get("claim") or {}).get("podName"):
            wrong.append(f"task {name} has both a Job and claimed pod {status['claim']['podName']}")
    for pod in core.list_namespaced_pod(namespace).items:
        task = (pod.metadata.labels or {}).get(TASK_LABEL, "")
        if task in tasks and pod.status.phase in ("Pending", "Running"):
            wrong.append(f"pod {pod.metadata.name} of finished task {task} is {pod.status.phase}")
    return wrong


def _burst_objects(namespace: str) -> list[str]:
    """The burst's Jobs and pods, its pool's sandboxes."""
    jobs: Any = client.BatchV1Api().list_namespaced_job(namespace)
    listed: Any = client.CoreV1Api().list_namespaced_pod(namespace)
    return [j.metadata.name for j in jobs.items if j.metadata.name.startswith(child_name("burst-"))] + [
        p.metadata.name
        for p in listed.items
        if (p.metadata.labels or {}).get(TASK_LABEL, "").startswith("burst-")
        or (p.metadata.labels or {}).get(POOL_LABEL) == POOL
    ]


def test_the_operator_killed_during_a_burst_runs_every_task_once(e2e_node: Node, workspace: Workspace) -> None:
    ns, rec, custom = workspace.namespace, workspace.recorder, client.CustomObjectsApi()
    create_pool(ns, POOL, 3, TEMPLATE)
    wait_pool(ns, POOL, 3)
    names = [f"burst-{i:02d}" for i in range(TASKS)]
    rng = random.Random(SEED)
    kills = sorted(rng.uniform(*KILL_WINDOW) for _ in range(KILLS))
    recovered: list[float] = []
    started = time.monotonic()
    with ThreadPoolExecutor(1) as killer:
        killed = killer.submit(_kill_operator, e2e_node, kills, started, recovered)
        for i, name in enumerate(names):
            custom.create_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, _task(name, warm=i % 2 == 0))
        killed.result()
    tasks = _wait_finished(ns, names, timeout=900 if FULL else 300)
    burst_seconds = time.monotonic() - started
    time.sleep(15)  # an operator sweep (every 10 s) after the last task finished: nothing may run again

    tasks = _tasks(ns)
    phases = {n: (tasks[n].get("status") or {}).get("phase") for n in names}
    results = {n: (tasks[n].get("status") or {}).get("result") or "" for n in names}
    ran, ends = Counter(rec.labels()), _ends(ns)
    mixed = [n for n in names if f"label: {n}\n" not in results[n] or results[n].count("label:") != 1]
    wrong = _leftovers(ns, tasks)
    launches = Counter((tasks[n].get("status") or {}).get("launchType") for n in names)
    record_figures(
        f"operator SIGKILLed {KILLS}x during a burst of {TASKS} tasks",
        seed=SEED, killed_at_seconds=[round(k, 1) for k in kills],
        lost=sum(phases[n] != "Succeeded" for n in names), doubled=sum(ran[n] > 1 for n in names),
        mixed=len(mixed), ended_twice=sum(ends[n] > 1 for n in names), leftovers=len(wrong), launches=dict(launches),
        burst_seconds=round(burst_seconds, 1), recover_seconds=[round(r, 1) for r in recovered],
    )  # fmt: skip
    problems = {
        "not succeeded": {n: tasks[n].get("status") for n in names if phases[n] != "Succeeded"},
        "code ran other than once": {n: ran[n] for n in names if ran[n] != 1},
        "another task's result": {n: results[n] for n in mixed},
        "said to have finished more than once": {n: ends[n] for n in names if ends[n] > 1},
        "left behind": wrong,
    }
    broken = {what: found for what, found in problems.items() if found}
    assert not broken, json.dumps(broken, indent=1)

    # Gone with their tasks: every Job, pod and claimed sandbox of the burst.
    for name in names:
        custom.delete_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, name)
    custom.delete_namespaced_custom_object(GROUP, API_VERSION, ns, SANDBOXPOOL_PLURAL, POOL)
    deadline = time.monotonic() + 120
    while left := _burst_objects(ns):
        assert time.monotonic() < deadline, f"left behind: {left}"
        time.sleep(1)
