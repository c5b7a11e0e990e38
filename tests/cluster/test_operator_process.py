"""The operator as it is deployed (`python -m controller`): SIGKILL mid-reconcile, restart, health, metrics.

No KopfRunner here: a killed process must really die at an arbitrary point, and only one operator may
watch the cluster at a time.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.kube import create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.cluster.operator import get, operator_process
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

TASKS = 60


def _jobs(namespace: str) -> list[Any]:
    return list(client.BatchV1Api().list_namespaced_job(namespace, label_selector="mcpexec.dev/task").items)


def test_sigkill_mid_reconcile_then_restart_loses_nothing_and_duplicates_nothing(
    cluster: ControlPlane, namespace: str
) -> None:
    health, metrics = free_port(), free_port()
    with operator_process(cluster, health, metrics) as first:
        wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz"), 60, "operator liveness")
        # Tasks keep coming while the operator works; it is killed once it has made its first Jobs.
        burst = threading.Thread(target=lambda: [create_task(namespace, agenttask(f"burst-{i}")) for i in range(TASKS)])
        burst.start()
        wait_for(lambda: len(_jobs(namespace)) >= 3, 60, "the first jobs")
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        burst.join()
    made_before_kill = len(_jobs(namespace))
    assert made_before_kill < TASKS, "the kill should land mid-burst; raise TASKS if the operator got faster"

    with operator_process(cluster, free_port(), free_port()):
        wait_for(lambda: len(_jobs(namespace)) == TASKS, 120, f"all {TASKS} jobs after restart")

        def all_accepted() -> bool:
            return all(task_status(namespace, f"burst-{i}").get("jobName") for i in range(TASKS))

        wait_for(all_accepted, 120, "every task accepted")
        core = client.CoreV1Api()
        selector = "mcpexec.dev/task"
        assert len(core.list_namespaced_service_account(namespace, label_selector=selector).items) == TASKS
        assert len(core.list_namespaced_config_map(namespace, label_selector=selector).items) == TASKS
        policies = client.NetworkingV1Api().list_namespaced_network_policy(namespace, label_selector=selector)
        assert len(policies.items) == TASKS
        jobs = _jobs(namespace)
        assert sorted(j.metadata.name for j in jobs) == sorted(f"mcpexec-burst-{i}" for i in range(TASKS))
        for job in jobs:
            (owner,) = job.metadata.owner_references
            assert owner.name == job.metadata.labels["mcpexec.dev/task"]
        # Let the real Job controller finish making pods before the namespace is torn down.
        job_pod(namespace, "mcpexec-burst-0")


def test_health_and_metrics_endpoints(cluster: ControlPlane, namespace: str) -> None:
    health, metrics = free_port(), free_port()
    with operator_process(cluster, health, metrics):
        wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz"), 60, "operator liveness")
        create_task(namespace, agenttask("measured"))
        wait_for(lambda: task_status(namespace, "measured").get("jobName"), what="job created")
        play_kubelet(job_pod(namespace, "mcpexec-measured"), "Succeeded", exit_code=0, message="ok")
        wait_phase(namespace, "measured", "Succeeded")

        def scraped() -> dict[tuple[str, str], float] | None:
            text = get(f"http://127.0.0.1:{metrics}/metrics")
            if text is None:
                return None
            samples = {
                (s.name, s.labels.get("phase") or s.labels.get("outcome") or ""): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }
            return samples if samples.get(("mcpexec_operator_tasks", "Succeeded"), 0) >= 1 else None

        samples = wait_for(scraped, 30, "metrics showing the succeeded task")
        assert samples[("mcpexec_operator_reconciles_total", "created")] >= 1
        assert samples[("mcpexec_operator_reconcile_seconds_count", "")] >= 1
        assert samples[("mcpexec_operator_status_syncs_total", "")] >= 1
