"""Operator benchmark: 200 AgentTasks created at once against a real kube-apiserver + etcd.

Measures, per task, the time from its create call returning to its Job appearing on a watch; tasks per
second end to end; the operator's peak RSS. Baseline in the same run: the same client creating 200 Jobs
directly (the API server's own floor for the Jobs the operator must write), so the report shows how
many times slower the operator path is than writing the Jobs by hand.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes import client, config, watch

from tests.cluster import kube
from tests.support.components import REPO, free_port
from tests.support.control_plane import control_plane
from tests.support.malformed import agenttask
from tests.support.scale_scenarios import direct_job

TASKS = 200
CLIENT_THREADS = 16


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        lines = status.read().splitlines()
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def _watch_jobs(namespace: str, expected: int, seen: dict[str, float], done: threading.Event) -> None:
    stream = watch.Watch()
    for event in stream.stream(client.BatchV1Api().list_namespaced_job, namespace, timeout_seconds=300):
        if event["type"] == "ADDED":
            seen.setdefault(event["object"].metadata.name, time.monotonic())
            if len(seen) >= expected:
                break
    done.set()


def _create_all(create: Any, count: int) -> tuple[dict[int, float], float]:
    created: dict[int, float] = {}

    def one(i: int) -> None:
        create(i)
        created[i] = time.monotonic()

    started = time.monotonic()
    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(one, range(count)))
    return created, started


def _direct_jobs_baseline(namespace: str) -> dict[str, float]:
    """Creating the Jobs ourselves: the floor under anything the operator can reach."""
    batch = client.BatchV1Api()
    _, started = _create_all(lambda i: batch.create_namespaced_job(namespace, direct_job(f"direct-{i}")), TASKS)
    elapsed = time.monotonic() - started
    return {"jobs_per_second": round(TASKS / elapsed, 1), "seconds": round(elapsed, 2)}


def run() -> dict[str, Any]:
    with control_plane() as cp:
        os.environ["KUBECONFIG"] = str(cp.kubeconfig)
        config.load_kube_config(config_file=str(cp.kubeconfig))
        kube.install_crds()
        kube.ensure_runtime_class("gvisor")
        baseline = _direct_jobs_baseline(kube.create_namespace())

        namespace = kube.create_namespace()
        env = {
            **cp.env(),
            "MCPEXEC_LIVENESS_ENDPOINT": f"http://127.0.0.1:{free_port()}/healthz",
            "MCPEXEC_METRICS_PORT": "0",
            "MCPEXEC_LOG_LEVEL": "WARNING",
        }
        operator = subprocess.Popen(
            [sys.executable, "-m", "controller"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(3)  # let it log in and start its watches
            seen: dict[str, float] = {}
            done = threading.Event()
            threading.Thread(target=_watch_jobs, args=(namespace, TASKS, seen, done), daemon=True).start()
            time.sleep(0.5)
            created, started = _create_all(lambda i: kube.create_task(namespace, agenttask(f"bench-{i}")), TASKS)
            if not done.wait(300):
                raise RuntimeError(f"only {len(seen)} of {TASKS} jobs appeared")
            elapsed = max(seen.values()) - started
            latencies = [seen[f"mcpexec-bench-{i}"] - created[i] for i in range(TASKS)]
            rss = _peak_rss_mib(operator.pid)
        finally:
            operator.terminate()
            operator.wait(timeout=30)
    tasks_per_second = TASKS / elapsed
    return {
        "tasks": TASKS,
        "creation_to_job_ms": {
            "p50": round(_percentile(latencies, 50) * 1000, 1),
            "p99": round(_percentile(latencies, 99) * 1000, 1),
            "mean": round(statistics.fmean(latencies) * 1000, 1),
        },
        "tasks_per_second": round(tasks_per_second, 1),
        "operator_peak_rss_mib": round(rss, 1),
        "baseline_direct_job_creation": baseline,
        "ratio_operator_vs_direct_throughput": round(tasks_per_second / baseline["jobs_per_second"], 3),
    }
