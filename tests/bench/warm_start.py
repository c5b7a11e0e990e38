"""Warm vs cold AgentTask starts on the e2e node (a real single-node cluster, kubelet + containerd + gVisor; the
chart installed as a user would): the same trivial task, run TASKS times from a SandboxPool's warm sandboxes and
TASKS times as cold Jobs, one task at a time, in the same run.

Per task: create -> code started (the task's first line prints the host clock: gVisor reads the host's) and
create -> Succeeded (the status as a client watching it sees it, polled every 50 ms). Before each warm task the
bench waits for the pool to be fully refilled: what it measures is a claim, not a pool too small for the rate of
tasks (that is `replicas`, sized by the user). The cold path is the baseline; the report gives the ratios.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from typing import Any

from kubernetes import client

from mcpexec.api.meta import SANDBOXPOOL_PLURAL
from tests.e2e.node import node
from tests.e2e.release import API_VERSION, GROUP, PLURAL, install_release

TASKS = int(os.environ.get("MCPEXEC_BENCH_WARM_TASKS", "50"))
REPLICAS = 3
POLL_SECONDS = 0.05
CODE = "import time\nprint('started', repr(time.time()))\n"
RESOURCES = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 3),
        "p99": round(_percentile(values, 99), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def _pool_ready(custom: client.CustomObjectsApi, namespace: str, name: str) -> int:
    pool = custom.get_namespaced_custom_object(GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, name)
    return int((pool.get("status") or {}).get("readyReplicas", 0))


def _wait_pool(custom: client.CustomObjectsApi, namespace: str, name: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while _pool_ready(custom, namespace, name) < REPLICAS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"pool {name} not refilled within {timeout}s")
        time.sleep(0.2)


def _one(custom: client.CustomObjectsApi, namespace: str, spec: dict[str, Any]) -> tuple[float, float, str]:
    """(create -> code started, create -> Succeeded, launch type) of one task."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    body = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name}, "spec": spec}
    created = time.time()
    custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, body)
    while True:
        status = custom.get_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, name).get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed", "TimedOut"):
            break
        time.sleep(POLL_SECONDS)
    done = time.time()
    if status["phase"] != "Succeeded" or not status.get("result", "").startswith("started "):
        raise RuntimeError(f"task {name}: {status}")
    started = float(status["result"].split()[1])
    custom.delete_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, name)
    return started - created, done - created, str(status.get("launchType"))


def run() -> dict[str, Any]:
    namespace, pool = "bench", "bench"
    with node() as the_node, the_node.cp.as_default_client():
        install_release(the_node)
        client.CoreV1Api().create_namespace({"metadata": {"name": namespace}})
        while not client.CoreV1Api().list_namespaced_service_account(namespace).items:
            time.sleep(0.2)
        custom = client.CustomObjectsApi()
        body = {
            "apiVersion": f"{GROUP}/{API_VERSION}",
            "kind": "SandboxPool",
            "metadata": {"name": pool},
            "spec": {"replicas": REPLICAS, "template": {"resources": RESOURCES}},
        }
        custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, body)
        figures: dict[str, dict[str, list[float]]] = {
            "warm": {"started": [], "done": []},
            "cold": {"started": [], "done": []},
        }
        for _ in range(TASKS):
            _wait_pool(custom, namespace, pool)
            started, done, launch = _one(
                custom, namespace, {"poolRef": {"name": pool}, "timeoutSeconds": 120, "code": CODE}
            )
            if launch != "Warm":
                raise RuntimeError(f"a task of a full pool ran {launch}")
            figures["warm"]["started"].append(started)
            figures["warm"]["done"].append(done)
        for _ in range(TASKS):
            started, done, _launch = _one(
                custom, namespace, {"timeoutSeconds": 120, "code": CODE, "resources": RESOURCES}
            )
            figures["cold"]["started"].append(started)
            figures["cold"]["done"].append(done)
    result: dict[str, Any] = {"tasks_each": TASKS, "pool_replicas": REPLICAS}
    for launch, series in figures.items():
        result[launch] = {
            "create_to_code_started_s": _summary(series["started"]),
            "create_to_succeeded_s": _summary(series["done"]),
        }
    for what in ("create_to_code_started_s", "create_to_succeeded_s"):
        result[f"cold_over_warm_{what.removesuffix('_s')}_p50"] = round(
            result["cold"][what]["p50"] / result["warm"][what]["p50"], 1
        )
    return result
